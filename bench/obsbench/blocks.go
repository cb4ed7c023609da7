package obsbench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/protobench/protobench/bench/internal/hostproc"
)

// The block design: one generator run, the stack switched on and off every --block, each on block
// paired with the off block beside it. The trial design restarts the generator for every trial,
// and on this VM two 6 s trials back to back differed by 9-10 % (standard deviation of the pair's
// ratio) whether or not the stack ran, which hid a 3 % effect behind a ±4 % interval after 40
// pairs. Adjacent seconds of one run share the connections, the heap and the VM's moment.

// blockSwitch is one change of the stack's state: it was asked at Begin and done at End.
type blockSwitch struct {
	On    bool    `json:"stack_on"`
	Begin float64 `json:"begin_unix"`
	End   float64 `json:"end_unix"`
	// CPU is each stack container's CPU time (ns) when the switch was done.
	CPU map[string]int64 `json:"stack_cpu_ns"`
}

// seriesPoint is one second of the generator's run, as its result lists it.
type seriesPoint struct {
	TS       float64 `json:"t_s"`
	Requests int64   `json:"requests"`
	Errors   int64   `json:"errors"`
	P99Ms    float64 `json:"p99_ms"`
}

// blockOn is whether block k has the stack on: pairs alternate on-off and off-on (ABBA), so a
// steady drift over the run favours neither arm.
func blockOn(k int) bool {
	pair, second := k/2, k%2 == 1
	return (pair%2 == 0) != second
}

// blockTrials turns a run's per-second series into one trial per block. A second counts for a
// block when it lies wholly after the block's switch was done plus settle, and before the next
// switch began; seconds around a switch are left out. Throughput is the block's requests over its
// counted seconds, p99 the mean of its seconds' p99. Stack cores come from the CPU read at the
// block's two switches. start is the unix time of the series' origin (the measured window's
// start); the last switch only ends the last block. The tool's run-queue wait is taken from the
// schedstat samples over the same stretch.
func blockTrials(start float64, series []seriesPoint, switches []blockSwitch, settle time.Duration, sched []schedSample) []trial {
	var trials []trial
	for k := 0; k+1 < len(switches); k++ {
		from, to := switches[k].End+settle.Seconds(), switches[k+1].Begin
		var reqs, errs int64
		var secs, p99 float64
		n := 0
		prev := 0.0
		for _, p := range series {
			a, b := start+prev, start+p.TS
			prev = p.TS
			if a < from || b > to || b <= a {
				continue
			}
			reqs, errs, secs, p99 = reqs+p.Requests, errs+p.Errors, secs+(b-a), p99+p.P99Ms
			n++
		}
		if n == 0 {
			continue
		}
		t := trial{Repeat: k / 2, StackOn: switches[k].On, RPS: float64(reqs) / secs, P99Ms: p99 / float64(n), Requests: reqs, Errors: errs, Seconds: secs}
		if w, ok := sampleDelta(sched, from, to); ok {
			t.Wait = &w
		}
		if t.StackOn {
			t.Cores = map[string]float64{}
			span := switches[k+1].Begin - switches[k].End
			for name, ns := range switches[k+1].CPU {
				if before, ok := switches[k].CPU[name]; ok && span > 0 {
					t.Cores[name] = float64(ns-before) / 1e9 / span
				}
			}
		}
		trials = append(trials, t)
	}
	return trials
}

// runBlocks runs the block design: the generator for 2 × repeats blocks plus a block of slack at
// each end, and the stack switched at every block's start once the measured window has begun.
func runBlocks(ctx context.Context, o options, st *stack, target string, stdout io.Writer) ([]trial, error) {
	metrics := st.loadMetrics
	blocks := 2 * o.repeats
	lo := o
	lo.duration = time.Duration(blocks+2) * o.block
	out := filepath.Join(o.outDir, "blocks.json")
	run := loadRun(lo, target, metrics, out, st.client.ProjectName()+"-loadgen-blocks")
	if err := st.note(ctx, run, "the generator", o.outDir, stdout); err != nil {
		return nil, err
	}
	if err := st.set(ctx, blockOn(0)); err != nil {
		return nil, err
	}
	watch := watchSched(run.name, schedPeriod)
	done := make(chan loadResult, 1)
	ended := make(chan struct{})
	go func() {
		t, err := runLoad(ctx, st, run, out)
		done <- loadResult{t, err}
		close(ended)
	}()
	// The generator serves /metrics from its start; its window opens a warm-up later.
	if err := hostproc.WaitHTTP(ctx, "http://"+metrics+"/metrics", 60*time.Second, ended); err != nil {
		if len(done) > 0 {
			err = fmt.Errorf("%w: %v", err, (<-done).err)
		}
		watch.stop()
		return nil, fmt.Errorf("the generator: %w", err)
	}
	next := time.Now().Add(o.warmup + o.block)
	var switches []blockSwitch
	for k := 0; k <= blocks; k++ {
		select {
		case r := <-done:
			return nil, fmt.Errorf("the generator ended at block %d of %d: %v", k, blocks, r.err)
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Until(next)):
		}
		on := blockOn(k)
		if k == blocks {
			on = true // the last switch only ends the last block; the stack is left running
		}
		sw := blockSwitch{On: on, Begin: unix(time.Now())}
		if err := st.set(ctx, on); err != nil {
			return nil, err
		}
		sw.End, sw.CPU = unix(time.Now()), st.cpu()
		switches = append(switches, sw)
		if k < blocks && k%2 == 1 {
			fmt.Fprintf(stdout, "  pair %d of %d done\n", k/2+1, o.repeats)
		}
		next = next.Add(o.block)
	}
	r := <-done
	sched := watch.stop()
	if r.err != nil {
		return nil, r.err
	}
	b, _ := json.MarshalIndent(switches, "", "  ")
	if err := os.WriteFile(filepath.Join(o.outDir, "switches.json"), append(b, '\n'), 0o644); err != nil {
		return nil, err
	}
	if err := writeSched(o.outDir, "sched.json", sched); err != nil {
		return nil, err
	}
	trials := blockTrials(r.t.startUnix, r.t.series, switches, o.settle, sched)
	if len(trials) < blocks {
		return trials, fmt.Errorf("only %d of %d blocks had a whole second clear of the switches (block %s, settle %s): see %s and switches.json", len(trials), blocks, o.block, o.settle, out)
	}
	return trials, nil
}

// loadResult is what a generator run in the background ended with.
type loadResult struct {
	t   trial
	err error
}

func unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
