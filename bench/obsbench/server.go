package obsbench

import (
	"context"
	"path/filepath"
	"strconv"
	"time"

	"github.com/protobench/protobench/bench/internal/hostproc"
)

// server is the gRPC reference server, built from ./servers/grpc and run natively, pinned to its
// core with GOMAXPROCS=1, on 127.0.0.1.
type server struct {
	proc          *hostproc.Process
	addr, metrics string
}

func startServer(ctx context.Context, root string, o options) (*server, error) {
	bin := filepath.Join(o.outDir, "protobench-grpc-server")
	if err := hostproc.Build(ctx, root, "./servers/grpc", bin); err != nil {
		return nil, err
	}
	addrs, err := hostproc.FreeAddrs(2)
	if err != nil {
		return nil, err
	}
	s := &server{addr: addrs[0], metrics: addrs[1]}
	s.proc, err = hostproc.Start(ctx, hostproc.Server{
		Core: o.serverCore, Env: []string{"GOMAXPROCS=1"}, Program: bin, Args: []string{"--listen", s.addr, "--metrics-listen", s.metrics},
		Log: filepath.Join(o.outDir, "server.log"), Health: "http://" + s.metrics + "/healthz", Timeout: 20 * time.Second,
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (s *server) stop() { s.proc.Stop() }

// toolLimit bounds one tool run of d measured seconds: its warm-up, start and exit, with room.
func toolLimit(o options, d time.Duration) time.Duration { return d + o.warmup + 2*time.Minute }

// itoa is strconv.Itoa, for the many flags built from counts.
func itoa(i int) string { return strconv.Itoa(i) }
