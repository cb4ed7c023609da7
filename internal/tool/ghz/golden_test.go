package ghz

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/tool"
)

// A golden case is one real ghz run: testdata/<name>/ holds the command (cmd), ghz's stdout
// (stdout.gz: ghz's per-call details make it large) and stderr, captured by TestCaptureGolden.
type goldenCase struct {
	name string
	// server selects the address the capture ran against: "grpc" (a normal server), "grpc-small"
	// (a server started with --max-payload-bytes 512, so 1 KiB Echo calls fail) or "unreachable".
	server string
	inv    tool.Invocation
}

var goldenCases = []goldenCase{
	{"getuser-closed", "grpc", tool.Invocation{
		Target: "grpc", Scheme: "grpc", Method: "GetUser", Model: "closed",
		Connections: 2, Concurrency: 2, Duration: 2 * time.Second,
	}},
	{"getuser-open", "grpc", tool.Invocation{
		Target: "grpc", Scheme: "grpc", Method: "GetUser", Model: "open",
		Connections: 2, Concurrency: 2, RatePerSec: 500, Duration: 2 * time.Second,
	}},
	{"echo-1024-closed", "grpc", tool.Invocation{
		Target: "grpc", Scheme: "grpc", Method: "Echo", Model: "closed",
		Connections: 1, Concurrency: 2, PayloadBytes: 1024, Duration: 2 * time.Second,
	}},
	{"echo-too-large-open", "grpc-small", tool.Invocation{
		Target: "grpc", Scheme: "grpc", Method: "Echo", Model: "open",
		Connections: 1, Concurrency: 2, RatePerSec: 200, PayloadBytes: 1024, Duration: 2 * time.Second,
	}},
	{"unreachable-open", "unreachable", tool.Invocation{
		Target: "grpc", Scheme: "grpc", Method: "GetUser", Model: "open",
		Connections: 1, Concurrency: 1, RatePerSec: 50, Duration: time.Second,
	}},
}

// loadRaw reads a golden case's raw output.
func loadRaw(t testing.TB, name string) tool.Raw {
	t.Helper()
	dir := filepath.Join("testdata", name)
	gz, err := os.ReadFile(filepath.Join(dir, "stdout.gz"))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := os.ReadFile(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	return tool.Raw{Stdout: stdout, Stderr: stderr}
}

// TestCaptureGolden regenerates testdata/ by running the real ghz with Args against real servers.
// It only runs when asked:
//
//	PROTOBENCH_CAPTURE=1 GHZ=$(which ghz) GRPC_ADDR=127.0.0.1:50151 GRPC_SMALL_ADDR=127.0.0.1:50152 \
//	  go test -count=1 -run TestCaptureGolden ./internal/tool/ghz
//
// where GRPC_ADDR is `go run ./servers/grpc --listen ...` and GRPC_SMALL_ADDR the same server with
// --max-payload-bytes 512. The image's proto path is replaced by the repository's proto/.
func TestCaptureGolden(t *testing.T) {
	if os.Getenv("PROTOBENCH_CAPTURE") == "" {
		t.Skip("set PROTOBENCH_CAPTURE=1 (and GHZ, GRPC_ADDR, GRPC_SMALL_ADDR) to re-capture golden files")
	}
	protoDir, err := filepath.Abs("../../../proto")
	if err != nil {
		t.Fatal(err)
	}
	addrs := map[string]string{
		"grpc":        os.Getenv("GRPC_ADDR"),
		"grpc-small":  os.Getenv("GRPC_SMALL_ADDR"),
		"unreachable": "127.0.0.1:1",
	}
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			inv := c.inv
			inv.Address = addrs[c.server]
			if inv.Address == "" {
				t.Fatalf("no address for server %q", c.server)
			}
			args := Adapter{}.Args(inv)
			for i, a := range args {
				if a == ProtoDir {
					args[i] = protoDir
				}
			}
			cmd := exec.Command(os.Getenv("GHZ"), args...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			runErr := cmd.Run()
			dir := filepath.Join("testdata", c.name)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			var gz bytes.Buffer
			zw := gzip.NewWriter(&gz)
			zw.Write(stdout.Bytes())
			zw.Close()
			cmdLine := "ghz " + shellQuote(args) + "\n# exit: " + exitStatus(runErr) + "\n"
			for file, content := range map[string][]byte{"cmd": []byte(cmdLine), "stdout.gz": gz.Bytes(), "stderr": stderr.Bytes()} {
				if err := os.WriteFile(filepath.Join(dir, file), content, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func exitStatus(err error) string {
	if err == nil {
		return "0"
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return strconv.Itoa(ee.ExitCode())
	}
	return err.Error()
}

// shellQuote renders args so the cmd file can be pasted into a shell.
func shellQuote(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		if a != "" && !strings.ContainsAny(a, " \t\n\"'\\$`{}*?[]()<>|&;#~") {
			quoted[i] = a
			continue
		}
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(quoted, " ")
}
