package servertest_test

import (
	"fmt"
	"testing"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/loadgen"
	"github.com/protobench/protobench/internal/loadgen/driver/drivertest"
	_ "github.com/protobench/protobench/internal/loadgen/loadcmd" // every driver
	"github.com/protobench/protobench/internal/servertest"
)

const encodedMetric = "protobench_server_encoded_messages_total{"

// TestCompressionIsTheSetting drives every target with our generator under each compression
// it can run and checks, from the server's own counter, that every reply (and, where the
// server can tell, every request) was encoded as the setting says, and that the generator
// counted as many compressed replies as it read. Under none a server compresses nothing,
// whatever the client links; under gzip both sides compress.
func TestCompressionIsTheSetting(t *testing.T) {
	const conns, conc = 2, 4
	type cell struct {
		server, scheme, method string
		args                   []string
		gzip                   bool // the target can compress (targets.Target.Gzip)
		requests               bool // the server counts requests by encoding too
	}
	var cells []cell
	for _, client := range []string{"lean", "grpc-go"} {
		for _, server := range []string{servertest.GRPC, servertest.Connect, servertest.PythonGRPC} {
			cells = append(cells, cell{server, "grpc", contract.MethodEcho, []string{"--grpc-client", client}, true, server != servertest.PythonGRPC})
		}
	}
	cells = append(cells,
		cell{servertest.GRPC, "grpc", contract.MethodEchoStream, nil, true, true},
		cell{servertest.Connect, "grpc", contract.MethodEchoStream, nil, true, true},
		// Our HTTP clients, each path: the lean HTTP/1.1 and h2c loops and the std clients
		// (one socket a worker; net/http over h2c). A GET has no body to compress.
		cell{servertest.REST, "http", contract.MethodEcho, nil, true, true},
		cell{servertest.REST, "http", contract.MethodEcho, []string{"--http-version", "2"}, true, true},
		cell{servertest.REST, "http", contract.MethodGetUser, []string{"--http-client", "std"}, true, false},
		cell{servertest.REST, "http", contract.MethodEcho, []string{"--http-version", "2", "--http-client", "std"}, true, true},
		cell{servertest.REST, "http", contract.MethodMultiply, []string{"--encoding", "protobuf"}, true, true},
		cell{servertest.Connect, "connect", contract.MethodEcho, []string{"--http-version", "2"}, true, true},
		cell{servertest.Connect, "connect", contract.MethodGetUser, nil, true, false},
		cell{servertest.NetRPC, "netrpc", contract.MethodEcho, nil, false, true},
	)
	if _, ok := loadgen.Lookup("zmq"); ok {
		cells = append(cells, cell{servertest.ZeroMQ, "zmq", contract.MethodEcho, nil, false, true})
	}
	for _, c := range cells {
		compressions := []string{"none"}
		if c.gzip {
			compressions = append(compressions, "gzip")
		}
		for _, compression := range compressions {
			t.Run(fmt.Sprintf("%s %s %s %v %s", c.server, c.scheme, c.method, c.args, compression), func(t *testing.T) {
				if c.server == servertest.PythonGRPC {
					if err := servertest.CheckPython(); err != nil {
						t.Skipf("python-grpc cannot run here: %v", err)
					}
				}
				ep := servertest.Start(t, c.server, servertest.WithKnob("PROTOBENCH_COMPRESSION", compression))
				duration := "400ms"
				if c.server == servertest.PythonGRPC {
					duration = "2s" // a Python process on a shared host can need a while for its first calls
				}
				res := drivertest.RunClean(t, true, append([]string{
					"--target", c.scheme + "://" + ep.Main, "--method", c.method, "--compression", compression,
					"--connections", fmt.Sprint(conns), "--concurrency", fmt.Sprint(conc),
					"--duration", duration, "--warmup", "200ms", "--payload-bytes", "1000",
				}, c.args...)...)
				want := "identity"
				if compression == "gzip" {
					want = "gzip"
				}
				directions := []string{"reply"}
				if c.requests {
					directions = append(directions, "request")
				}
				for _, dir := range directions {
					total, by := servertest.MetricSum(t, ep.Metrics, encodedMetric, "encoding", `direction="`+dir+`"`)
					if total == 0 || by[want] != total {
						t.Errorf("server's %s count by encoding %v, want every one %s", dir, by, want)
					}
				}
				if res.ClientCompressedReplies == nil {
					t.Fatal("the result has no client_compressed_replies")
				}
				got := *res.ClientCompressedReplies
				switch {
				case compression == "none" && got != 0:
					t.Errorf("the generator read %d compressed replies under compression none", got)
				case compression == "gzip" && c.method != contract.MethodEchoStream && (got < res.Requests-conns*conc || got > res.Requests+conns*conc):
					// Unary: one reply a request; the two counters are read a few calls apart.
					t.Errorf("the generator read %d compressed replies for %d requests under gzip", got, res.Requests)
				case compression == "gzip" && got == 0:
					t.Errorf("the generator read no compressed reply under gzip")
				}
			})
		}
	}
}

// Under none grpc-go answers even a compressed request uncompressed (it would otherwise reply
// as the request came), and the counter tells the two directions apart.
func TestGRPCNoneRepliesIdentityToGzip(t *testing.T) {
	ep := servertest.Start(t, servertest.GRPC, servertest.WithKnob("PROTOBENCH_COMPRESSION", "none"))
	res := drivertest.RunClean(t, true, "--target", "grpc://"+ep.Main, "--method", contract.MethodEcho, "--compression", "gzip",
		"--connections", "1", "--concurrency", "4", "--duration", "300ms", "--warmup", "0s", "--payload-bytes", "1000")
	_, replies := servertest.MetricSum(t, ep.Metrics, encodedMetric, "encoding", `direction="reply"`)
	_, requests := servertest.MetricSum(t, ep.Metrics, encodedMetric, "encoding", `direction="request"`)
	if replies["gzip"] != 0 || replies["identity"] == 0 || requests["identity"] != 0 || requests["gzip"] == 0 {
		t.Errorf("requests by encoding %v, replies %v; want gzip requests answered in identity", requests, replies)
	}
	if n := *res.ClientCompressedReplies; n != 0 {
		t.Errorf("the generator read %d compressed replies from a server under none", n)
	}
}

// Under none the REST server inflates nothing: a compressed body is refused with 415 and
// counted as a gzip request, and nothing is compressed back, though the client asked.
func TestRESTNoneRefusesGzipBodies(t *testing.T) {
	ep := servertest.Start(t, servertest.REST, servertest.WithKnob("PROTOBENCH_COMPRESSION", "none"))
	res := drivertest.Run(t, "--target", "http://"+ep.Main, "--method", contract.MethodEcho, "--compression", "gzip",
		"--connections", "1", "--concurrency", "2", "--duration", "300ms", "--warmup", "0s", "--payload-bytes", "1000")
	_, replies := servertest.MetricSum(t, ep.Metrics, encodedMetric, "encoding", `direction="reply"`)
	_, requests := servertest.MetricSum(t, ep.Metrics, encodedMetric, "encoding", `direction="request"`)
	if replies["gzip"] != 0 || replies["identity"] == 0 || requests["identity"] != 0 || requests["gzip"] == 0 {
		t.Errorf("requests by encoding %v, replies %v; want gzip requests answered in identity", requests, replies)
	}
	if res.Requests == 0 || res.Errors != res.Requests || res.ErrorsByCode["http:415"] != res.Errors {
		t.Errorf("%d requests, %d errors %v; want every one http:415", res.Requests, res.Errors, res.ErrorsByCode)
	}
}
