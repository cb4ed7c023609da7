package scenario

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// customDir is a scenario folder with a Dockerfile and a proto beside the scenario file, as a
// user's own server would have them.
func customDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range map[string]string{
		"server/Dockerfile":    "FROM scratch\n",
		"proto/greeter.proto":  "syntax = \"proto3\";\npackage demo;\n",
		"proto/README.notused": "",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const customScenario = `name: own
description: my server beside ours
custom_targets:
  my-grpc:
    dockerfile: server/Dockerfile
    protocol: grpc
    port: 9000
    metrics_port: 9100
    health_check: ["/bin/probe"]
    environment: {GREETING: hello}
    go_runtime: true
    grpc:
      proto: proto/greeter.proto
      call: demo.Greeter/SayHello
      data: '{"name": "x"}'
  my-rpc:
    image: me/rpc:1
    protocol: netrpc
    port: 4200
steps:
  - name: hello
    targets: [my-grpc]
    method: SayHello
    tools: [protobench, ghz]
  - name: contract
    targets: [netrpc, my-rpc]
    method: Multiply
`

func TestCustomTargets(t *testing.T) {
	dir := customDir(t)
	path := filepath.Join(dir, "own.yaml")
	sc, err := Parse(path, []byte(customScenario))
	if err != nil {
		t.Fatal(err)
	}
	g := sc.Custom["my-grpc"]
	if g == nil || g.Protocol != "grpc" || g.Port != 9000 || g.MetricsPort != 9100 || g.Environment["GREETING"] != "hello" {
		t.Fatalf("my-grpc = %+v", g)
	}
	if !g.GoRuntime || sc.Custom["my-rpc"].GoRuntime {
		t.Errorf("go_runtime: my-grpc %v (declared true), my-rpc %v (not declared)", g.GoRuntime, sc.Custom["my-rpc"].GoRuntime)
	}
	if want := filepath.Join(dir, "server", "Dockerfile"); g.Dockerfile != want {
		t.Errorf("dockerfile %q, want %q (relative to the scenario file)", g.Dockerfile, want)
	}
	if want := filepath.Join(dir, "proto", "greeter.proto"); g.Request == nil || g.Request.ProtoFile != want || g.Request.Call != "demo.Greeter/SayHello" {
		t.Errorf("request %+v, want proto %s", g.Request, want)
	}
	plan, err := sc.Plan(PlanOptions{Cores: 2})
	if err != nil {
		t.Fatal(err)
	}
	ran := map[string][]string{}
	for _, r := range plan.Runs {
		ran[r.Target] = append(ran[r.Target], r.Tool)
		if r.Target == "my-grpc" && (r.Custom != g || r.Protocol != "grpc") {
			t.Errorf("run %s: custom %p protocol %q", r.ID, r.Custom, r.Protocol)
		}
		if r.Target == "netrpc" && r.Custom != nil {
			t.Errorf("run %s of a reference target carries a custom target", r.ID)
		}
	}
	if got := strings.Join(unique(ran["my-grpc"]), ","); got != "ghz,protobench" {
		t.Errorf("tools on my-grpc: %s, want ghz,protobench", got)
	}
	// k6 speaks gRPC but cannot send a custom target's own request; ghz and our generator can.
	if ok, why := sc.compatible("k6", "my-grpc"); ok || !strings.Contains(why, "own request") {
		t.Errorf("k6 on my-grpc: compatible %v (%s), want false for its own request", ok, why)
	}
	if ok, _ := sc.compatible("ghz", "my-grpc"); !ok {
		t.Error("ghz cannot drive my-grpc")
	}
	if len(ran["my-rpc"]) == 0 || len(ran["netrpc"]) == 0 {
		t.Errorf("the contract step does not run both net/rpc targets: %v", ran)
	}
}

func unique(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	sort.Strings(out)
	return out
}

func TestCustomTargetErrors(t *testing.T) {
	dir := customDir(t)
	const top = "name: t\ndescription: d\ncustom_targets:\n  mine:\n"
	const step = "steps:\n  - {name: s, targets: [grpc], method: Echo}\n"
	cases := []struct {
		name  string
		body  string // the lines of custom_targets.mine, from line 5
		line  int
		field string
		msg   string
	}{
		{"unknown protocol", "    image: a\n    protocol: soap\n    port: 1\n", 6, "custom_targets.mine.protocol", `unknown protocol "soap"`},
		{"no port", "    image: a\n    protocol: grpc\n", 5, "custom_targets.mine", `missing key "port"`},
		{"port out of range", "    image: a\n    protocol: grpc\n    port: 70000\n", 7, "custom_targets.mine.port", "65535"},
		{"no image", "    protocol: grpc\n    port: 1\n", 5, "custom_targets.mine", "give image"},
		{"image and dockerfile", "    image: a\n    dockerfile: server/Dockerfile\n    protocol: grpc\n    port: 1\n", 6, "custom_targets.mine.dockerfile", "not both"},
		{"missing dockerfile", "    dockerfile: nowhere/Dockerfile\n    protocol: grpc\n    port: 1\n", 5, "custom_targets.mine.dockerfile", "is not one"},
		{"grpc block on http", "    image: a\n    protocol: http\n    port: 1\n    grpc: {proto: proto/greeter.proto, call: a.B/C}\n", 8, "custom_targets.mine.grpc", "protocol grpc only"},
		{"bad call", "    image: a\n    protocol: grpc\n    port: 1\n    grpc:\n      proto: proto/greeter.proto\n      call: SayHello\n", 10, "custom_targets.mine.grpc.call", "package.Service/Method"},
		{"no proto", "    image: a\n    protocol: grpc\n    port: 1\n    grpc: {call: a.B/C}\n", 8, "custom_targets.mine.grpc", `missing key "proto"`},
		{"bad header", "    image: a\n    protocol: http\n    port: 1\n    http:\n      path: /x\n      headers: [nocolon]\n", 10, "custom_targets.mine.http.headers[0]", "Name: value"},
		{"bad path", "    image: a\n    protocol: http\n    port: 1\n    http: {path: x}\n", 8, "custom_targets.mine.http.path", "starting with /"},
		{"go_runtime not a bool", "    image: a\n    protocol: grpc\n    port: 1\n    go_runtime: maybe\n", 8, "custom_targets.mine.go_runtime", "true or false"},
		{"unknown key", "    image: a\n    protocol: grpc\n    port: 1\n    prot: 2\n", 8, "custom_targets.mine.prot", `unknown key "prot"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			text := top + tc.body + step
			_, err := Parse(filepath.Join(dir, "x.yaml"), []byte(text))
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("error %v (%T), want Errors, for:\n%s", err, err, text)
			}
			prefix := fmt.Sprintf("%s:%d: %s: ", filepath.Join(dir, "x.yaml"), tc.line, tc.field)
			for _, e := range es {
				if s := e.Error(); strings.HasPrefix(s, prefix) && strings.Contains(s, tc.msg) {
					return
				}
			}
			t.Errorf("want an error starting %q containing %q; got:\n%v", prefix, tc.msg, err)
		})
	}
}

func TestCustomTargetNames(t *testing.T) {
	for name, msg := range map[string]string{
		"grpc":       "is a reference target",
		"prometheus": "is a service of protobench's stack",
		"Bad Name":   "expected a target name",
	} {
		text := fmt.Sprintf("name: t\ndescription: d\ncustom_targets:\n  %q: {image: a, protocol: grpc, port: 1}\nsteps:\n  - {name: s, targets: [grpc], method: Echo}\n", name)
		_, err := Parse("x.yaml", []byte(text))
		if err == nil || !strings.Contains(err.Error(), "x.yaml:4: custom_targets.") || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: got %v, want x.yaml:4 ... %s", name, err, msg)
		}
	}
}
