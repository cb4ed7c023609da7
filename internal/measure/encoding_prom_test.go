package measure

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/loadgen/driver/drivertest"
	_ "github.com/protobench/protobench/internal/loadgen/driver/grpc"
	"github.com/protobench/protobench/internal/prom"
	"github.com/protobench/protobench/internal/prom/promtest"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/servertest"
)

// TestEncodingsFromARealPrometheus reads the encodings a record gets the way a run reads them:
// real servers (connect-go under gzip, grpc-go under none) loaded by our generator, scraped by
// a real Prometheus with the servers job's target label, over the generator's own window. A
// record whose step asked for other than what the server did is flagged.
func TestEncodingsFromARealPrometheus(t *testing.T) {
	servers := map[string]struct {
		ep          servertest.Endpoints
		compression string
	}{
		"connect": {servertest.Start(t, servertest.Connect, servertest.WithKnob("PROTOBENCH_COMPRESSION", "gzip")), "gzip"},
		"grpc":    {servertest.Start(t, servertest.GRPC), "none"},
	}
	config := "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: servers\n    static_configs:\n"
	for name, s := range servers {
		config += fmt.Sprintf("      - targets: [%q]\n        labels: {target: %s}\n", s.ep.Metrics, name)
	}
	pc := prom.New(promtest.Start(t, "", config, promtest.StackFlags...))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, name := range []string{"connect", "grpc"} {
		s := servers[name]
		// Prometheus scrapes the server before its window, as the runner's WaitSeen waits for.
		up := fmt.Sprintf(`count(up{job="servers",target=%q} == 1)`, name)
		if err := pc.WaitUntil(ctx, up, 200*time.Millisecond, func(v float64) bool { return v > 0 }); err != nil {
			t.Fatalf("%s: Prometheus did not scrape it: %v", name, err)
		}
		res := drivertest.RunClean(t, true, "--target", "grpc://"+s.ep.Main, "--method", contract.MethodGetUser,
			"--compression", s.compression, "--connections", "1", "--concurrency", "8", "--duration", "3s", "--warmup", "500ms")
		start, end := time.Unix(0, int64(res.StartUnix*1e9)), time.Unix(0, int64(res.EndUnix*1e9))
		// Wait for a scrape after the window's end, as the runner waits for cAdvisor's.
		expr := fmt.Sprintf(`max(timestamp(%s{job="servers",target=%q}))`, encodedMetric, name)
		if err := pc.WaitUntil(ctx, expr, 200*time.Millisecond, func(v float64) bool { return v >= res.EndUnix+1 }); err != nil {
			t.Fatalf("%s: Prometheus did not scrape past the window: %v", name, err)
		}
		m := &Measurer{Meter: NewProm(pc, "", ""), Log: t.Logf}
		want := map[string]string{"gzip": "gzip", "none": "identity"}[s.compression]
		for _, step := range []string{"gzip", "none"} {
			rec := record.Record{Flags: []string{}}
			m.addEncodings(ctx, &rec, scenario.Run{ID: name + "-" + step, Compression: step}, name, start, end)
			if rec.RequestEncoding != want || rec.ReplyEncoding != want {
				t.Errorf("%s under %s: request_encoding %q reply_encoding %q, want %q", name, s.compression, rec.RequestEncoding, rec.ReplyEncoding, want)
			}
			if mismatch := slices.Contains(rec.Flags, record.FlagEncodingMismatch); mismatch != (step != s.compression) {
				t.Errorf("%s served %s, step asked %s: flags %v", name, s.compression, step, rec.Flags)
			}
		}
	}
}
