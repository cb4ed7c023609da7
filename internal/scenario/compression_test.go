package scenario

import (
	"strings"
	"testing"
)

func compressionScenario(step string) string {
	return "name: t\ndescription: d\ndefaults: {warmup: 1s, duration: 2s, repeats: 1}\nsteps:\n  - name: s\n    method: GetUser\n" + step
}

// Every refusal names the file, the line of the compression key and why.
func TestCompressionRefused(t *testing.T) {
	for _, tc := range []struct{ name, step, want string }{
		{"unknown value", "    targets: [grpc]\n    compression: brotli\n",
			`t.yaml:8: steps[0].compression: unknown compression "brotli"; expected one of none, gzip`},
		{"not a string", "    targets: [grpc]\n    compression: true\n",
			`t.yaml:8: steps[0].compression: expected a string, got boolean true`},
		{"net/rpc cannot", "    targets: [netrpc]\n    compression: gzip\n",
			"t.yaml:8: steps[0].compression: target netrpc cannot compress: net/rpc's gob codec has no compression"},
		{"zeromq cannot", "    targets: [zeromq]\n    compression: gzip\n",
			"t.yaml:8: steps[0].compression: target zeromq cannot compress: ZeroMQ frames"},
		{"wrk cannot", "    targets: [rest]\n    tools: [protobench, wrk]\n    compression: gzip\n",
			"t.yaml:9: steps[0].compression: tool wrk cannot compress HTTP requests (target rest); tools that can: protobench"},
		{"k6 cannot", "    targets: [grpc]\n    tools: [protobench, k6]\n    compression: gzip\n",
			"t.yaml:9: steps[0].compression: tool k6 cannot compress gRPC requests (target grpc); tools that can: protobench, ghz, h2load"},
		{"h2load cannot on Connect", "    targets: [connect]\n    tools: [protobench, h2load]\n    compression: gzip\n",
			"t.yaml:9: steps[0].compression: tool h2load cannot compress Connect requests (target connect); tools that can: protobench"},
		{"matrix value", "    targets: [grpc]\n    matrix:\n      compression: [none, zstd]\n",
			`t.yaml:9: steps[0].matrix.compression[1]: unknown compression "zstd"`},
		{"matrix gzip on netrpc", "    targets: [netrpc]\n    matrix:\n      compression: [none, gzip]\n",
			"t.yaml:9: steps[0].matrix.compression: target netrpc cannot compress"},
		{"listed twice", "    targets: [grpc]\n    matrix:\n      compression: [gzip, gzip]\n",
			"t.yaml:9: steps[0].matrix.compression[1]: value gzip listed twice"},
		{"step and matrix", "    targets: [grpc]\n    compression: none\n    matrix:\n      compression: [none, gzip]\n",
			"steps[0].matrix.compression: compression is set on the step and in its matrix; keep one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(compressionScenario(tc.step)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

// The python-grpc server's old gzip knob points at the setting that replaced it.
func TestGzipKnobMoved(t *testing.T) {
	_, err := Parse("t.yaml", []byte("name: t\ndescription: d\nservers:\n  python-grpc:\n    knobs: {gzip: true}\nsteps:\n  - {name: s, targets: [python-grpc], method: Echo}\n"))
	want := "t.yaml:5: servers.python-grpc.knobs.gzip: knob gzip is now the step's setting compression: gzip"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error = %v\nwant it to contain %q", err, want)
	}
}

// none is the default; a matrix runs each value as a variant of its own, on every target.
func TestCompressionPlan(t *testing.T) {
	sc, err := Parse("t.yaml", []byte(compressionScenario("    targets: [grpc, connect-grpc, python-grpc]\n    tools: [protobench, ghz]\n    matrix:\n      compression: [none, gzip]\n  - {name: plain, targets: [rest, netrpc], method: GetUser}\n  - {name: http, targets: [rest, connect], method: Echo, compression: gzip}\n")))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := sc.Plan(PlanOptions{Cores: 2})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range plan.Runs {
		got[r.Step+"/"+r.Target+"/"+r.Tool] = r.Compression
	}
	for _, target := range []string{"grpc", "connect-grpc", "python-grpc"} {
		for _, tl := range []string{"protobench", "ghz"} {
			for _, c := range []string{"none", "gzip"} {
				if k := "s-" + c + "/" + target + "/" + tl; got[k] != c {
					t.Errorf("%s: compression %q, want %q", k, got[k], c)
				}
			}
		}
	}
	// Our generator compresses HTTP bodies (Content-Encoding) for REST and the Connect protocol.
	for _, k := range []string{"http/rest/protobench", "http/connect/protobench"} {
		if got[k] != CompressionGzip {
			t.Errorf("%s: compression %q, want gzip", k, got[k])
		}
	}
	for _, k := range []string{"plain/rest/protobench", "plain/netrpc/protobench"} {
		if got[k] != CompressionNone {
			t.Errorf("%s: compression %q, want the default none", k, got[k])
		}
	}
}
