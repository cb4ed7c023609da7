package loadgen

import (
	"strings"
	"testing"
	"time"
)

// The estimate in docs/tls.md's terms: 5,000 new connections a second against one server
// address, each port held 60 s after a FIN close, run out of the default 28,232 ports after
// about 5.6 s; the same run holds no port when it closes with RST, or 5,000 when tcp_tw_reuse
// frees ports after a second.
func TestPortPlanEstimate(t *testing.T) {
	const ports = 28232
	fin := PortPlan{Ports: ports, Open: 100, ConnRate: 5000, Hold: TimeWait, Run: 60 * time.Second}
	if got := fin.Needed(); got != 300100 {
		t.Errorf("needed %d ports, want 100 open + 5,000/s × 60 s = 300,100", got)
	}
	if got, want := fin.Exhausted(), time.Duration(float64(ports-100)/5000*float64(time.Second)); got != want {
		t.Errorf("exhausted after %v, want %v", got, want)
	}
	err := fin.Check()
	if err == nil || !strings.Contains(err.Error(), "need 300100 ephemeral ports where there are 28232") || !strings.Contains(err.Error(), "after 5.6s") {
		t.Errorf("check: %v, want a refusal naming the ports and when they run out", err)
	}

	rst := fin
	rst.Hold = 0
	if rst.Needed() != 100 || rst.Exhausted() != 0 || rst.Check() != nil {
		t.Errorf("RST: needed %d, exhausted %v, check %v; want the open connections only, never out", rst.Needed(), rst.Exhausted(), rst.Check())
	}
	reuse := fin
	reuse.Hold = timeWaitHold(2, true)
	if reuse.Needed() != 5100 || reuse.Check() != nil {
		t.Errorf("tcp_tw_reuse on loopback: needed %d, check %v; want 5,100 and no refusal", reuse.Needed(), reuse.Check())
	}
	// A short run holds a port only as long as it runs: 3 s at 5,000/s is 15,000.
	short := fin
	short.Run = 3 * time.Second
	if short.Needed() != 15100 || short.Check() != nil {
		t.Errorf("3 s run: needed %d, check %v; want 15,100 and no refusal", short.Needed(), short.Check())
	}
	// More connections at once than ports: refused whatever the close.
	many := PortPlan{Ports: ports, Open: ports + 1}
	if err := many.Check(); err == nil || !strings.Contains(err.Error(), "28233 connections at once") {
		t.Errorf("check: %v, want a refusal of more open connections than ports", err)
	}
	// An unknown rate (the closed model on a library path) is not estimated beyond the open ones.
	unknown := PortPlan{Ports: ports, Open: 100, Hold: TimeWait, Run: time.Minute}
	if unknown.Exhausted() != 0 || unknown.Check() != nil {
		t.Errorf("unknown rate: exhausted %v, check %v", unknown.Exhausted(), unknown.Check())
	}
}

func TestTimeWaitHold(t *testing.T) {
	for _, c := range []struct {
		reuse    int
		loopback bool
		want     time.Duration
	}{{0, true, TimeWait}, {1, false, time.Second}, {2, true, time.Second}, {2, false, TimeWait}} {
		if got := timeWaitHold(c.reuse, c.loopback); got != c.want {
			t.Errorf("tcp_tw_reuse %d, loopback %v: hold %v, want %v", c.reuse, c.loopback, got, c.want)
		}
	}
	if !isLoopback("127.0.0.1:80") || !isLoopback("localhost:1") || !isLoopback("[::1]:2") || isLoopback("10.0.0.2:80") || isLoopback("grpc:50051") {
		t.Error("isLoopback misjudged an address")
	}
}

// A churning run's plan: the open model on the library path takes its connection rate from the
// schedule's peak over N, and a run that would run out is refused before it dials.
func TestChurnRunRefusedBeforeItRunsOutOfPorts(t *testing.T) {
	steps := Steps(Constant{PerSec: 1000, For: time.Second}, Constant{PerSec: 400000, For: 2 * time.Second})
	cfg := &Config{Target: Target{Scheme: "churntest", Address: "10.1.2.3:1", URL: "churntest://10.1.2.3:1"},
		Connections: 1, Concurrency: 1, Pacer: steps, Duration: steps.Length(), ConnectTimeout: time.Second,
		RequestsPerConnection: 2, Options: map[string]string{}}
	if p := portPlan(cfg, false); p.ConnRate != 200000 || p.Hold != TimeWait || p.Open != 1 {
		t.Fatalf("plan %+v, want 200,000 connections a second (400,000/s over 2), held 60 s", p)
	}
	if p := portPlan(cfg, true); p.Hold != 0 || p.Check() != nil {
		t.Errorf("on the event loops: plan %+v, check %v; want no hold", p, p.Check())
	}
	_, err := Run(t.Context(), cfg, RunOptions{})
	if _, ok := err.(*UsageError); !ok || !strings.Contains(err.Error(), "ephemeral ports") {
		t.Fatalf("err %v, want a usage error about ephemeral ports", err)
	}
}
