package native_test

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/protobench/protobench/internal/repo"
	"github.com/protobench/protobench/internal/tool"
	_ "github.com/protobench/protobench/internal/tool/all"
	"github.com/protobench/protobench/internal/tool/ghz"
	"github.com/protobench/protobench/internal/tool/k6"
	"github.com/protobench/protobench/internal/tool/native"
	"github.com/protobench/protobench/internal/tool/wrk"
)

// TestPathsMatchTheTools: the table names the paths the tool packages put on their command
// lines, and the checkout holds each copy.
func TestPathsMatchTheTools(t *testing.T) {
	want := map[string]map[string]string{
		"ghz":  {ghz.ProtoDir: "proto"},
		"k6":   {k6.ScriptDir: k6.ScriptSource, k6.ProtoDir: "proto"},
		"wrk":  {wrk.ScriptPath: wrk.ScriptSource},
		"wrk2": {wrk.ScriptPath: wrk.ScriptSource},
	}
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range tool.Names() {
		paths := native.Lookup(name).Paths
		if !maps.Equal(paths, want[name]) {
			t.Errorf("%s: Paths %v, want %v", name, paths, want[name])
		}
		for image, rel := range paths {
			if !filepath.IsAbs(image) || filepath.IsAbs(rel) {
				t.Errorf("%s: %q → %q: want an absolute path in the image and one relative to the checkout", name, image, rel)
			}
			if _, err := os.Stat(filepath.Join(root, rel)); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
}

// TestInstall: every tool but protobench's own generator says how to get it.
func TestInstall(t *testing.T) {
	for _, name := range tool.Names() {
		if got := native.Lookup(name).Install; (got == "") != (name == "protobench") {
			t.Errorf("%s: Install %q", name, got)
		}
	}
}

func TestHostArgs(t *testing.T) {
	got := native.Lookup("k6").HostArgs([]string{"-e", "PROTOBENCH_PROTO_DIR=/usr/share/protobench/proto", "/usr/share/protobench/k6/grpc.js"}, "/src")
	want := []string{"-e", "PROTOBENCH_PROTO_DIR=/src/proto", "/src/internal/tool/k6/scripts/grpc.js"}
	if !slices.Equal(got, want) {
		t.Errorf("HostArgs = %q, want %q", got, want)
	}
}

func TestWithThreads(t *testing.T) {
	args := []string{"-t", "2", "-c", "4"}
	if got := native.Lookup("wrk").WithThreads(args, 1); !slices.Equal(got, []string{"-t", "1", "-c", "4"}) {
		t.Errorf("wrk: %q", got)
	}
	if args[1] != "2" {
		t.Error("WithThreads changed its argument")
	}
	if got := native.Lookup("ghz").WithThreads(args, 1); !slices.Equal(got, args) {
		t.Errorf("ghz has no threads flag: %q", got)
	}
}
