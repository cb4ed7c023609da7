package loadcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/loadgen"
	"github.com/protobench/protobench/internal/record"
)

// TestTimeseriesShowsAStall runs `load --timeseries` in the open model against a server that
// stalls for a second in the middle of the window, and reads the file back as the report does.
func TestTimeseriesShowsAStall(t *testing.T) {
	var stalling atomic.Bool
	addr := stallingServer(t, &stalling)
	dir := t.TempDir()
	out, tsFile := filepath.Join(dir, "run.json"), filepath.Join(dir, "run.timeseries.json")
	const warmup, stallAt = time.Second, 2300 * time.Millisecond // stallAt counts from the window's start
	go func() {
		time.Sleep(warmup + stallAt)
		stalling.Store(true)
		time.Sleep(time.Second)
		stalling.Store(false)
	}()
	const inflightMax = 8 // connections × concurrency
	const rate = 300
	var stdout, stderr bytes.Buffer
	code := Command(context.Background(), []string{
		"--target", "http://" + addr, "--rate", strconv.Itoa(rate), "--duration", "5s", "--warmup", warmup.String(),
		"--connections", "1", "--concurrency", "8", "--out", out, "--timeseries", tsFile,
	}, &stdout, &stderr)
	if code != loadgen.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var res loadgen.Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(tsFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ts, err := record.DecodeTimeseries(f)
	if err != nil {
		t.Fatal(err)
	}
	if ts.Target != res.Target || ts.Model != "open" || ts.StartUnix != res.StartUnix || ts.EndUnix != res.EndUnix {
		t.Errorf("timeseries header %s/%s %v–%v, want the result's %s/open %v–%v", ts.Target, ts.Model, ts.StartUnix, ts.EndUnix, res.Target, res.StartUnix, res.EndUnix)
	}

	var warm, measured []record.TimeseriesPoint
	for i, p := range ts.Points {
		if i > 0 && p.TS <= ts.Points[i-1].TS {
			t.Errorf("point %d at %v s after %v s: want time order", i, p.TS, ts.Points[i-1].TS)
		}
		if p.Warmup {
			if len(measured) > 0 {
				t.Errorf("warm-up point %+v after a measured one", p)
			}
			warm = append(warm, p)
			continue
		}
		if p.ServiceTimeMs == nil {
			t.Fatalf("point %+v: the open model has service time too", p)
		}
		measured = append(measured, p)
	}
	if len(warm) == 0 {
		t.Errorf("no warm-up point in %d points", len(ts.Points))
	}
	if n := len(measured); n < 4 || n > 6 {
		t.Fatalf("%d measured points over a 5 s window: %+v", n, measured)
	}
	// Points count by completion time and the result by intended time, so they may differ by
	// what was in flight at the window's start, and by what completed between the window's start
	// and the warm-up's last tick, which a loaded machine can make tens of milliseconds late
	// (that point's end, t_s, is then above 0).
	var sum int64
	for _, p := range measured {
		sum += p.Requests
	}
	late := 0.0
	if len(warm) > 0 {
		late = max(0, warm[len(warm)-1].TS)
	}
	slack := int64(inflightMax + math.Ceil(rate*late))
	t.Logf("points hold %d requests, the result %d; the warm-up's last tick came %.3f s into the window", sum, res.Requests, late)
	if d := sum - res.Requests; d < -slack || d > slack {
		t.Errorf("points hold %d requests, the result %d: more apart than the %d in flight and the %d due in the %.3f s the warm-up's last tick was late", sum, res.Requests, inflightMax, slack-inflightMax, late)
	}

	var stalled *record.TimeseriesPoint
	for i, p := range measured {
		if p.TS <= stallAt.Seconds() && p.LatencyMs.P99 >= 500 {
			t.Errorf("point %+v ends before the stall began but has its latency", p)
		}
		if stalled == nil && p.LatencyMs.Max >= 900 {
			stalled = &measured[i]
		}
	}
	if stalled == nil {
		t.Fatalf("no point shows the 1 s stall: %+v", measured)
	}
	// Corrected latency counts the queueing behind the stall, service time does not.
	if stalled.LatencyMs.P99 < 500 || stalled.ServiceTimeMs.P99 > stalled.LatencyMs.P99 {
		t.Errorf("stalled point %+v service %+v: want corrected p99 above 500 ms and at least the service p99", *stalled, *stalled.ServiceTimeMs)
	}
	t.Logf("stalled point: %+v service %+v", *stalled, *stalled.ServiceTimeMs)
}
