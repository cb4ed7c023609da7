package tooltest

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/repo"
	"github.com/protobench/protobench/internal/tool"
	"github.com/protobench/protobench/internal/tool/native"
)

// Unreachable is the server of golden cases run against an address where nothing listens.
const Unreachable = "unreachable"

// unreachableAddr is Unreachable's address: nothing listens on port 1 of a test machine.
const unreachableAddr = "127.0.0.1:1"

// Case is one golden case: testdata/<Name>/ holds a real run of the tool for Inv against Server,
// whose address is filled in when the run is captured.
type Case struct {
	Name   string
	Server string
	Inv    tool.Invocation
}

// Golden is a tool's golden files. Each case's directory holds the command line and its exit
// status (cmd), the tool's stdout and its stderr.
type Golden struct {
	Adapter tool.Adapter
	// ProgramEnv names the environment variable that holds the tool's path for a capture.
	ProgramEnv string
	// ServerEnv maps each server of the cases, but Unreachable, to the environment variable that
	// holds its address for a capture.
	ServerEnv map[string]string
	// GzipStdout keeps stdout as stdout.gz, for a tool whose output is large.
	GzipStdout bool
	// RawPrefix, when set, is every case's RawPrefix, and files/ holds the files the tool wrote
	// under RawDir: the tool's result is a file, not its stdout.
	RawPrefix string
	// GzipFiles keeps each of files/ gzipped (name.gz), for a tool that logs every request.
	GzipFiles bool
}

// Invocation is case c's invocation as the runner would pass it.
func (g Golden) Invocation(c Case) tool.Invocation {
	inv := c.Inv
	if g.RawPrefix != "" {
		// RawDir is irrelevant to Parse, which gets the files by base name.
		inv.RawDir, inv.RawPrefix = "/raw", g.RawPrefix
	}
	return inv
}

// Load reads golden case name's raw output.
func (g Golden) Load(t testing.TB, name string) tool.Raw {
	t.Helper()
	dir := filepath.Join("testdata", name)
	read := func(p string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var raw tool.Raw
	if g.GzipStdout {
		raw.Stdout = gunzip(t, read("stdout.gz"))
	} else {
		raw.Stdout = read("stdout")
	}
	raw.Stderr = read("stderr")
	if g.RawPrefix == "" {
		return raw
	}
	raw.Files = map[string][]byte{}
	entries, err := os.ReadDir(filepath.Join(dir, "files"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range entries {
		b := read(filepath.Join("files", e.Name()))
		name, gzipped := strings.CutSuffix(e.Name(), ".gz")
		if g.GzipFiles && gzipped {
			b = gunzip(t, b)
		}
		raw.Files[name] = b
	}
	return raw
}

// Expectations is what Parse must make of the golden cases.
type Expectations struct {
	// Records holds what each case measured; CheckParse fills in the settings Parse copies from
	// the invocation.
	Records map[string]record.Record
	// Errors holds, for each case Parse must reject, what its error must mention.
	Errors map[string]string
	// Tolerate, when set, may set fields of got to want's where they differ only because got was
	// computed at run time and want folded exactly at compile time.
	Tolerate func(got *record.Record, want record.Record)
}

// CheckParse checks Parse against every golden case. A case with no expectation fails: a new
// capture must come with the figures read from it.
func (g Golden) CheckParse(t *testing.T, cases []Case, e Expectations) {
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			inv := g.Invocation(c)
			got, err := g.Adapter.Parse(inv, g.Load(t, c.Name))
			if wantErr, ok := e.Errors[c.Name]; ok {
				if err == nil || !strings.Contains(err.Error(), wantErr) {
					t.Fatalf("error %v, want one mentioning %q", err, wantErr)
				}
				return
			}
			w, ok := e.Records[c.Name]
			if !ok {
				t.Fatalf("no expectation for golden case %s", c.Name)
			}
			if err != nil {
				t.Fatal(err)
			}
			w = withSettings(w, g.Adapter.Name(), inv)
			if e.Tolerate != nil {
				e.Tolerate(&got, w)
			}
			if !reflect.DeepEqual(got, w) {
				t.Errorf("Parse =\n%+v\nwant\n%+v", got, w)
			}
		})
	}
}

// Capture regenerates testdata/ by running the real tool with Args against real servers, each
// case's directory replaced by the new run. It skips t unless PROTOBENCH_CAPTURE is set: it needs
// the tool and the servers, found through the environment.
func (g Golden) Capture(t *testing.T, cases []Case) {
	if os.Getenv("PROTOBENCH_CAPTURE") == "" {
		needs := []string{g.ProgramEnv}
		for _, env := range g.ServerEnv {
			needs = append(needs, env)
		}
		sort.Strings(needs[1:])
		t.Skipf("set PROTOBENCH_CAPTURE=1 (and %s) to re-capture golden files", strings.Join(needs, ", "))
	}
	// A capture runs the tool on the host: the image's paths on its command line become the
	// checkout's copies, as package native lists them.
	host := native.Lookup(g.Adapter.Name())
	var root string
	if len(host.Paths) > 0 {
		var err error
		if root, err = repo.Root(); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			inv := g.Invocation(c)
			inv.Address = unreachableAddr
			if c.Server != Unreachable {
				inv.Address = os.Getenv(g.ServerEnv[c.Server])
			}
			if inv.Address == "" {
				t.Fatalf("no address for server %q", c.Server)
			}
			if g.RawPrefix != "" {
				inv.RawDir = t.TempDir()
				// The runner writes a tool's input files before it runs; so does a capture.
				for name, data := range g.Adapter.InputFiles(inv) {
					if err := os.WriteFile(filepath.Join(inv.RawDir, name), data, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			g.capture(t, c.Name, inv, host.HostArgs(g.Adapter.Args(inv), root))
		})
	}
}

// capture runs the tool with args and stores the run as golden case name.
func (g Golden) capture(t *testing.T, name string, inv tool.Invocation, args []string) {
	cmd := exec.Command(os.Getenv(g.ProgramEnv), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	dir := filepath.Join("testdata", name)
	if g.RawPrefix != "" {
		// The tool's files are copied by name: one it no longer writes must not linger.
		os.RemoveAll(dir)
		if err := os.MkdirAll(filepath.Join(dir, "files"), 0o755); err != nil {
			t.Fatal(err)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"cmd":    []byte(g.Adapter.Name() + " " + shellQuote(args) + "\n# exit: " + exitStatus(runErr) + "\n"),
		"stderr": stderr.Bytes(),
	}
	if g.GzipStdout {
		files["stdout.gz"] = gzipped(t, stdout.Bytes())
	} else {
		files["stdout"] = stdout.Bytes()
	}
	if g.RawPrefix != "" {
		written, _ := filepath.Glob(filepath.Join(inv.RawDir, inv.RawPrefix+"*"))
		for _, p := range written {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			name := filepath.Join("files", filepath.Base(p))
			if g.GzipFiles {
				name, b = name+".gz", gzipped(t, b)
			}
			files[name] = b
		}
	}
	for file, content := range files {
		if err := os.WriteFile(filepath.Join(dir, file), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func gzipped(t *testing.T, b []byte) []byte {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return gz.Bytes()
}

func gunzip(t testing.TB, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
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
