package wrk

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/tool"
)

// A golden case is one real wrk run: testdata/<name>/ holds the command (cmd), wrk's stdout and
// stderr, captured by TestCaptureGolden.
type goldenCase struct {
	name string
	// server selects the address the capture ran against: "rest" (a normal server), "rest-small"
	// (a server started with --max-payload-bytes 512, so 1 KiB Echo requests get 413) or
	// "unreachable".
	server string
	inv    tool.Invocation
}

var goldenCases = []goldenCase{
	{"getuser-closed", "rest", tool.Invocation{
		Target: "rest", Scheme: "http", Method: "GetUser", Model: "closed",
		Connections: 4, Concurrency: 1, Duration: 2 * time.Second,
	}},
	{"echo-1024-closed", "rest", tool.Invocation{
		Target: "rest", Scheme: "http", Method: "Echo", Model: "closed",
		Connections: 2, Concurrency: 1, PayloadBytes: 1024, Duration: 2 * time.Second,
	}},
	{"multiply-closed", "rest", tool.Invocation{
		Target: "rest", Scheme: "http", Method: "Multiply", Model: "closed",
		Connections: 1, Concurrency: 2, Duration: 2 * time.Second,
	}},
	{"echo-too-large-closed", "rest-small", tool.Invocation{
		Target: "rest", Scheme: "http", Method: "Echo", Model: "closed",
		Connections: 1, Concurrency: 1, PayloadBytes: 1024, Duration: 2 * time.Second,
	}},
	{"unreachable-closed", "unreachable", tool.Invocation{
		Target: "rest", Scheme: "http", Method: "GetUser", Model: "closed",
		Connections: 1, Concurrency: 1, Duration: time.Second,
	}},
}

// loadRaw reads a golden case's raw output.
func loadRaw(t testing.TB, name string) tool.Raw {
	t.Helper()
	dir := filepath.Join("testdata", name)
	stdout, err := os.ReadFile(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := os.ReadFile(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	return tool.Raw{Stdout: stdout, Stderr: stderr}
}

// TestCaptureGolden regenerates testdata/ by running the real wrk with Args against real servers.
// It only runs when asked:
//
//	PROTOBENCH_CAPTURE=1 WRK=$(which wrk) REST_ADDR=127.0.0.1:8080 REST_SMALL_ADDR=127.0.0.1:8081 \
//	  go test -count=1 -run TestCaptureGolden ./internal/tool/wrk
//
// where REST_ADDR is `go run ./servers/rest --listen ...` and REST_SMALL_ADDR the same server with
// --max-payload-bytes 512. The image's script path is replaced by this package's report.lua.
func TestCaptureGolden(t *testing.T) {
	if os.Getenv("PROTOBENCH_CAPTURE") == "" {
		t.Skip("set PROTOBENCH_CAPTURE=1 (and WRK, REST_ADDR, REST_SMALL_ADDR) to re-capture golden files")
	}
	script, err := filepath.Abs("report.lua")
	if err != nil {
		t.Fatal(err)
	}
	addrs := map[string]string{
		"rest":        os.Getenv("REST_ADDR"),
		"rest-small":  os.Getenv("REST_SMALL_ADDR"),
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
				if a == ScriptPath {
					args[i] = script
				}
			}
			cmd := exec.Command(os.Getenv("WRK"), args...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			runErr := cmd.Run()
			dir := filepath.Join("testdata", c.name)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			cmdLine := "wrk " + shellQuote(args) + "\n# exit: " + exitStatus(runErr) + "\n"
			for file, content := range map[string][]byte{"cmd": []byte(cmdLine), "stdout": stdout.Bytes(), "stderr": stderr.Bytes()} {
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
