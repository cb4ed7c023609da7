package obsbench

import (
	"context"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/protobench/protobench/internal/prom"
	"github.com/protobench/protobench/internal/stats"
)

// scrapeSizes lists, per scrape job, the samples of its last scrape and how long it took.
func scrapeSizes(ctx context.Context, promURL string) []string {
	pc := prom.New(promURL)
	samples, err := pc.Query(ctx, "sum by (job) (scrape_samples_scraped)", time.Time{})
	if err != nil {
		return nil
	}
	durations, _ := pc.Query(ctx, "max by (job) (scrape_duration_seconds)", time.Time{})
	took := map[string]float64{}
	for _, d := range durations {
		took[d.Labels["job"]] = d.Value
	}
	var out []string
	for _, s := range samples {
		job := s.Labels["job"]
		out = append(out, fmt.Sprintf("%-14s %6.0f samples, %6.1f ms", job, s.Value, 1000*took[job]))
	}
	sort.Strings(out)
	return out
}

// report prints the cost of the stack in throughput and p99 with 95 % intervals and the cores its
// containers used. Each repeat's two trials run back to back, so the cost is taken pair by pair
// (the geometric mean of the per-repeat on/off ratios, with a paired t interval over repeats): this VM's throughput
// drifts by a third over minutes, and drift that moves both trials of a pair cancels in its ratio.
func report(w io.Writer, trials []trial) {
	var onRPS, offRPS, onP99, offP99 []float64
	cores := map[string][]float64{}
	on, off := map[int]trial{}, map[int]trial{}
	for _, t := range trials {
		if t.StackOn {
			on[t.Repeat] = t
			onRPS, onP99 = append(onRPS, t.RPS), append(onP99, t.P99Ms)
			total := 0.0
			for name, c := range t.Cores {
				cores[name] = append(cores[name], c)
				total += c
			}
			cores["total"] = append(cores["total"], total)
		} else {
			off[t.Repeat] = t
			offRPS, offP99 = append(offRPS, t.RPS), append(offP99, t.P99Ms)
		}
	}
	var pairOnRPS, pairOffRPS, pairOnP99, pairOffP99 []float64
	for rep, a := range on {
		if b, ok := off[rep]; ok {
			pairOnRPS, pairOffRPS = append(pairOnRPS, a.RPS), append(pairOffRPS, b.RPS)
			pairOnP99, pairOffP99 = append(pairOnP99, a.P99Ms), append(pairOffP99, b.P99Ms)
		}
	}
	pairs := len(pairOnRPS)
	rpsRatio, rpsCI := stats.PairedRatio(pairOnRPS, pairOffRPS, 0.95)
	p99Ratio, p99CI := stats.PairedRatio(pairOnP99, pairOffP99, 0.95)
	// Below 3 pairs, a t interval rests on one degree of freedom: no verdict from it.
	if pairs < minTrialsForVerdict {
		rpsCI.OK, p99CI.OK = false, false
	}
	// Throughput lost is 1 - on/off; p99 added is on/off - 1: both positive when watching costs.
	rpsCost, rpsLo, rpsHi := 100*(1-rpsRatio), 100*(1-rpsCI.Hi), 100*(1-rpsCI.Lo)
	p99Cost, p99Lo, p99Hi := 100*(p99Ratio-1), 100*(p99CI.Lo-1), 100*(p99CI.Hi-1)

	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := "interval"
	if rpsCI.OK {
		head += " (" + rpsCI.Label() + ")"
	}
	fmt.Fprintln(tw, "\tstack on (median)\tstack off (median)\tcost (paired)\t"+head+"\tverdict")
	fmt.Fprintf(tw, "throughput\t%.0f req/s\t%.0f req/s\t%+.2f %%\t%s\t%s\n", stats.Median(onRPS), stats.Median(offRPS), rpsCost, interval(rpsLo, rpsHi, rpsCI.OK), verdict(rpsCost, rpsHi, rpsCI.OK))
	fmt.Fprintf(tw, "p99 latency\t%.3f ms\t%.3f ms\t%+.2f %%\t%s\t%s\n", stats.Median(onP99), stats.Median(offP99), p99Cost, interval(p99Lo, p99Hi, p99CI.OK), verdict(p99Cost, p99Hi, p99CI.OK))
	tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "cores the stack used while on (mean over trials):")
	for _, name := range []string{"prometheus", "cadvisor", "node-exporter", "total"} {
		if len(cores[name]) > 0 {
			fmt.Fprintf(w, "  %-14s %.3f\n", name, stats.Mean(cores[name]))
		}
	}
	reportWait(w, on, off)
	fmt.Fprintf(w, "\ncost = 1 - on/off for throughput and on/off - 1 for p99: the geometric mean over %d pairs of each pair's ratio\n"+
		"(its two arms back to back: two trials, or two adjacent blocks of one run), with a paired t interval on the log ratios; budget %.0f %%.\n", pairs, Budget)
}

// reportWait prints how long the tool's threads waited for a core with the stack on and off, and
// the paired difference: the part of the tool's time the stack took on the core they share.
func reportWait(w io.Writer, on, off map[int]trial) {
	var onWait, offWait, onCores, offCores, onRun, offRun []float64
	for rep, a := range on {
		b, ok := off[rep]
		if !ok || a.Wait == nil || b.Wait == nil {
			continue
		}
		onWait, offWait = append(onWait, a.Wait.WaitMsPerS), append(offWait, b.Wait.WaitMsPerS)
		onCores, offCores = append(onCores, a.Wait.Cores), append(offCores, b.Wait.Cores)
		onRun, offRun = append(onRun, a.Wait.WaitPerRun), append(offRun, b.Wait.WaitPerRun)
	}
	if len(onWait) == 0 {
		return
	}
	d, iv := stats.PairedDifference(onWait, offWait, 0.95)
	if len(onWait) < minTrialsForVerdict {
		iv.OK = false
	}
	fmt.Fprintln(w, "\nthe tool's threads waiting for a core (run-queue delay, /proc/<tid>/schedstat; medians over pairs):")
	fmt.Fprintf(w, "  stack on   %6.2f ms/s (%.1f us a run), on a CPU %.3f cores\n", stats.Median(onWait), stats.Median(onRun), stats.Median(onCores))
	fmt.Fprintf(w, "  stack off  %6.2f ms/s (%.1f us a run), on a CPU %.3f cores\n", stats.Median(offWait), stats.Median(offRun), stats.Median(offCores))
	ci := fmt.Sprintf("n/a (needs %d+ pairs)", minTrialsForVerdict)
	if iv.OK {
		ci = fmt.Sprintf("[%+.2f, %+.2f] (%s)", iv.Lo, iv.Hi, iv.Label())
	}
	fmt.Fprintf(w, "  the stack added %+.2f ms/s %s, %.2f %% of the tool's time (paired, %d pairs)\n", d, ci, d/10, len(onWait))
}

func interval(lo, hi float64, ok bool) string {
	if !ok {
		return fmt.Sprintf("n/a (needs %d+ repeats)", minTrialsForVerdict)
	}
	return fmt.Sprintf("[%+.2f, %+.2f] %%", lo, hi)
}

// verdict compares the cost with the budget: within it only when the whole interval is.
func verdict(cost, hi float64, ok bool) string {
	switch {
	case !ok:
		return "no interval"
	case hi < Budget:
		return fmt.Sprintf("under %.0f %%", Budget)
	case cost >= Budget:
		return fmt.Sprintf("OVER %.0f %%", Budget)
	}
	return fmt.Sprintf("not shown under %.0f %% (interval reaches it)", Budget)
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}
