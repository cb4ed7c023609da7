package genbench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// memory runs protobench alone against the HTTP server for the requested number of requests and
// samples its resident set once a second.
func (b *bench) memory(ctx context.Context) error {
	srv, err := b.startServer(ctx, "http")
	if err != nil {
		return err
	}
	defer srv.stop()
	// Calibrate: how long do the requests take at full speed?
	cal, err := b.runGenerator(ctx, "http", ours, srv, 3*time.Second, "calibrate", nil)
	if err != nil {
		return err
	}
	if cal.ThroughputRPS <= 0 {
		return errors.New("calibration run completed no request")
	}
	d := time.Duration(float64(b.o.memoryRequests)/cal.ThroughputRPS*1.1*float64(time.Second)).Round(time.Second) + time.Second
	fmt.Fprintf(b.stdout, "memory: protobench load against the HTTP server at ~%.0f rps for %s (≥ %d requests), RSS sampled every second\n", cal.ThroughputRPS, d, b.o.memoryRequests)

	type sample struct {
		at  time.Duration
		rss int64
	}
	var (
		samples []sample
		wg      sync.WaitGroup
	)
	stop := make(chan struct{})
	start := func(pid int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			began := time.Now()
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					if rss, err := rssBytes(pid); err == nil {
						samples = append(samples, sample{time.Since(began), rss})
					}
				}
			}
		}()
	}
	rec, err := b.runGenerator(ctx, "http", ours, srv, d, "memory", start)
	close(stop)
	wg.Wait()
	if err != nil {
		return fmt.Errorf("memory run: %w", err)
	}
	if len(samples) < 4 {
		return errors.New("too few RSS samples")
	}
	tw := tabwriter.NewWriter(b.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "elapsed\tRSS MiB\t")
	for _, q := range []float64{0.05, 0.25, 0.5, 0.75, 1} {
		s := samples[min(len(samples)-1, int(q*float64(len(samples))))]
		fmt.Fprintf(tw, "%s\t%.1f\t\n", s.at.Round(time.Second), float64(s.rss)/(1<<20))
	}
	tw.Flush()
	var peak int64
	for _, s := range samples {
		peak = max(peak, s.rss)
	}
	early := samples[len(samples)/10].rss
	last := samples[len(samples)-1].rss
	growth := 100 * float64(last-early) / float64(early)
	fmt.Fprintf(b.stdout, "requests %d; RSS %.1f MiB after 10%% of the run, %.1f MiB at the end (%+.1f %%), peak %.1f MiB: %s\n",
		rec.Requests, float64(early)/(1<<20), float64(last)/(1<<20), growth, float64(peak)/(1<<20), verdict(growth < 10 && rec.Requests >= b.o.memoryRequests))
	return nil
}

// rssBytes is a process's resident set from /proc/<pid>/status.
func rssBytes(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			fields := strings.Fields(rest)
			if len(fields) >= 1 {
				kb, err := strconv.ParseInt(fields[0], 10, 64)
				return kb << 10, err
			}
		}
	}
	return 0, errors.New("no VmRSS")
}
