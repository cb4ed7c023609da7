package k6

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

// A golden case is one real k6 run: testdata/<name>/ holds the command (cmd), k6's stdout and
// stderr, and files/ with the files it wrote under RawDir, captured by TestCaptureGolden.
type goldenCase struct {
	name string
	// server selects the address the capture ran against: "rest"/"grpc" (normal servers),
	// "rest-small"/"grpc-small" (servers started with --max-payload-bytes 512, so 1 KiB Echo
	// requests fail) or "unreachable".
	server string
	inv    tool.Invocation
}

// goldenRawPrefix is the RawPrefix of every golden invocation.
const goldenRawPrefix = "k6"

var goldenCases = []goldenCase{
	{"http-getuser-closed", "rest", tool.Invocation{
		Target: "rest", Scheme: "http", Method: "GetUser", Model: "closed",
		Connections: 4, Concurrency: 1, Duration: 2 * time.Second,
	}},
	{"http-echo-1024-open", "rest", tool.Invocation{
		Target: "rest", Scheme: "http", Method: "Echo", Model: "open",
		Connections: 2, Concurrency: 1, RatePerSec: 300, PayloadBytes: 1024, Duration: 2 * time.Second,
	}},
	{"http-echo-too-large-closed", "rest-small", tool.Invocation{
		Target: "rest", Scheme: "http", Method: "Echo", Model: "closed",
		Connections: 1, Concurrency: 1, PayloadBytes: 1024, Duration: 2 * time.Second,
	}},
	{"grpc-getuser-closed", "grpc", tool.Invocation{
		Target: "grpc", Scheme: "grpc", Method: "GetUser", Model: "closed",
		Connections: 2, Concurrency: 1, Duration: 2 * time.Second,
	}},
	{"grpc-multiply-open", "grpc", tool.Invocation{
		Target: "grpc", Scheme: "grpc", Method: "Multiply", Model: "open",
		Connections: 2, Concurrency: 1, RatePerSec: 200, Duration: 2 * time.Second,
	}},
	{"grpc-echo-too-large-closed", "grpc-small", tool.Invocation{
		Target: "grpc", Scheme: "grpc", Method: "Echo", Model: "closed",
		Connections: 1, Concurrency: 1, PayloadBytes: 1024, Duration: 2 * time.Second,
	}},
	{"grpc-unreachable-closed", "unreachable", tool.Invocation{
		Target: "grpc", Scheme: "grpc", Method: "GetUser", Model: "closed",
		Connections: 1, Concurrency: 1, Duration: time.Second,
	}},
}

// golden returns the case's invocation as the runner would pass it (RawDir is irrelevant to
// Parse, which gets the files by base name).
func (c goldenCase) invocation() tool.Invocation {
	inv := c.inv
	inv.RawDir, inv.RawPrefix = "/raw", goldenRawPrefix
	return inv
}

// loadRaw reads a golden case's raw output.
func loadRaw(t testing.TB, name string) tool.Raw {
	t.Helper()
	dir := filepath.Join("testdata", name)
	read := func(p string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	raw := tool.Raw{Stdout: read("stdout"), Stderr: read("stderr"), Files: map[string][]byte{}}
	entries, err := os.ReadDir(filepath.Join(dir, "files"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range entries {
		raw.Files[e.Name()] = read(filepath.Join("files", e.Name()))
	}
	return raw
}

// TestCaptureGolden regenerates testdata/ by running the real k6 with Args against real servers.
// It only runs when asked:
//
//	PROTOBENCH_CAPTURE=1 K6=$(which k6) REST_ADDR=... REST_SMALL_ADDR=... GRPC_ADDR=... GRPC_SMALL_ADDR=... \
//	  go test -count=1 -run TestCaptureGolden ./internal/tool/k6
//
// where the *_SMALL servers run with --max-payload-bytes 512. The image's script and proto
// directories are replaced by the repository's, RawDir by a temporary directory.
func TestCaptureGolden(t *testing.T) {
	if os.Getenv("PROTOBENCH_CAPTURE") == "" {
		t.Skip("set PROTOBENCH_CAPTURE=1 (and K6, REST_ADDR, REST_SMALL_ADDR, GRPC_ADDR, GRPC_SMALL_ADDR) to re-capture golden files")
	}
	scriptDir, err := filepath.Abs("scripts")
	if err != nil {
		t.Fatal(err)
	}
	protoDir, err := filepath.Abs("../../../proto")
	if err != nil {
		t.Fatal(err)
	}
	addrs := map[string]string{
		"rest":        os.Getenv("REST_ADDR"),
		"rest-small":  os.Getenv("REST_SMALL_ADDR"),
		"grpc":        os.Getenv("GRPC_ADDR"),
		"grpc-small":  os.Getenv("GRPC_SMALL_ADDR"),
		"unreachable": "127.0.0.1:1",
	}
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			inv := c.invocation()
			inv.Address = addrs[c.server]
			if inv.Address == "" {
				t.Fatalf("no address for server %q", c.server)
			}
			rawDir := t.TempDir()
			inv.RawDir = rawDir
			args := Adapter{}.Args(inv)
			for i, a := range args {
				args[i] = strings.Replace(strings.Replace(a, ScriptDir, scriptDir, 1), ProtoDir, protoDir, 1)
			}
			cmd := exec.Command(os.Getenv("K6"), args...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			runErr := cmd.Run()
			dir := filepath.Join("testdata", c.name)
			os.RemoveAll(dir)
			if err := os.MkdirAll(filepath.Join(dir, "files"), 0o755); err != nil {
				t.Fatal(err)
			}
			cmdLine := "k6 " + shellQuote(args) + "\n# exit: " + exitStatus(runErr) + "\n"
			for file, content := range map[string][]byte{"cmd": []byte(cmdLine), "stdout": stdout.Bytes(), "stderr": stderr.Bytes()} {
				if err := os.WriteFile(filepath.Join(dir, file), content, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			written, _ := filepath.Glob(filepath.Join(rawDir, inv.RawPrefix+"*"))
			for _, p := range written {
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "files", filepath.Base(p)), b, 0o644); err != nil {
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
