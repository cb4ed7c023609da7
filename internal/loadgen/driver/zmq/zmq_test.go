package zmqdriver_test

import (
	"testing"

	"github.com/protobench/protobench/internal/loadgen"
	"github.com/protobench/protobench/internal/loadgen/driver/drivertest"
	_ "github.com/protobench/protobench/internal/loadgen/driver/zmq"
	"github.com/protobench/protobench/internal/servertest"
)

func TestPatternsAgainstRealServer(t *testing.T) {
	ep := servertest.Start(t, servertest.ZeroMQ)
	tests := []struct {
		name  string
		args  []string
		check func(t *testing.T, r *loadgen.Result)
	}{
		{name: "dealer GetUser", args: []string{"--zmq-pattern", "dealer", "--method", "GetUser"}},
		{name: "dealer Echo", args: []string{"--zmq-pattern", "dealer", "--method", "Echo", "--payload-bytes", "1000"}},
		{name: "dealer Echo long frames", args: []string{"--method", "Echo", "--payload-bytes", "300000"}},
		{name: "dealer Multiply", args: []string{"--method", "Multiply"}},
		{name: "dealer Divide", args: []string{"--method", "Divide"}},
		{name: "dealer through libzmq", args: []string{"--zmq-client", "libzmq", "--method", "GetUser"}},
		{name: "dealer open model", args: []string{"--rate", "300", "--method", "GetUser"}},
		{name: "req open model", args: []string{"--zmq-pattern", "req", "--rate", "300"}},
		{name: "req lockstep", args: []string{"--zmq-pattern", "req", "--method", "GetUser"}},
		{
			name: "push counted at the sink",
			args: []string{"--zmq-pattern", "push", "--payload-bytes", "256", "--zmq-pull-addr", ep.Pull, "--zmq-metrics-url", "http://" + ep.Metrics + "/metrics"},
			check: func(t *testing.T, r *loadgen.Result) {
				if r.ClientSent == 0 || r.ServerCountWarning != "" {
					t.Errorf("client sent %d, warning %q: want the sink count to be read", r.ClientSent, r.ServerCountWarning)
				}
			},
		},
		{
			name: "sub fan-out",
			args: []string{"--zmq-pattern", "sub", "--zmq-pub-addr", ep.Pub},
			check: func(t *testing.T, r *loadgen.Result) {
				if r.MessagesReceived == 0 {
					t.Error("subscribers received nothing")
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// 1.5 s, not less: with an image build beside the tests, a 500 ms window completed
			// no request at all (Echo of 1000 B once, of 300 kB once, in 9 runs), which a
			// slow machine explains and a driver bug would not need.
			args := append([]string{"--target", "zmq://" + ep.Main, "--connections", "2", "--concurrency", "8", "--duration", "1500ms", "--warmup", "200ms"}, tc.args...)
			res := drivertest.RunClean(t, false, args...)
			if tc.check != nil {
				tc.check(t, res)
			}
		})
	}
}
