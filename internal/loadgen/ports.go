package loadgen

import (
	"fmt"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// Ephemeral ports under churn. A TCP connection's client end is a port of the local range
// (net.ipv4.ip_local_port_range, 32768–60999 by default: 28,232 ports per server address), and a
// client that closes first keeps that port in TIME_WAIT for 60 s (the kernel's fixed
// TCP_TIMEWAIT_LEN; tcp_fin_timeout is another state's). At 5,000 new connections a second that
// is 300,000 ports, and a run ran out after about 5 s (docs/tls.md).
//
// The ways out, and the one chosen:
//   - SO_LINGER 0 (chosen, on the event loops): the client closes with RST, which frees its port
//     at once, so no rate and no run length can run out. It works on any network and in any
//     container, needs no privilege and no sysctl, and costs the server no more than a FIN
//     (it skips the last ACK). What it changes: the server sees a reset, not an orderly close,
//     which servers handle as a closed connection either way.
//   - several source addresses (127.0.0.x): a range of ports per address, but only on loopback;
//     on the compose network a container has one address.
//   - a wider port range: at most 64,511 ports, about 2.3 times the default, so it only delays
//     the end; and it is a sysctl of the network namespace, which needs the container's set-up.
//   - IP_BIND_ADDRESS_NO_PORT: helps only together with several source addresses.
//   - tcp_tw_reuse: the kernel reuses a TIME_WAIT port for a new connection after 1 s when it is
//     1 (or 2, the default, on loopback only); the estimate below counts it where it applies.
//
// The library paths (the open model, and forced library clients) close as their libraries do,
// with a FIN, so before such a run starts the estimate below refuses one that would run out.

// TimeWait is how long a port closed first by the client is held (Linux's TCP_TIMEWAIT_LEN).
const TimeWait = 60 * time.Second

// twReuseHold is how long a TIME_WAIT port is held when tcp_tw_reuse lets a new connection take
// it: a second since its last segment.
const twReuseHold = time.Second

// PortPlan is what the estimate needs to know about a churning run.
type PortPlan struct {
	Ports    int           // ephemeral ports per server address
	Open     int           // connections open at once
	ConnRate float64       // new connections a second; 0 when not known before the run
	Hold     time.Duration // how long a closed connection keeps its port (0: reset)
	Run      time.Duration // warm-up and measured window
}

// Needed is the most ports the run holds at once: the open connections and, for a hold of H,
// the connections closed in the last H.
func (p PortPlan) Needed() int {
	held := p.ConnRate * math.Min(p.Hold.Seconds(), p.Run.Seconds())
	return p.Open + int(math.Ceil(held))
}

// Exhausted is how long the run lasts before it has no port left, or 0 when it never runs out.
func (p PortPlan) Exhausted() time.Duration {
	free := p.Ports - p.Open
	if free < 0 {
		return time.Nanosecond // at the start
	}
	if p.Needed() <= p.Ports || p.ConnRate <= 0 {
		return 0
	}
	return time.Duration(float64(free) / p.ConnRate * float64(time.Second))
}

// Check refuses a plan that runs out of ports, naming the figures and the way out.
func (p PortPlan) Check() error {
	if p.Open > p.Ports {
		return fmt.Errorf("--requests-per-connection: %d connections at once need more ephemeral ports than the %d this host has per server address", p.Open, p.Ports)
	}
	if at := p.Exhausted(); at > 0 {
		return fmt.Errorf("--requests-per-connection: %.0f new connections a second, each holding its port for %s after it closes, need %d ephemeral ports where there are %d: the run would run out after %.1fs of its %s (lower --rate, raise --requests-per-connection, or use the closed model, whose event loops close with RST and hold no port)",
			p.ConnRate, p.Hold, p.Needed(), p.Ports, at.Seconds(), p.Run)
	}
	return nil
}

// portPlan is a churning run's plan on this host: event loops reset their connections; the
// library paths hold ports in TIME_WAIT, unless tcp_tw_reuse applies.
func portPlan(cfg *Config, loops bool) PortPlan {
	p := PortPlan{Ports: localPorts(), Open: churnWorkers(cfg), Run: cfg.Warmup + cfg.Duration}
	if loops {
		return p
	}
	p.Hold = timeWaitHold(twReuse(), isLoopback(cfg.Target.Address))
	if cfg.Open() {
		p.ConnRate = peakRate(cfg.Pacer) / float64(cfg.RequestsPerConnection)
	}
	return p
}

// timeWaitHold is how long a closed client port stays taken, by tcp_tw_reuse's setting.
func timeWaitHold(twReuse int, loopback bool) time.Duration {
	if twReuse == 1 || (twReuse == 2 && loopback) {
		return twReuseHold
	}
	return TimeWait
}

// peakRate is the highest rate of a schedule, sampled finely.
func peakRate(p Pacer) float64 {
	peak, n := 0.0, 1000
	for i := 0; i <= n; i++ {
		peak = math.Max(peak, p.Rate(p.Length()*time.Duration(i)/time.Duration(n)))
	}
	return peak
}

// localPorts is the size of this network namespace's ephemeral port range.
func localPorts() int {
	lo, hi := 32768, 60999
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if l, err1 := strconv.Atoi(f[0]); err1 == nil {
				if h, err2 := strconv.Atoi(f[1]); err2 == nil && h >= l {
					lo, hi = l, h
				}
			}
		}
	}
	return hi - lo + 1
}

// twReuse is net.ipv4.tcp_tw_reuse (2, loopback only, is the kernel's default).
func twReuse() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_tw_reuse")
	if err != nil {
		return 0
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return v
}

// isLoopback reports whether address names this host's loopback.
func isLoopback(address string) bool {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
