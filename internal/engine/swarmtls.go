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

// shareCertificates makes each file of a TLS run's certificate folder a swarm config (removed
// with the project's other objects), so that servers and tools on any node read them at
// targets.TLSMount as under compose. A config, as Prometheus' configuration is, not a secret:
// the key is a throw-away made for this results folder.
func (s *Swarm) shareCertificates(ctx context.Context) error {
	if s.tlsDir == "" || len(s.tlsConfigs) > 0 {
		return nil
	}
	for _, f := range []string{tlscert.CAFile, tlscert.CertFile, tlscert.KeyFile} {
		b, err := os.ReadFile(filepath.Join(s.tlsDir, f))
		if err != nil {
			return fmt.Errorf("TLS certificates: %w", err)
		}
		name, err := s.sw.CreateConfig(ctx, "tls-"+f, b)
		if err != nil {
			return fmt.Errorf("TLS certificates: %w", err)
		}
		s.tlsConfigs = append(s.tlsConfigs, swarm.ConfigMount{Config: name, Target: targets.TLSMount + "/" + f})
	}
	return nil
}
