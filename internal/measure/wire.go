package measure

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/protobench/protobench/internal/prom"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/targets"
)

// measureNetwork reads the bytes a service's containers received and sent over [start, end]
// at their network interfaces (cAdvisor's network set), from the raw samples around the window
// like the CPU. Loopback is left out: only what crossed to the tool counts. ok is false when
// cAdvisor reported no network series for the service.
func measureNetwork(ctx context.Context, p *prom.Client, project, runID, service string, start, end time.Time) (rx, tx float64, ok bool, err error) {
	sel := fmt.Sprintf(`{container_label_com_docker_compose_project=%q,container_label_com_docker_compose_service=%q,interface!="lo"`, project, service)
	if runID != "" {
		sel += fmt.Sprintf(`,container_label_protobench_run_id=%q`, runID)
	}
	sel += "}"
	rx, okRx, err := p.Increase(ctx, "container_network_receive_bytes_total"+sel, start, end)
	if err != nil {
		return 0, 0, false, err
	}
	tx, okTx, err := p.Increase(ctx, "container_network_transmit_bytes_total"+sel, start, end)
	if err != nil {
		return 0, 0, false, err
	}
	return rx, tx, okRx && okTx, nil
}

// addWire records what was on the wire: the server's bytes per request from cAdvisor (any
// target, ours or custom), and what the two sides spoke, from the step and the server's TLS
// state.
func (s *Measurer) addWire(ctx context.Context, rec *record.Record, r scenario.Run, service string, start, end time.Time) {
	w := wireOf(*rec, r)
	rx, tx, ok, err := s.Meter.Network(ctx, service, start, end)
	switch {
	case err != nil:
		s.Log("warning: %s: the server's network bytes: %v", r.ID, err)
	case !ok:
		s.Log("warning: %s: cAdvisor reported no network series for %s (is its network metric set enabled?)", r.ID, service)
	case rec.Requests > 0:
		w.RxBytesPerRequest = math.Round(rx/float64(rec.Requests)*10) / 10
		w.TxBytesPerRequest = math.Round(tx/float64(rec.Requests)*10) / 10
	}
	rec.Wire = w
}

// wireOf is what the step put on the wire, as the record and the server's TLS state say.
func wireOf(rec record.Record, r scenario.Run) *record.Wire {
	w := &record.Wire{Encoding: rec.Encoding, Compression: rec.CompressionOf()}
	proto := r.Target
	if t, ok := targets.Lookup(r.Target); ok {
		proto = t.Protocol
	} else if r.Custom != nil {
		proto = r.Custom.Protocol
	}
	switch {
	case rec.TLS != nil && rec.TLS.ALPN != "":
		w.Protocol = rec.TLS.ALPN + " (ALPN)"
	case rec.TLS != nil:
		w.Protocol = proto + " over TLS"
	case rec.HTTPVersion == "2" || (rec.HTTPVersion == "" && (proto == targets.GRPC || proto == targets.Connect)):
		w.Protocol = "h2c"
	case rec.HTTPVersion != "":
		w.Protocol = "HTTP/" + rec.HTTPVersion
	default:
		w.Protocol = proto
	}
	if w.Encoding == "" && (proto == targets.GRPC || proto == targets.Connect) {
		w.Encoding = "protobuf"
	}
	if rec.TLS != nil {
		w.TLSVersion = rec.TLS.Version
		if w.TLSVersion == "" {
			w.TLSVersion = "TLS (version unread)"
		}
	}
	if rec.Requests <= 0 {
		return w
	}
	switch {
	case rec.TLS != nil && rec.TLS.HandshakesPerSec > 0 && rec.DurationS > 0:
		w.RequestsPerConnection = round1(float64(rec.Requests) / (rec.TLS.HandshakesPerSec * rec.DurationS))
		w.ConnectionsFrom = "the server's TLS handshakes in the window"
	case rec.RequestsPerConnection > 0:
		w.RequestsPerConnection = float64(rec.RequestsPerConnection)
		w.ConnectionsFrom = "the step's churn: each connection replaced after that many"
	case rec.Connections > 0:
		w.RequestsPerConnection = round1(float64(rec.Requests) / float64(rec.Connections))
		w.ConnectionsFrom = "the tool's connections, opened before the window and kept"
	}
	return w
}

func round1(v float64) float64 { return math.Round(10*v) / 10 }
