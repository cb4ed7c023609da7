package tool

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestSplit(t *testing.T) {
	base := Invocation{Target: "grpc", Address: "grpc:50051", Scheme: "grpc", Method: "GetUser", Model: "closed",
		Connections: 10, Concurrency: 4, PayloadBytes: 64, Warmup: 2 * time.Second, Duration: 10 * time.Second,
		RawDir: "/raw", RawPrefix: "r1", Labels: map[string]string{"scenario": "s", "step": "getuser"}}
	type shape struct {
		conns, conc int
		rate        float64
	}
	cases := []struct {
		name   string
		change func(*Invocation)
		n      int
		want   []shape
	}{
		{"connections divide", nil, 2, []shape{{5, 4, 0}, {5, 4, 0}}},
		{"connection remainder to the first", nil, 3, []shape{{4, 4, 0}, {3, 4, 0}, {3, 4, 0}}},
		{"one channel's streams: one channel per client, half the streams",
			func(i *Invocation) { i.Connections, i.Concurrency = 1, 100 }, 2, []shape{{1, 50, 0}, {1, 50, 0}}},
		{"fewer connections than clients: one each, in flight divided",
			func(i *Invocation) { i.Connections, i.Concurrency = 3, 10 }, 4, []shape{{1, 8, 0}, {1, 8, 0}, {1, 7, 0}, {1, 7, 0}}},
		{"odd streams", func(i *Invocation) { i.Connections, i.Concurrency = 1, 5 }, 2, []shape{{1, 3, 0}, {1, 2, 0}}},
		{"open: rate and connections", func(i *Invocation) { i.Model, i.RatePerSec, i.Connections, i.Concurrency = "open", 1001, 64, 1 },
			2, []shape{{32, 1, 501}, {32, 1, 500}}},
		{"open: fractional rate evenly", func(i *Invocation) { i.Model, i.RatePerSec, i.Connections, i.Concurrency = "open", 2500.5, 4, 1 },
			2, []shape{{2, 1, 1250.25}, {2, 1, 1250.25}}},
		{"mix with enough connections", func(i *Invocation) { i.Method = "Echo:50,GetUser:50" }, 2, []shape{{5, 4, 0}, {5, 4, 0}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			inv := base
			if c.change != nil {
				c.change(&inv)
			}
			parts := Split(inv, c.n)
			if len(parts) != c.n {
				t.Fatalf("Split gave %d parts, want %d (CheckSplit: %v)", len(parts), c.n, CheckSplit(inv, c.n))
			}
			inFlight, rate := 0, 0.0
			for k, p := range parts {
				got := shape{p.Connections, p.Concurrency, p.RatePerSec}
				if inv.Model != "open" {
					got.rate = 0
				}
				if got != c.want[k] {
					t.Errorf("part %d: %+v, want %+v", k+1, got, c.want[k])
				}
				inFlight += p.Connections * p.Concurrency
				rate += p.RatePerSec
				if want := "r1.part" + string(rune('1'+k)); p.RawPrefix != want {
					t.Errorf("part %d: RawPrefix %q, want %q", k+1, p.RawPrefix, want)
				}
				if p.Labels[PartLabel] != string(rune('1'+k)) || p.Labels["scenario"] != "s" {
					t.Errorf("part %d: labels %v", k+1, p.Labels)
				}
				// Everything else is the step's.
				q := p
				q.Connections, q.Concurrency, q.RatePerSec, q.RawPrefix, q.Labels = inv.Connections, inv.Concurrency, inv.RatePerSec, inv.RawPrefix, inv.Labels
				if !reflect.DeepEqual(q, inv) {
					t.Errorf("part %d changed more than its share: %+v", k+1, p)
				}
			}
			if inFlight != inv.Connections*inv.Concurrency {
				t.Errorf("parts hold %d in flight, the step %d", inFlight, inv.Connections*inv.Concurrency)
			}
			if inv.Model == "open" && rate != inv.RatePerSec {
				t.Errorf("parts' rates add up to %v, the step's is %v", rate, inv.RatePerSec)
			}
		})
	}
	if inv := base; inv.Labels["part"] != "" {
		t.Error("Split changed the caller's labels")
	}
}

func TestSplitUnchanged(t *testing.T) {
	inv := Invocation{Target: "grpc", Model: "closed", Connections: 1, Concurrency: 1, RawPrefix: "r1"}
	for _, n := range []int{-1, 0, 1} {
		if got := Split(inv, n); len(got) != 1 || !reflect.DeepEqual(got[0], inv) {
			t.Errorf("Split(inv, %d) = %+v, want the invocation unchanged", n, got)
		}
		if err := CheckSplit(inv, n); err != nil {
			t.Errorf("CheckSplit(inv, %d) = %v", n, err)
		}
	}
}

func TestSplitRefuses(t *testing.T) {
	cases := []struct {
		name string
		inv  Invocation
		n    int
		want string
	}{
		{"rate below one per client", Invocation{Model: "open", RatePerSec: 1.5, Connections: 4, Concurrency: 1}, 2, "rate of 1.5/s"},
		{"one request in flight", Invocation{Model: "closed", Connections: 1, Concurrency: 1}, 2, "1 request(s) in flight"},
		{"open with one in flight", Invocation{Model: "open", RatePerSec: 100, Connections: 1, Concurrency: 1}, 2, "in flight"},
		{"no connections", Invocation{Model: "closed", Connections: 0, Concurrency: 4}, 2, "at least 1"},
		{"zmq push", Invocation{Scheme: "zmq", Model: "closed", Pattern: "push", Connections: 4, Concurrency: 1}, 2, "ZeroMQ push step"},
		{"mix wider than a part", Invocation{Model: "closed", Method: "Echo:1,GetUser:1,Multiply:1", Connections: 4, Concurrency: 1}, 2, "3 methods"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := CheckSplit(c.inv, c.n)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("CheckSplit = %v, want an error containing %q", err, c.want)
			}
			if parts := Split(c.inv, c.n); parts != nil {
				t.Errorf("Split = %+v, want nil for a step it cannot split", parts)
			}
		})
	}
}
