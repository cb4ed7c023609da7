package images

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// hashTree builds a context from files under a fresh directory and returns its hash.
func hashTree(t *testing.T, files map[string]string, args map[string]string) string {
	t.Helper()
	root := t.TempDir()
	writeFiles(t, root, files)
	bc := newBuildContext("Dockerfile")
	for name := range files {
		if err := bc.addHostFile(name, filepath.Join(root, filepath.FromSlash(name)), false); err != nil {
			t.Fatal(err)
		}
	}
	sum, err := bc.contentHash("demo", args)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

func TestContentHash(t *testing.T) {
	base := map[string]string{"Dockerfile": "FROM x\nCOPY a /a\n", "a": "hello", "dir/b": "world"}
	baseArgs := map[string]string{"BASE_IMAGE": "protobench/base:1@sha256:aaa"}
	want := hashTree(t, base, baseArgs)

	with := func(change func(files, args map[string]string)) (map[string]string, map[string]string) {
		files, args := map[string]string{}, map[string]string{}
		for k, v := range base {
			files[k] = v
		}
		for k, v := range baseArgs {
			args[k] = v
		}
		change(files, args)
		return files, args
	}
	cases := []struct {
		name   string
		change func(files, args map[string]string)
		same   bool
	}{
		{"identical inputs in another directory", func(map[string]string, map[string]string) {}, true},
		{"file content", func(f, _ map[string]string) { f["a"] = "hello!" }, false},
		{"file renamed", func(f, _ map[string]string) { f["c"] = f["a"]; delete(f, "a") }, false},
		{"file added", func(f, _ map[string]string) { f["dir/new"] = "" }, false},
		{"Dockerfile", func(f, _ map[string]string) { f["Dockerfile"] += "RUN true\n" }, false},
		{"base image ID", func(_, a map[string]string) { a["BASE_IMAGE"] = "protobench/base:1@sha256:bbb" }, false},
		{"extra build arg", func(_, a map[string]string) { a["K6_VERSION"] = "v1.8.1" }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files, args := with(c.change)
			got := hashTree(t, files, args)
			if (got == want) != c.same {
				t.Fatalf("hash equal = %v, want %v", got == want, c.same)
			}
		})
	}
}

func TestContentHashIgnoresModTime(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"a": "x"})
	hash := func() string {
		bc := newBuildContext("Dockerfile")
		if err := bc.addHostFile("a", filepath.Join(root, "a"), false); err != nil {
			t.Fatal(err)
		}
		sum, err := bc.contentHash("demo", nil)
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	first := hash()
	// A fresh checkout has new mtimes; the hash must not see them.
	if err := os.Chtimes(filepath.Join(root, "a"), contextModTime, contextModTime); err != nil {
		t.Fatal(err)
	}
	if second := hash(); second != first {
		t.Fatalf("hash changed with the mtime: %s vs %s", first, second)
	}
}

func TestUnhashedEntriesUseIdentity(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"goroot/VERSION": "go1.26.8", "goroot/bin/go": "binary"})
	hash := func(identity string) string {
		bc := newBuildContext("Dockerfile")
		if err := bc.addHostTree("goroot", filepath.Join(root, "goroot"), nil, true); err != nil {
			t.Fatal(err)
		}
		bc.identity = []string{identity}
		sum, err := bc.contentHash("go-builder", nil)
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	a := hash("go1.26.8 bin/go:6")
	writeFiles(t, root, map[string]string{"goroot/bin/go": "other binary"})
	if b := hash("go1.26.8 bin/go:6"); b != a {
		t.Fatal("an unhashed entry's content changed the hash")
	}
	if c := hash("go1.27.0 bin/go:12"); c == a {
		t.Fatal("a new toolchain identity did not change the hash")
	}
}

func TestParseDockerfile(t *testing.T) {
	cases := []struct {
		name    string
		text    string
		want    dockerfileInfo
		wantErr string
	}{
		{
			name: "args sources and stages",
			text: `# comment
ARG GO_BUILDER_IMAGE=protobench/go-builder:latest
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${GO_BUILDER_IMAGE} AS build
COPY go.mod go.sum ./
COPY --chown=1:1 images/x/ ./x/
RUN go build \
    # a comment inside a continuation
    ./...
FROM ${BASE_IMAGE}
ARG BASE_IMAGE
COPY --from=build /out/ /usr/local/bin/
ADD https://example.com/x.tar.gz /tmp/
ADD ["proto/", "/usr/share/proto/"]
`,
			want: dockerfileInfo{
				Args:    []string{"GO_BUILDER_IMAGE", "BASE_IMAGE"},
				Sources: []string{"go.mod", "go.sum", "images/x/", "proto/"},
			},
		},
		{
			name: "whole context",
			text: "FROM x\nCOPY . .\n",
			want: dockerfileInfo{Sources: []string{"."}},
		},
		{
			name:    "copy without destination",
			text:    "FROM x\nCOPY onlyone\n",
			wantErr: "line 2: COPY needs a source and a destination",
		},
		{
			name:    "bad json form",
			text:    "FROM x\nCOPY [\"a\", \n",
			wantErr: "bad JSON form",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseDockerfile(c.text)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestSelectSources(t *testing.T) {
	all := []string{"go.mod", "go.sum", "images/x/Dockerfile", "images/x/main.go", "images/xy/main.go", "proto/a/b.proto", "servers/python-grpc/server.py"}
	cases := []struct {
		name    string
		sources []string
		want    []string
		wantErr string
	}{
		{"files", []string{"go.mod", "./go.sum"}, []string{"go.mod", "go.sum"}, ""},
		{"directory, not its prefix sibling", []string{"images/x/"}, []string{"images/x/Dockerfile", "images/x/main.go"}, ""},
		{"everything", []string{"."}, all, ""},
		{"glob over files", []string{"servers/*/*.py"}, []string{"servers/python-grpc/server.py"}, ""},
		{"glob over directories", []string{"proto/*"}, []string{"proto/a/b.proto"}, ""},
		{"missing", []string{"nope/"}, nil, `COPY source "nope/" matches no file`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := selectSources(all, c.sources)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestWalkGoGraph(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"go.mod":                 "module example.com/m\n\ngo 1.26\n",
		"cmd/app/main.go":        "package main\n\nimport (\n\t\"fmt\"\n\t\"example.com/m/internal/a\"\n)\n\nfunc main() { fmt.Println(a.X) }\n",
		"cmd/app/main_test.go":   "package main\n\nimport _ \"github.com/only/in/tests\"\n",
		"internal/a/a.go":        "package a\n\nimport (\n\t_ \"github.com/ext/one\"\n\t_ \"golang.org/x/sys/unix\"\n\t\"example.com/m/internal/b\"\n)\n\nvar X = b.Y\n",
		"internal/a/a_darwin.go": "package a\n\nimport _ \"github.com/not/on/linux\"\n",
		"internal/b/b.go":        "package b\n\n// #include <stdlib.h>\nimport \"C\"\n\nvar Y = 1\n",
		"internal/unused/u.go":   "package unused\n\nimport _ \"github.com/never/reached\"\n",
	})
	g, err := walkGoGraph(root, []string{"cmd/app"}, "amd64")
	if err != nil {
		t.Fatal(err)
	}
	wantDirs := []string{"cmd/app", "internal/a", "internal/b"}
	wantExt := []string{"github.com/ext/one", "golang.org/x/sys/unix"}
	if !reflect.DeepEqual(g.Dirs, wantDirs) {
		t.Errorf("dirs %v, want %v", g.Dirs, wantDirs)
	}
	if !reflect.DeepEqual(g.External, wantExt) {
		t.Errorf("external %v, want %v", g.External, wantExt)
	}
	stub := string(depsStub(g.External))
	for _, want := range []string{"package imagedeps", "\t_ \"github.com/ext/one\"\n", "DO NOT EDIT"} {
		if !strings.Contains(stub, want) {
			t.Errorf("stub lacks %q:\n%s", want, stub)
		}
	}
}

func TestEnvVars(t *testing.T) {
	set := Set{
		Protobench: {Name: Protobench, Ref: "protobench/protobench:abc", Source: Built},
		Loadgen:    {Name: Loadgen, Ref: "protobench/protobench:abc", Source: Built},
		Wrk:        {Name: Wrk, Ref: "protobench/wrk:def", Source: Cached, Variant: "wrk"},
		Prometheus: {Name: Prometheus, Ref: UpstreamPrometheus, Source: Pulled},
		Grafana:    {Name: Grafana, Source: Unavailable, Note: "no registry"},
		Base:       {Name: Base, Ref: "protobench/base:1", Source: Cached},
	}
	want := map[string]string{
		"PROTOBENCH_SERVER_IMAGE":     "protobench/protobench:abc",
		"PROTOBENCH_LOADGEN_IMAGE":    "protobench/protobench:abc",
		"PROTOBENCH_WRK_IMAGE":        "protobench/wrk:def",
		"PROTOBENCH_WRK_FLAVOR":       "wrk",
		"PROTOBENCH_PROMETHEUS_IMAGE": UpstreamPrometheus,
	}
	if got := EnvVars(set); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestComposeFileNamesEveryImageVariable(t *testing.T) {
	// The compose file must read every variable EnvVars sets, or an image would silently fall
	// back to its default.
	files, err := filepath.Glob(filepath.Join("..", "..", "compose", "*.yml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no compose files: %v", err)
	}
	var text []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text = append(text, b...)
	}
	for _, name := range Names() {
		key := EnvVar(name)
		if key == "" {
			continue
		}
		if !bytes.Contains(text, []byte("${"+key+":-")) {
			t.Errorf("compose file does not use %s (image %s)", key, name)
		}
	}
}

func TestSortedFollowsCatalog(t *testing.T) {
	set := Set{}
	for _, n := range []string{Grafana, "zzz-extra", Base, Protobench} {
		set[n] = Image{Name: n}
	}
	var got []string
	for _, img := range set.Sorted() {
		got = append(got, img.Name)
	}
	want := []string{Base, Protobench, Grafana, "zzz-extra"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestRegistryUnreachable(t *testing.T) {
	cases := []struct {
		name   string
		output string
		want   bool
	}{
		{"dns", `Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io on 10.255.255.53:53: no such host`, true},
		{"timeout", "net/http: TLS handshake timeout", true},
		{"unknown tag", "manifest for grafana/k6:9.9.9 not found: manifest unknown", false},
		{"rate limit", "toomanyrequests: You have reached your pull rate limit", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := registryUnreachable(c.output); got != c.want {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}
