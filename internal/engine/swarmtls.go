package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/protobench/protobench/internal/swarm"
	"github.com/protobench/protobench/internal/targets"
	"github.com/protobench/protobench/internal/tlscert"
)

// swarmTLS is a TLS run's certificate folder as the swarm hands it to tasks on any node, at
// targets.TLSMount as under compose (a bind mount would find no such folder on another node).
// The CA and the server certificate are configs, which anyone with the swarm's API can print;
// the server's key is a secret, which nobody can read back, which only the nodes running a
// server receive, and which lives there in the task's memory only. Tools get the CA alone: it is
// all a client needs to check the server.
type swarmTLS struct {
	ca, cert swarm.ConfigMount
	key      swarm.SecretMount
	shared   bool
}

// server mounts the CA, certificate and key into a server's task.
func (t swarmTLS) server(spec *swarm.ServiceSpec) {
	if t.shared {
		spec.Configs = append(spec.Configs, t.ca, t.cert)
		spec.Secrets = append(spec.Secrets, t.key)
	}
}

// tool mounts the CA into a tool's task.
func (t swarmTLS) tool(spec *swarm.ServiceSpec) {
	if t.shared {
		spec.Configs = append(spec.Configs, t.ca)
	}
}

// shareCertificates stores a TLS run's certificate folder in the swarm (removed with the
// project's other objects) once per run.
func (s *Swarm) shareCertificates(ctx context.Context) error {
	if s.tlsDir == "" || s.tls.shared {
		return nil
	}
	read := func(f string) ([]byte, error) {
		b, err := os.ReadFile(filepath.Join(s.tlsDir, f))
		if err != nil {
			return nil, fmt.Errorf("TLS certificates: %w", err)
		}
		return b, nil
	}
	for _, c := range []struct {
		file  string
		mount *swarm.ConfigMount
	}{{tlscert.CAFile, &s.tls.ca}, {tlscert.CertFile, &s.tls.cert}} {
		b, err := read(c.file)
		if err != nil {
			return err
		}
		name, err := s.sw.CreateConfig(ctx, "tls-"+c.file, b)
		if err != nil {
			return fmt.Errorf("TLS certificates: %w", err)
		}
		*c.mount = swarm.ConfigMount{Config: name, Target: targets.TLSMount + "/" + c.file}
	}
	b, err := read(tlscert.KeyFile)
	if err != nil {
		return err
	}
	name, err := s.sw.CreateSecret(ctx, "tls-"+tlscert.KeyFile, b)
	if err != nil {
		return fmt.Errorf("TLS key: %w", err)
	}
	// Readable by whichever user the server's image runs as (a secret's owner must be numeric,
	// and an image names its user): the key stays inside the server's own container.
	s.tls.key = swarm.SecretMount{Secret: name, Target: targets.TLSMount + "/" + tlscert.KeyFile, Mode: 0o444}
	s.tls.shared = true
	return nil
}
