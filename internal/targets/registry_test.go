package targets_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/protobench/protobench/internal/images"
	"github.com/protobench/protobench/internal/loadgen"
	_ "github.com/protobench/protobench/internal/loadgen/loadcmd" // registers every driver
	"github.com/protobench/protobench/internal/targets"
)

const root = "../.."

func exists(t *testing.T, rel string) bool {
	t.Helper()
	_, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel)))
	return err == nil
}

// TestEveryTargetIsComplete is what "a new protocol is one registry entry" rests on: each entry
// has its server folder, a load-generator driver for its protocol, an image the suite can get,
// and a health check, so nothing else has to be told about it.
func TestEveryTargetIsComplete(t *testing.T) {
	names := map[string]bool{}
	goNames := map[string]bool{}
	for _, tg := range targets.All() {
		t.Run(tg.Name, func(t *testing.T) {
			if names[tg.Name] || goNames[tg.GoName] || tg.GoName == "" {
				t.Errorf("name %q / Go name %q empty or already used", tg.Name, tg.GoName)
			}
			names[tg.Name], goNames[tg.GoName] = true, true

			// Its server folder: a Go main, or a Dockerfile for a server in another language.
			switch {
			case tg.ServerDir == "" || !exists(t, tg.ServerDir):
				t.Errorf("server folder %q does not exist", tg.ServerDir)
			case tg.GoServer != "" && !exists(t, tg.ServerDir+"/main.go"):
				t.Errorf("Go server %s has no %s/main.go", tg.Name, tg.ServerDir)
			case tg.GoServer != "" && !exists(t, tg.GoServer):
				t.Errorf("Go server package %s does not exist", tg.GoServer)
			case tg.GoServer == "" && !exists(t, tg.ServerDir+"/Dockerfile"):
				t.Errorf("server %s is not in Go and has no %s/Dockerfile", tg.Name, tg.ServerDir)
			}

			// Its driver: our generator speaks its protocol, from the protocol's driver folder.
			if !slices.Contains(targets.Protocols, tg.Protocol) {
				t.Errorf("protocol %q is not one of %v", tg.Protocol, targets.Protocols)
			}
			if _, ok := loadgen.Lookup(tg.Protocol); !ok {
				t.Errorf("no load-generator driver registered for protocol %q", tg.Protocol)
			}
			if !exists(t, "internal/loadgen/driver/"+tg.Protocol) {
				t.Errorf("no driver folder internal/loadgen/driver/%s", tg.Protocol)
			}

			// Its image: one the image catalog can pull or build. Go servers run from the
			// protobench image, which builds every servers/<name>/main.go as protobench-<name>-server.
			if !slices.Contains(images.Names(), tg.Image) {
				t.Errorf("image %q is not in the image catalog %v", tg.Image, images.Names())
			}
			if tg.Image == images.Protobench {
				bin := "/usr/local/bin/protobench-" + filepath.Base(tg.ServerDir) + "-server"
				if len(tg.Entrypoint) != 1 || tg.Entrypoint[0] != bin {
					t.Errorf("entrypoint %v, want [%s], the binary the protobench image builds", tg.Entrypoint, bin)
				}
			}

			// Its health check, its ports and what it serves.
			if len(tg.Health) == 0 || tg.HealthRetries <= 0 {
				t.Errorf("no health check (%v, %d retries)", tg.Health, tg.HealthRetries)
			}
			if tg.Port <= 0 || tg.MetricsPort <= 0 || tg.Port == tg.MetricsPort {
				t.Errorf("ports: main %d, metrics %d", tg.Port, tg.MetricsPort)
			}
			if len(tg.Methods) == 0 {
				t.Error("serves no method")
			}
			for _, m := range tg.Methods {
				if !slices.Contains(targets.AllMethods(), m) {
					t.Errorf("method %s is not a contract method", m)
				}
			}
			for _, p := range tg.Patterns {
				for _, m := range p.Methods {
					if !tg.Implements(m) {
						t.Errorf("pattern %s carries %s, which the target does not serve", p.Name, m)
					}
				}
			}
			if tg.IsHTTP() != (len(tg.HTTPVersions) > 0) || tg.IsHTTP() != (len(tg.Encodings) > 0) {
				t.Errorf("HTTP versions %v and encodings %v belong to HTTP targets, and every HTTP target has them", tg.HTTPVersions, tg.Encodings)
			}
			for _, k := range tg.KnobNames() {
				if knob := tg.Knobs[k]; (knob.Env == "") != knob.Client {
					t.Errorf("knob %s: variable %q, client %v; a server knob has its variable, a client knob none", k, knob.Env, knob.Client)
				}
			}
			// The pattern knob's values are the target's patterns, and only a target with patterns has it.
			if k, ok := tg.Knobs[targets.PatternKnob]; ok != (len(tg.Patterns) > 0) || !slices.Equal(k.Enum, tg.PatternNames()) || (ok && !k.Client) {
				t.Errorf("knob %s %+v, patterns %v", targets.PatternKnob, k, tg.PatternNames())
			}
			if tg.Caps.CPUs <= 0 || tg.Caps.MemoryBytes <= 0 {
				t.Errorf("default caps %+v", tg.Caps)
			}
		})
	}
}

func TestMultiplexes(t *testing.T) {
	cases := []struct {
		target, httpVersion, pattern string
		want                         bool
	}{
		{"grpc", "", "", true},
		{"rest", targets.HTTP1, "", false},
		{"rest", targets.HTTP2, "", true},
		{"zeromq", "", "", true}, // the default pattern, DEALER
		{"zeromq", "", "req", false},
		{"netrpc", "", "", true},
	}
	for _, c := range cases {
		tg, ok := targets.Lookup(c.target)
		if !ok {
			t.Fatalf("no target %s", c.target)
		}
		if got := tg.Multiplexes(c.httpVersion, c.pattern); got != c.want {
			t.Errorf("%s %q %q: Multiplexes = %v, want %v", c.target, c.httpVersion, c.pattern, got, c.want)
		}
	}
}

// TestProtocolTitles: every protocol has its own name in prose (ProtocolTitle falls back to the
// scheme only for an unknown protocol).
func TestProtocolTitles(t *testing.T) {
	seen := map[string]string{}
	for _, p := range targets.Protocols {
		title := targets.ProtocolTitle(p)
		if title == p {
			t.Errorf("protocol %q has no title", p)
		}
		if other, dup := seen[title]; dup {
			t.Errorf("protocols %q and %q share the title %q", other, p, title)
		}
		seen[title] = p
	}
	if got := targets.ProtocolTitle(targets.ZMQ); got != "ZeroMQ" {
		t.Errorf("ProtocolTitle(zmq) = %q, want ZeroMQ", got)
	}
}
