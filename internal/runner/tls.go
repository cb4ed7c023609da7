package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/protobench/protobench/internal/prom"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/targets"
	"github.com/protobench/protobench/internal/tlscert"
)

// TLSInfo is run.json's record of the run's certificates: made for this results folder, never
// committed (the folder's tls/.gitignore ignores them), and named by the CA's fingerprint.
type TLSInfo struct {
	CASHA256 string `json:"ca_sha256"`
	KeyType  string `json:"key_type"`
	Dir      string `json:"dir"` // relative to the results folder
}

// tlsDirName is the certificates' folder inside a results folder.
const tlsDirName = "tls"

// KeyTypeEnv picks the certificates' key type (tlscert.KeyTypes); ECDSA P-256 when unset.
const KeyTypeEnv = "PROTOBENCH_TLS_KEY_TYPE"

// prepareTLS makes the run's CA and server certificate when a run of the plan is TLS (or keeps
// those of the folder a resume continues), and returns the compose environment that mounts them
// read-only into servers and tools.
func prepareTLS(dir string, plan *scenario.Plan) (*TLSInfo, map[string]string, error) {
	any := false
	for _, r := range plan.Runs {
		any = any || r.TLS
	}
	if !any {
		return nil, nil, nil
	}
	certDir, err := filepath.Abs(filepath.Join(dir, tlsDirName))
	if err != nil {
		return nil, nil, err
	}
	info := &TLSInfo{Dir: tlsDirName}
	if fp, err := tlscert.CAFingerprintOf(filepath.Join(certDir, tlscert.CAFile)); err == nil {
		info.CASHA256 = fp
		info.KeyType = "as made by the first session"
	} else {
		kt, err := tlscert.ParseKeyType(os.Getenv(KeyTypeEnv))
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", KeyTypeEnv, err)
		}
		set, err := tlscert.Generate(certDir, tlscert.Options{KeyType: kt, Hosts: targets.Names()})
		if err != nil {
			return nil, nil, err
		}
		info.CASHA256, info.KeyType = set.CAFingerprint, set.KeyType
	}
	return info, map[string]string{
		"PROTOBENCH_TLS_DIR":     certDir,
		"PROTOBENCH_TLS_CA_FILE": targets.TLSMount + "/" + tlscert.CAFile,
	}, nil
}

// tlsMeter is a Meter that can read a TLS server's handshake counters.
type tlsMeter interface {
	TLS(ctx context.Context, target string, start, end time.Time) (*record.TLSState, error)
}

// TLS reads the server's handshake counters from Prometheus (the servers job scrapes
// target:metrics-port): the negotiated state with the most handshakes, the handshake rate over
// the window, and the sampled CPU per handshake.
func (m promMeter) TLS(ctx context.Context, target string, start, end time.Time) (*record.TLSState, error) {
	t, _ := targets.Lookup(target)
	inst := fmt.Sprintf(`instance=%q`, fmt.Sprintf("%s:%d", t.Name, t.MetricsPort))
	sum := func(expr string, at time.Time) (float64, error) {
		s, err := m.c.Query(ctx, expr, at)
		if err != nil || len(s) == 0 {
			return 0, err
		}
		return s[0].Value, nil
	}
	at := end.Add(prom.CounterMargin)
	states, err := m.c.Query(ctx, fmt.Sprintf(`sum by (version, cipher, curve, alpn) (protobench_tls_handshakes_total{%s})`, inst), at)
	if err != nil {
		return nil, err
	}
	if len(states) == 0 {
		return nil, fmt.Errorf("%s exposed no protobench_tls_handshakes_total (its TLS library does not count handshakes)", target)
	}
	sort.Slice(states, func(i, j int) bool { return states[i].Value > states[j].Value })
	st := &record.TLSState{Version: states[0].Labels["version"], Cipher: states[0].Labels["cipher"],
		Curve: states[0].Labels["curve"], ALPN: states[0].Labels["alpn"]}
	for _, s := range states {
		st.Handshakes += s.Value
	}
	st.Resumed, _ = sum(fmt.Sprintf(`sum(protobench_tls_handshakes_total{%s,resumed="true"})`, inst), at)
	st.Failures, _ = sum(fmt.Sprintf(`sum(protobench_tls_handshake_failures_total{%s})`, inst), at)
	before, _ := sum(fmt.Sprintf(`sum(protobench_tls_handshakes_total{%s})`, inst), start)
	if w := end.Sub(start).Seconds(); w > 0 {
		st.HandshakesPerSec = (st.Handshakes - before) / w
	}
	for _, res := range []struct {
		label string
		dst   *float64
	}{{"false", &st.CPUUsFull}, {"true", &st.CPUUsResumed}} {
		cpu, _ := sum(fmt.Sprintf(`sum(protobench_tls_handshake_cpu_seconds_total{%s,resumed=%q})`, inst, res.label), at)
		n, _ := sum(fmt.Sprintf(`sum(protobench_tls_handshake_cpu_samples_total{%s,resumed=%q})`, inst, res.label), at)
		if n > 0 {
			*res.dst = cpu / n * 1e6
		}
	}
	return st, nil
}

// addTLS records a TLS run's handshake state from its server.
func (s *stepRunner) addTLS(ctx context.Context, rec *record.Record, r scenario.Run, start, end time.Time) {
	if !r.TLS {
		return
	}
	tm, ok := s.meter.(tlsMeter)
	if !ok {
		return
	}
	st, err := tm.TLS(ctx, r.Target, start, end)
	if err != nil {
		s.log("warning: %s: TLS state: %v", r.ID, err)
		rec.TLS = &record.TLSState{Source: err.Error()}
		return
	}
	rec.TLS = st
}
