package tlscert

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Check says why the set in dir cannot serve until until: a file missing, a certificate that
// is not yet or no longer valid then, a server certificate the CA did not sign, or a key that
// is not the certificate's. nil means the set is complete and good until then.
func Check(dir string, until time.Time) error {
	ca, err := readCert(filepath.Join(dir, CAFile))
	if err != nil {
		return err
	}
	leaf, err := readCert(filepath.Join(dir, CertFile))
	if err != nil {
		return err
	}
	if _, err := tls.LoadX509KeyPair(filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile)); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, KeyFile), err)
	}
	now := time.Now()
	for _, c := range []struct {
		name string
		cert *x509.Certificate
	}{{CAFile, ca}, {CertFile, leaf}} {
		switch {
		case now.Before(c.cert.NotBefore):
			return fmt.Errorf("%s is not valid before %s", c.name, c.cert.NotBefore.UTC().Format(time.RFC3339))
		case until.After(c.cert.NotAfter):
			return fmt.Errorf("%s expires %s, before %s", c.name, c.cert.NotAfter.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339))
		}
	}
	if err := leaf.CheckSignatureFrom(ca); err != nil {
		return fmt.Errorf("%s is not signed by %s: %w", CertFile, CAFile, err)
	}
	return nil
}

func readCert(path string) (*x509.Certificate, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%s: no PEM CERTIFICATE block", path)
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}
