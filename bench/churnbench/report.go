package churnbench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// TargetVsWitness is the target: at N = 1 ours opens connections at least as fast as
// openssl s_time and wrk with Connection: close, on the same server.
const TargetVsWitness = 1.0

// report prints every run, then the checks: ours over the witness of each row, and whether ours
// was client-bound.
func report(w io.Writer, ms []measurement) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "row\tgenerator\tconnections/s\tconnections\tserver CPU %\tgenerator CPU %\tserver µs/conn\tgenerator µs/conn\thandshakes full\tresumed\tkey exchange\terrors\t")
	get := map[string]measurement{}
	for _, m := range ms {
		get[m.row+"/"+m.tool] = m
		if m.err != nil {
			fmt.Fprintf(tw, "%s\t%s\tfailed\t\t\t\t\t\t\t\t\t\t\n", m.row, m.tool)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%d\t%.0f\t%.0f\t%.1f\t%.1f\t%.0f\t%.0f\t%s\t%d\t\n", m.row, m.tool, m.connRate, m.connections,
			m.serverCPU, m.clientCPU, m.serverUS, m.clientUS, m.full, m.resumed, m.curves, m.errors)
	}
	tw.Flush()
	reportHandshakeCost(w, get)
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "check\tmeasured\ttarget\tresult")
	for _, row := range Rows {
		o, okO := get[row+"/"+ours]
		if !okO || o.err != nil {
			continue
		}
		for _, g := range rowGenerators[row][1:] {
			x, ok := get[row+"/"+g]
			if !ok || x.err != nil || x.connRate == 0 {
				continue
			}
			r := o.connRate / x.connRate
			fmt.Fprintf(tw, "protobench / %s, %s, connections/s\t%.2f×\t≥ %.1f×\t%s\n", g, row, r, TargetVsWitness, verdict(r >= TargetVsWitness))
			if o.curves != x.curves {
				fmt.Fprintf(tw, "same key exchange, %s\t%s / %s\tequal\t%s\n", row, o.curves, x.curves, verdict(false))
			}
		}
		fmt.Fprintf(tw, "protobench not client-bound, %s\tgenerator %.0f %%, server %.0f %%\tnot (≥ 90 %% and above the server)\t%s\n",
			row, o.clientCPU, o.serverCPU, verdict(!o.clientBound()))
	}
	tw.Flush()
}

// reportHandshakeCost gives each side's CPU per full and per resumed TLS handshake, as the
// difference between a TLS row's CPU per connection and the cleartext row's, ours driving both:
// the connection, the request and the close cost the same in each, the handshake is the rest.
func reportHandshakeCost(w io.Writer, get map[string]measurement) {
	clear, ok := get["http/"+ours]
	if !ok || clear.err != nil {
		return
	}
	for _, row := range []string{"tls-full", "tls-resumed"} {
		m, ok := get[row+"/"+ours]
		if !ok || m.err != nil {
			continue
		}
		kind := strings.TrimPrefix(row, "tls-")
		fmt.Fprintf(w, "CPU per %s handshake (%s minus http, per connection, protobench): server %.1f µs, generator %.1f µs\n",
			kind, row, m.serverUS-clear.serverUS, m.clientUS-clear.clientUS)
	}
}

func verdict(ok bool) string {
	if ok {
		return "ok"
	}
	return "MISSED"
}

// handshakes is the server's TLS handshake counter: full and resumed, and by key exchange.
type handshakes struct {
	full, resumed float64
	byCurve       map[string]float64
}

func (h handshakes) minus(o handshakes) handshakes {
	d := handshakes{full: h.full - o.full, resumed: h.resumed - o.resumed, byCurve: map[string]float64{}}
	for c, n := range h.byCurve {
		if n-o.byCurve[c] > 0 {
			d.byCurve[c] = n - o.byCurve[c]
		}
	}
	return d
}

func (h handshakes) curveNames() []string {
	var out []string
	for c := range h.byCurve {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

var handshakeLine = regexp.MustCompile(`^protobench_tls_handshakes_total\{(.*)\} ([0-9.e+]+)$`)
var labelPair = regexp.MustCompile(`(\w+)="([^"]*)"`)

// parseHandshakes reads the counter from a /metrics page in Prometheus' text format.
func parseHandshakes(r io.Reader) (handshakes, error) {
	h := handshakes{byCurve: map[string]float64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		m := handshakeLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			return h, fmt.Errorf("%q: %v", sc.Text(), err)
		}
		labels := map[string]string{}
		for _, p := range labelPair.FindAllStringSubmatch(m[1], -1) {
			labels[p[1]] = p[2]
		}
		if labels["resumed"] == "true" {
			h.resumed += v
		} else {
			h.full += v
		}
		if v > 0 {
			h.byCurve[labels["curve"]] += v
		}
	}
	return h, sc.Err()
}

// readHandshakes scrapes the server's counter.
func readHandshakes(ctx context.Context, metricsAddr string) (handshakes, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+metricsAddr+"/metrics", nil)
	if err != nil {
		return handshakes{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return handshakes{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return handshakes{}, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return parseHandshakes(resp.Body)
}
