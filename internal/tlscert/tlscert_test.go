package tlscert

import (
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func load(t *testing.T, dir string) (*x509.CertPool, tls.Certificate) {
	t.Helper()
	caPEM, err := os.ReadFile(filepath.Join(dir, CAFile))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("ca.pem holds no certificate")
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	return pool, pair
}

func TestGenerateVerifies(t *testing.T) {
	for _, kt := range KeyTypes {
		t.Run(kt, func(t *testing.T) {
			dir := t.TempDir()
			set, err := Generate(dir, Options{KeyType: kt, Hosts: []string{"grpc", "rest"}})
			if err != nil {
				t.Fatal(err)
			}
			pool, pair := load(t, dir)
			leaf, err := x509.ParseCertificate(pair.Certificate[0])
			if err != nil {
				t.Fatal(err)
			}
			for _, host := range []string{"grpc", "rest", "localhost", "127.0.0.1"} {
				if _, err := leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: pool}); err != nil {
					t.Errorf("%s: %v", host, err)
				}
			}
			if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "elsewhere", Roots: pool}); err == nil {
				t.Error("the certificate verified for a host it does not name")
			}
			switch kt {
			case KeyECDSA:
				if _, ok := leaf.PublicKey.(*ecdsa.PublicKey); !ok {
					t.Errorf("key %T, want ECDSA", leaf.PublicKey)
				}
			case KeyRSA:
				if k, ok := leaf.PublicKey.(*rsa.PublicKey); !ok || k.N.BitLen() != 2048 {
					t.Errorf("key %T, want RSA 2048", leaf.PublicKey)
				}
			}
			fp, err := CAFingerprintOf(filepath.Join(dir, CAFile))
			if err != nil || fp != set.CAFingerprint || len(fp) != 64 {
				t.Errorf("fingerprint %q (%v), Generate said %q", fp, err, set.CAFingerprint)
			}
			ignore, _ := os.ReadFile(filepath.Join(dir, ".gitignore"))
			if strings.TrimSpace(string(ignore)) != "*" {
				t.Errorf(".gitignore %q: the key must never be committed", ignore)
			}
		})
	}
}

func TestEachRunGetsItsOwnCA(t *testing.T) {
	a, err := Generate(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Generate(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if a.CAFingerprint == b.CAFingerprint {
		t.Error("two folders share one CA")
	}
}

func TestExpired(t *testing.T) {
	dir := t.TempDir()
	past := time.Now().Add(-48 * time.Hour)
	if _, err := Generate(dir, Options{NotBefore: past, NotAfter: past.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	pool, pair := load(t, dir)
	leaf, _ := x509.ParseCertificate(pair.Certificate[0])
	_, err := leaf.Verify(x509.VerifyOptions{DNSName: "localhost", Roots: pool})
	var inv x509.CertificateInvalidError
	if err == nil || !errorsAs(err, &inv) || inv.Reason != x509.Expired {
		t.Errorf("verify an expired certificate: %v, want x509.Expired", err)
	}
}

func TestParseKeyType(t *testing.T) {
	for in, want := range map[string]string{"": KeyECDSA, "ECDSA": KeyECDSA, "rsa": KeyRSA, "rsa-2048": KeyRSA} {
		if got, err := ParseKeyType(in); err != nil || got != want {
			t.Errorf("ParseKeyType(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseKeyType("dsa"); err == nil || !strings.Contains(err.Error(), KeyECDSA) {
		t.Errorf("ParseKeyType(dsa): %v; want an error naming the choices", err)
	}
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }

// TestKeyIsPrivate: the folder is 0700 and the key 0600 even where the folder existed with a
// wider mode and an earlier key was readable by all.
func TestKeyIsPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, KeyFile), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{dir: os.ModeDir | 0o700, filepath.Join(dir, KeyFile): 0o600, filepath.Join(dir, CAFile): 0o644} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode() != want {
			t.Errorf("%s: mode %v, want %v", path, st.Mode(), want)
		}
	}
}

// TestCheck: a complete set is good until its expiry; a missing key, an expired set, one that
// expires too soon, and a server certificate of another CA are each named.
func TestCheck(t *testing.T) {
	now := time.Now()
	good := t.TempDir()
	if _, err := Generate(good, Options{NotAfter: now.Add(48 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := Check(good, now.Add(24*time.Hour)); err != nil {
		t.Errorf("a good set: %v", err)
	}
	if err := Check(good, now.Add(72*time.Hour)); err == nil || !strings.Contains(err.Error(), "expires") {
		t.Errorf("a set that expires before the run ends: %v", err)
	}
	expired := t.TempDir()
	if _, err := Generate(expired, Options{NotBefore: now.Add(-72 * time.Hour), NotAfter: now.Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := Check(expired, now); err == nil || !strings.Contains(err.Error(), "expires") {
		t.Errorf("an expired set: %v", err)
	}
	other := t.TempDir()
	if _, err := Generate(other, Options{}); err != nil {
		t.Fatal(err)
	}
	mixed := t.TempDir()
	for _, f := range []struct{ from, name string }{{other, CAFile}, {good, CertFile}, {good, KeyFile}} {
		b, _ := os.ReadFile(filepath.Join(f.from, f.name))
		os.WriteFile(filepath.Join(mixed, f.name), b, 0o600)
	}
	if err := Check(mixed, now); err == nil || !strings.Contains(err.Error(), "not signed") {
		t.Errorf("a server certificate of another CA: %v", err)
	}
	os.Remove(filepath.Join(good, KeyFile))
	if err := Check(good, now); err == nil || !strings.Contains(err.Error(), KeyFile) {
		t.Errorf("no key: %v", err)
	}
}
