// Package tlscert makes the certificates a TLS run uses: a throw-away CA and one server
// certificate it signs, created per results folder with crypto/x509 so that nothing secret is
// ever committed and every run can say (by the CA's fingerprint) which key material it used.
package tlscert

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Key types: ECDSA P-256 is the default (what most deployments serve today); RSA 2048 is the
// knob for the older, costlier handshake.
const (
	KeyECDSA = "ecdsa-p256"
	KeyRSA   = "rsa-2048"
)

// KeyTypes lists the accepted key types; the first is the default.
var KeyTypes = []string{KeyECDSA, KeyRSA}

// File names inside the certificate folder.
const (
	CAFile   = "ca.pem"
	CertFile = "server.pem"
	KeyFile  = "server-key.pem"
)

// Set is a generated CA and server certificate, as written to Dir.
type Set struct {
	Dir     string
	KeyType string
	// CAFingerprint is the SHA-256 of the CA certificate's DER bytes, in hex.
	CAFingerprint string
	NotAfter      time.Time
}

// Options say what to make. Hosts become the server certificate's DNS names or IP addresses;
// localhost and 127.0.0.1 are always added so that native runs verify too.
type Options struct {
	KeyType  string
	Hosts    []string
	NotAfter time.Time // zero: one week from now
	// NotBefore, when set, backdates the certificates (tests make expired ones with it).
	NotBefore time.Time
	// Owner, when set, gets the folder and its files: the user the servers run as, who alone
	// may read the key.
	Owner *Owner
}

// Owner is a numeric user and group.
type Owner struct{ UID, GID int }

// Generate writes a fresh CA and server certificate into dir: the folder 0700, the key 0600,
// the certificates 0644, all owned by opts.Owner when set.
func Generate(dir string, opts Options) (*Set, error) {
	if opts.KeyType == "" {
		opts.KeyType = KeyECDSA
	}
	now := time.Now()
	if opts.NotBefore.IsZero() {
		opts.NotBefore = now.Add(-time.Hour)
	}
	if opts.NotAfter.IsZero() {
		opts.NotAfter = now.Add(7 * 24 * time.Hour)
	}
	ca, caDER, caKey, err := newCA(opts)
	if err != nil {
		return nil, err
	}
	srvDER, keyDER, err := newServerCert(opts, ca, caKey)
	if err != nil {
		return nil, err
	}
	if err := writeSet(dir, opts.Owner, caDER, srvDER, keyDER); err != nil {
		return nil, err
	}
	return &Set{Dir: dir, KeyType: opts.KeyType, CAFingerprint: Fingerprint(caDER), NotAfter: opts.NotAfter}, nil
}

// newCA makes the run's self-signed CA: its certificate parsed and as DER, and its key.
func newCA(opts Options) (*x509.Certificate, []byte, crypto.Signer, error) {
	caKey, err := newKey(opts.KeyType)
	if err != nil {
		return nil, nil, nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "protobench run CA", Organization: []string{"protobench"}},
		NotBefore:             opts.NotBefore,
		NotAfter:              opts.NotAfter,
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("tlscert: CA: %w", err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	return ca, caDER, caKey, nil
}

// newServerCert makes the server certificate ca signs, for opts.Hosts and this machine's
// loopback names, and returns it and its PKCS #8 key as DER.
func newServerCert(opts Options, ca *x509.Certificate, caKey crypto.Signer) (certDER, keyDER []byte, err error) {
	srvKey, err := newKey(opts.KeyType)
	if err != nil {
		return nil, nil, err
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "protobench server"},
		NotBefore:    opts.NotBefore,
		NotAfter:     opts.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if opts.KeyType == KeyRSA {
		srvTmpl.KeyUsage |= x509.KeyUsageKeyEncipherment
	}
	for _, h := range append([]string{"localhost", "127.0.0.1", "::1"}, opts.Hosts...) {
		if ip := net.ParseIP(h); ip != nil {
			srvTmpl.IPAddresses = append(srvTmpl.IPAddresses, ip)
		} else if h != "" {
			srvTmpl.DNSNames = append(srvTmpl.DNSNames, h)
		}
	}
	certDER, err = x509.CreateCertificate(rand.Reader, srvTmpl, ca, srvKey.Public(), caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("tlscert: server certificate: %w", err)
	}
	keyDER, err = x509.MarshalPKCS8PrivateKey(srvKey)
	if err != nil {
		return nil, nil, fmt.Errorf("tlscert: server key: %w", err)
	}
	return certDER, keyDER, nil
}

// writeSet writes the PEM files into dir, which only owner (or we) may enter; the folder is
// chowned last, after its files.
func writeSet(dir string, owner *Owner, caDER, srvDER, keyDER []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("tlscert: %w", err)
	}
	// MkdirAll keeps an existing folder's mode.
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("tlscert: %w", err)
	}
	files := []struct {
		name, kind string
		der        []byte
		mode       os.FileMode
	}{
		{CAFile, "CERTIFICATE", caDER, 0o644},
		{CertFile, "CERTIFICATE", srvDER, 0o644},
		{KeyFile, "PRIVATE KEY", keyDER, 0o600},
	}
	for _, f := range files {
		b := pem.EncodeToMemory(&pem.Block{Type: f.kind, Bytes: f.der})
		if err := writeFile(filepath.Join(dir, f.name), b, f.mode, owner); err != nil {
			return err
		}
	}
	// Never committed: a results folder inside a repository gets the key ignored explicitly.
	if err := writeFile(filepath.Join(dir, ".gitignore"), []byte("*\n"), 0o644, owner); err != nil {
		return err
	}
	if owner != nil {
		if err := os.Chown(dir, owner.UID, owner.GID); err != nil {
			return fmt.Errorf("tlscert: %w", err)
		}
	}
	return nil
}

// writeFile writes a new file with mode exactly (an old file is replaced, so no earlier mode or
// owner survives), owned by owner when set.
func writeFile(path string, b []byte, mode os.FileMode, owner *Owner) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("tlscert: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("tlscert: %w", err)
	}
	if owner != nil {
		if err := f.Chown(owner.UID, owner.GID); err != nil {
			f.Close()
			return fmt.Errorf("tlscert: %w", err)
		}
	}
	if err := f.Chmod(mode); err != nil { // the umask may have narrowed it
		f.Close()
		return fmt.Errorf("tlscert: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("tlscert: %w", err)
	}
	return f.Close()
}

// Fingerprint is the SHA-256 of a certificate's DER bytes in hex.
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// CAFingerprintOf reads a CA PEM file and returns its fingerprint.
func CAFingerprintOf(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "CERTIFICATE" {
		return "", fmt.Errorf("%s: no PEM CERTIFICATE block", path)
	}
	return Fingerprint(blk.Bytes), nil
}

// ParseKeyType checks a key type name (case-insensitive; "ecdsa" and "rsa" are short forms).
func ParseKeyType(s string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "ecdsa", KeyECDSA, "p256", "p-256":
		return KeyECDSA, nil
	case "rsa", KeyRSA, "rsa2048":
		return KeyRSA, nil
	}
	return "", fmt.Errorf("unknown TLS key type %q; expected %s", s, strings.Join(KeyTypes, " or "))
}

func newKey(kind string) (crypto.Signer, error) {
	switch kind {
	case KeyECDSA:
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case KeyRSA:
		return rsa.GenerateKey(rand.Reader, 2048)
	}
	return nil, errors.New("tlscert: unknown key type " + kind)
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	return n
}
