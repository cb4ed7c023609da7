package registry

import (
	"reflect"
	"strings"
	"testing"
)

func TestRef(t *testing.T) {
	const id = "sha256:03ed677cb09d9c7e4b5a0c0f7f5e1d2b3a4c5d6e7f8091a2b3c4d5e6f7a8b9c0"
	cases := []struct {
		name, project, logical, local, want string
		port                                int
	}{
		{"local build keeps its hash tag", "protobench", "protobench", "protobench/protobench:40a2963e5682",
			"127.0.0.1:5000/protobench/protobench:40a2963e5682", 5000},
		{"upstream image keeps its tag", "protobench", "prometheus", "prom/prometheus:v2.53.3",
			"127.0.0.1:5000/protobench/prometheus:v2.53.3", 5000},
		{"registry host with a port is not a tag", "pb", "cadvisor", "localhost:5001/cadvisor",
			"127.0.0.1:5000/pb/cadvisor:id-03ed677cb09d", 5000},
		{"no tag", "pb", "base", "protobench/base",
			"127.0.0.1:5000/pb/base:id-03ed677cb09d", 5000},
		{"digest", "pb", "k6", "grafana/k6:1.8.1@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			"127.0.0.1:5000/pb/k6:id-03ed677cb09d", 5000},
		{"image ID", "pb", "base", id, "127.0.0.1:5000/pb/base:id-03ed677cb09d", 5000},
		{"short image ID", "pb", "base", "03ed677cb09d", "127.0.0.1:5000/pb/base:id-03ed677cb09d", 5000},
		{"other port", "pbtest-x", "python-grpc", "protobench/python-grpc:9a8b7c6d5e4f",
			"127.0.0.1:5999/pbtest-x/python-grpc:9a8b7c6d5e4f", 5999},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Ref(loopback(c.port), c.project, c.logical, c.local, id); got != c.want {
				t.Fatalf("Ref(%q, %q, %q, %q) = %q, want %q", loopback(c.port), c.project, c.logical, c.local, got, c.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	if err := validate("protobench", []string{"protobench", "python-grpc", "node-exporter", "go_builder"}); err != nil {
		t.Fatalf("valid names refused: %v", err)
	}
	for _, c := range []struct {
		project string
		names   []string
		bad     string
	}{
		{"Protobench", nil, `project "Protobench"`},
		{"pb", []string{"ok", "-dash"}, `"-dash"`},
		{"pb", []string{"a/b"}, `"a/b"`},
		{"", nil, `project ""`},
	} {
		err := validate(c.project, c.names)
		if err == nil || !strings.Contains(err.Error(), c.bad) {
			t.Errorf("validate(%q, %q) = %v, want an error naming %s", c.project, c.names, err, c.bad)
		}
	}
}

func TestJSONStrings(t *testing.T) {
	got := jsonStrings(`["127.0.0.1:5000/pb/base:id-03ed677cb09d","protobench/base:latest"]` + "\n")
	want := []string{"127.0.0.1:5000/pb/base:id-03ed677cb09d", "protobench/base:latest"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got := jsonStrings("[]"); len(got) != 0 {
		t.Fatalf("empty list: got %q", got)
	}
}

func TestPlacement(t *testing.T) {
	cases := []struct {
		name, publish, pullHost, nodeAddr string
		ipvs                              bool
		mode, registry, err               string
	}{
		{name: "mesh where IPVS exists", nodeAddr: "10.0.0.1", ipvs: true, mode: PublishIngress, registry: "127.0.0.1:5000"},
		{name: "host mode without IPVS", nodeAddr: "10.0.0.1", mode: PublishHost, registry: "10.0.0.1:5000"},
		{name: "loopback swarm address", nodeAddr: "127.0.0.1", mode: PublishHost, registry: "127.0.0.1:5000"},
		{name: "pull host given", pullHost: "manager.lan", nodeAddr: "10.0.0.1", mode: PublishHost, registry: "manager.lan:5000"},
		{name: "localhost", pullHost: "localhost", mode: PublishHost, registry: "127.0.0.1:5000"},
		{name: "IPv6", nodeAddr: "fd00::1", mode: PublishHost, registry: "[fd00::1]:5000"},
		{name: "host mode asked for", publish: PublishHost, nodeAddr: "10.0.0.1", ipvs: true, mode: PublishHost, registry: "10.0.0.1:5000"},
		{name: "mesh asked for", publish: PublishIngress, nodeAddr: "10.0.0.1", mode: PublishIngress, registry: "127.0.0.1:5000"},
		{name: "no address", err: "no swarm address"},
		{name: "unknown mode", publish: "vip", err: `publish mode "vip"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mode, registry, err := placement(c.publish, c.pullHost, c.nodeAddr, 5000, c.ipvs)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want one saying %s", err, c.err)
				}
				return
			}
			if err != nil || mode != c.mode || registry != c.registry {
				t.Fatalf("got %q %q %v, want %q %q", mode, registry, err, c.mode, c.registry)
			}
		})
	}
}

func TestBindAddress(t *testing.T) {
	for _, c := range []struct{ publish, nodeAddr, want, err string }{
		{PublishIngress, "10.0.0.1", "", ""},
		{PublishHost, "10.0.0.1", "10.0.0.1:5000", ""},
		{PublishHost, "127.0.0.1", "127.0.0.1:5000", ""},
		{PublishHost, "fd00::1", "[fd00::1]:5000", ""},
		{PublishHost, "manager.lan", "", "not an IP address"},
		{PublishHost, "", "", "not an IP address"},
	} {
		got, err := bindAddress(c.publish, c.nodeAddr, 5000)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("bindAddress(%q, %q): err %v, want %q", c.publish, c.nodeAddr, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("bindAddress(%q, %q) = %q, %v; want %q", c.publish, c.nodeAddr, got, err, c.want)
		}
	}
}

func TestRepoOf(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:5000/pb/base:id-03ed677cb09d": "127.0.0.1:5000/pb/base",
		"127.0.0.1:5000/pb/base":                 "127.0.0.1:5000/pb/base",
		"[fd00::1]:5000/pb/base:latest":          "[fd00::1]:5000/pb/base",
	} {
		if got := repoOf(in); got != want {
			t.Errorf("repoOf(%q) = %q, want %q", in, got, want)
		}
	}
}
