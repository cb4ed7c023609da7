package scenario

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Print writes the plan the way --dry-run shows it: where it runs, every run with its settings,
// and the estimated total time.
func (p *Plan) Print(w io.Writer) error {
	sc := p.Scenario
	ew := &errWriter{w: w}
	ew.printf("scenario  %s: %s\n", sc.Name, sc.Description)
	ew.printf("file      %s (sha256 %s)\n", sc.Path, shortHash(sc.Hash()))
	if sc.Source != "" {
		ew.printf("source    %s\n", sc.Source)
	}
	if sc.Published != nil && sc.Published.Method != "" {
		ew.printf("article   %s\n", sc.Published.Method)
	}
	l := p.Layout
	ew.printf("host      %d cores: server cpuset %s, client cpuset %s, observability cpuset %s%s\n",
		l.Cores, l.ServerCPUSet, l.ClientCPUSet, l.ObservabilityCPUSet, l.StackNote())
	if l.FromHost() {
		ew.printf("layout    %s\n", l.Reason)
	}
	if opts := p.describeOptions(); opts != "" {
		ew.printf("options   %s\n", opts)
	}
	for _, n := range p.Notes {
		ew.printf("note      %s\n", n)
	}
	ew.printf("\n")
	if ew.err != nil {
		return ew.err
	}

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tMETHOD\tMODEL\tCONN×CONC\tRATE/S\tPAYLOAD\tWARMUP\tMEASURE\tCOOLDOWN\tSERVER CAP\tCLIENT CAP\tSERVER ENV")
	for _, r := range p.Runs {
		method := r.Method
		if r.Pattern != "" {
			method += " (" + r.Pattern + ")"
		}
		rate := "-"
		if r.Rate > 0 {
			rate = formatFloat(r.Rate)
		} else if r.LoadPercent > 0 {
			// Resolved when the run starts, from the capacity step measured before it.
			rate = formatFloat(r.LoadPercent) + "%cap"
		}
		payload := "-"
		if r.PayloadBytes > 0 {
			payload = FormatSize(int64(r.PayloadBytes))
		}
		// TLS and churn ride in the topology's column: they say how the connections are made.
		topology := fmt.Sprintf("%d×%d", r.Connections, r.Concurrency)
		if r.TLS {
			topology += " tls"
		}
		if r.Compression == CompressionGzip {
			topology += " gzip"
		}
		if r.RequestsPerConnection > 0 {
			topology += fmt.Sprintf(" %d/conn", r.RequestsPerConnection)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s cpu %s\t%s cpu %s\t%s\n",
			r.ID, method, r.Model, topology, rate, payload,
			r.Warmup, r.Duration, r.Cooldown,
			formatFloat(r.Caps.ServerCPUs), FormatSize(r.Caps.ServerMemoryBytes),
			formatFloat(r.Caps.ClientCPUs), FormatSize(r.Caps.ClientMemoryBytes),
			envString(r.Env))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	ew.printf("\ntotal     %d runs in %d steps, estimated %s (each run adds ~%s to start and stop its server)\n",
		len(p.Runs), len(p.StepNames()), p.TotalDuration.Round(time.Second), StartOverhead)
	return ew.err
}

func (p *Plan) describeOptions() string {
	var parts []string
	o := p.Options
	if o.Quick {
		parts = append(parts, fmt.Sprintf("quick (each run at most %s with warm-up, 1 repeat)", QuickBudget))
	}
	if o.Repeat > 0 {
		parts = append(parts, fmt.Sprintf("repeat %d", o.Repeat))
	}
	if o.Only != "" {
		parts = append(parts, fmt.Sprintf("only %q", o.Only))
	}
	if len(o.Tools) > 0 {
		parts = append(parts, "tools "+strings.Join(o.Tools, ","))
	}
	return strings.Join(parts, "; ")
}

func envString(env map[string]string) string {
	if len(env) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + env[k]
	}
	return strings.Join(parts, " ")
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// PrintList writes `protobench list`: every scenario with its description and estimated time.
func PrintList(w io.Writer, entries []Entry) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tRUNS\tESTIMATE\tDESCRIPTION")
	for _, e := range entries {
		if e.Err != nil {
			first, _, _ := strings.Cut(e.Err.Error(), "\n")
			fmt.Fprintf(tw, "%s\t-\t-\tBROKEN: %s\n", e.Name, first)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", e.Name, e.Runs, e.Estimate.Round(time.Second), e.Description)
	}
	return tw.Flush()
}

// errWriter keeps the first write error so a printer can check once at the end.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}
