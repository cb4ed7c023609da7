package loadgen

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"strings"
)

// TLSOptions are the generator's --tls flags.
type TLSOptions struct {
	CAFile     string // PEM CA that signed the server's certificate
	ServerName string // the name to verify; default the target's host
	Version    string // "1.3" or "1.2": the only version offered
	Resume     bool   // keep a session cache, so reconnections resume
	ALPN       []string
}

// ClientTLS builds the client configuration: it trusts only CAFile (the run's CA, never the
// system's), offers exactly one TLS version so that a step measures the version it names, and
// shares one session cache across all connections when Resume is on.
func ClientTLS(o TLSOptions, address string) (*tls.Config, error) {
	pem, err := os.ReadFile(o.CAFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--tls-ca %s: no PEM certificate in it", o.CAFile)
	}
	name := o.ServerName
	if name == "" {
		name, _, _ = net.SplitHostPort(address)
	}
	conf := &tls.Config{RootCAs: pool, ServerName: name, NextProtos: o.ALPN}
	switch o.Version {
	case "", "1.3":
		conf.MinVersion, conf.MaxVersion = tls.VersionTLS13, tls.VersionTLS13
	case "1.2":
		conf.MinVersion, conf.MaxVersion = tls.VersionTLS12, tls.VersionTLS12
	default:
		return nil, fmt.Errorf("--tls-version %q: want 1.3 or 1.2", o.Version)
	}
	if o.Resume {
		conf.ClientSessionCache = tls.NewLRUClientSessionCache(1024)
	} else {
		conf.SessionTicketsDisabled = true
	}
	return conf, nil
}

// WithALPN is conf offering protos, or conf itself when it already does.
func WithALPN(conf *tls.Config, protos ...string) *tls.Config {
	if strings.Join(conf.NextProtos, ",") == strings.Join(protos, ",") {
		return conf
	}
	c := conf.Clone()
	c.NextProtos = protos
	return c
}

// TLSError is a failed handshake: the server's certificate was refused, or the server did not
// speak TLS. It is counted as the request's error, and names the cause.
type TLSError struct {
	Address string
	Err     error
}

func (e *TLSError) Error() string { return fmt.Sprintf("TLS handshake with %s: %v", e.Address, e.Err) }
func (e *TLSError) Unwrap() error { return e.Err }

// DialWire dials address, counts its wire bytes (TLS records included) in wire when it is not
// nil, and, when cfg has TLS, completes the handshake before returning.
func DialWire(ctx context.Context, cfg *Config, address string, wire *WireBytes) (net.Conn, error) {
	nc, err := DialTCP(ctx, address)
	if err != nil {
		return nil, err
	}
	if wire != nil {
		nc = CountingConn(nc, wire)
	}
	if cfg == nil || cfg.TLS == nil {
		return nc, nil
	}
	tc := tls.Client(nc, cfg.TLS)
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		return nil, &TLSError{Address: address, Err: err}
	}
	return tc, nil
}
