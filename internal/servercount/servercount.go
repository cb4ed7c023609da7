// Package servercount reads a reference server's own request counter
// (protobench_server_requests_total, by result code) from its /metrics, and holds the rule that
// sets it against the load tool's count: where the tool's successes and the server's OK answers
// differ by more than the requests in flight at the edges of the window, the run is flagged
// count-mismatch.
//
// Why the runner reads /metrics itself, before and after the tool, rather than Prometheus: the
// server's traffic is all the tool's, so the counter is still when the tool starts (its
// separate warm-up container has exited) and when it has exited. A reading at those instants is
// exact. Prometheus holds samples once a second, and an increase over a window, read from them,
// is interpolated or extrapolated at its ends: at 50,000 requests a second, a sample 100 ms from
// an end is 5,000 requests off, far more than the 100 in flight the rule allows.
package servercount

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metric is the counter every reference server exports (serverkit, servers/python-grpc).
const Metric = "protobench_server_requests_total"

// Counts is the counter summed over methods, split by result code into OK and errors.
type Counts struct {
	OK, Errors int64
}

// Zero is the reading of a server that has answered nothing yet: client_golang exports no
// line of a labelled counter before its first child, so absence means zero on our servers.
var Zero = Counts{}

// Sub is c less an earlier reading.
func (c Counts) Sub(before Counts) Counts {
	return Counts{OK: c.OK - before.OK, Errors: c.Errors - before.Errors}
}

// OKCode says whether a code label is a success: a gRPC or Connect "OK" (grpc-go's code
// names; Python's server uses the same), net/rpc's and ZeroMQ's "OK", or an HTTP 2xx.
func OKCode(code string) bool {
	if code == "OK" {
		return true
	}
	return len(code) == 3 && code[0] == '2' && code[1] >= '0' && code[1] <= '9' && code[2] >= '0' && code[2] <= '9'
}

// Parse reads the counter from a /metrics body in Prometheus' text format. A body without it
// reads as Zero: only the caller knows whether the server exports it (one of ours) or not.
func Parse(r io.Reader) (Counts, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(r)
	if err != nil {
		return Counts{}, fmt.Errorf("read /metrics: %w", err)
	}
	var c Counts
	f, ok := families[Metric]
	if !ok {
		return Zero, nil
	}
	for _, m := range f.GetMetric() {
		v := int64(m.GetCounter().GetValue())
		if OKCode(label(m, "code")) {
			c.OK += v
		} else {
			c.Errors += v
		}
	}
	return c, nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// Read fetches url (a server's /metrics) and parses the counter.
func Read(ctx context.Context, url string) (Counts, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Counts{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Counts{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Counts{}, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return Parse(io.LimitReader(resp.Body, 16<<20))
}
