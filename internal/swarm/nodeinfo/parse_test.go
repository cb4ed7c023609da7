package nodeinfo

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/prom"
)

// testdata/node-inspect.json is `docker node inspect` of this machine's single-node swarm (Docker
// 20.10, TLS data and most plugins cut) with a labelled arm64 worker added in front.
func TestParseNodes(t *testing.T) {
	b, err := os.ReadFile("testdata/node-inspect.json")
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := ParseNodes(b)
	if err != nil {
		t.Fatal(err)
	}
	want := []Node{
		{ID: "ka0ikeak0kyc9dt20e5gcnhbs", Hostname: "vm", Role: "manager", Cores: 2, MemoryBytes: 25276502016,
			DockerVersion: "20.10.24+dfsg1", OS: "linux", Arch: "x86_64"},
		{ID: "x3w0rk3r0000000000000000a", Hostname: "client-1", Role: "worker", Labels: map[string]string{"protobench.role": "client"},
			Cores: 8, MemoryBytes: 16777216000, DockerVersion: "20.10.24+dfsg1", OS: "linux", Arch: "aarch64"},
	}
	if !reflect.DeepEqual(nodes, want) {
		t.Errorf("got  %+v\nwant %+v", nodes, want)
	}
}

func TestParseNodesRefuses(t *testing.T) {
	for in, want := range map[string]string{"[]": "no nodes", "{": "docker node inspect"} {
		if _, err := ParseNodes([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want one mentioning %q", in, err, want)
		}
	}
}

// The MTUs are those measured on this machine's Docker 20.10 (see the constants).
func TestParseNetwork(t *testing.T) {
	captured, err := os.ReadFile("testdata/network-inspect.json")
	if err != nil {
		t.Fatal(err)
	}
	overlay := func(opts string) string {
		return `[{"Name":"pb-net","Driver":"overlay","Options":{` + opts + `},"IPAM":{"Config":[{"Subnet":"10.0.1.0/24","Gateway":"10.0.1.1"}]}}]`
	}
	cases := []struct {
		name, in string
		want     Network
	}{
		{"captured, no mtu option", string(captured), Network{Name: "h3probe-net", Driver: "overlay", MTU: 1450, Subnet: "10.0.1.0/24"}},
		{"mtu option", overlay(`"com.docker.network.driver.mtu":"1400"`), Network{Name: "pb-net", Driver: "overlay", MTU: 1350, Subnet: "10.0.1.0/24"}},
		{"encrypted", overlay(`"encrypted":""`), Network{Name: "pb-net", Driver: "overlay", MTU: 1424, Subnet: "10.0.1.0/24"}},
		{"bridge with option", `[{"Name":"b","Driver":"bridge","Options":{"com.docker.network.driver.mtu":"1400"},"IPAM":{"Config":[{"Subnet":"172.20.0.0/16"},{"Subnet":"fd00::/64"}]}}]`,
			Network{Name: "b", Driver: "bridge", MTU: 1400, Subnet: "172.20.0.0/16,fd00::/64"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseNetwork([]byte(c.in))
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
	for in, want := range map[string]string{
		overlay(`"com.docker.network.driver.mtu":"big"`): "is not an MTU",
		"[]": "returned 0 networks",
		"x":  "docker network inspect",
	} {
		if _, err := ParseNetwork([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want one mentioning %q", in, err, want)
		}
	}
}

func TestAddExporterInfo(t *testing.T) {
	nodes := []Node{{Hostname: "vm"}, {Hostname: "client-1"}, {Hostname: "nothing-scraped"}}
	uname := []prom.Sample{
		{Labels: map[string]string{"node": "vm", "release": "6.1.0-28-amd64", "nodename": "a1b2c3"}, Value: 1},
		// An exporter whose target had no node label, running with the node's hostname.
		{Labels: map[string]string{"release": "6.8.0-1-arm64", "nodename": "client-1"}, Value: 1},
		// A compose-style series: neither node nor a nodename that is a node's hostname.
		{Labels: map[string]string{"release": "5.10", "nodename": "f00ba4"}, Value: 1},
	}
	cpu := []prom.Sample{
		{Labels: map[string]string{"node": "vm", "cpu": "0", "model_name": "AMD EPYC 7B13"}},
		{Labels: map[string]string{"node": "vm", "cpu": "1", "model_name": "AMD EPYC 7B13"}},
		{Labels: map[string]string{"node": "client-1", "cpu": "0", "model_name": "Neoverse-N1 "}},
		{Labels: map[string]string{"node": "client-1", "cpu": "1", "model_name": "Cortex-A55"}},
		{Labels: map[string]string{"cpu": "0", "model_name": "unmatched"}},
	}
	AddExporterInfo(nodes, uname, cpu)
	want := []Node{
		{Hostname: "vm", Kernel: "6.1.0-28-amd64", CPUModel: "AMD EPYC 7B13"},
		{Hostname: "client-1", Kernel: "6.8.0-1-arm64", CPUModel: "Cortex-A55 + Neoverse-N1"},
		{Hostname: "nothing-scraped"},
	}
	if !reflect.DeepEqual(nodes, want) {
		t.Errorf("got  %+v\nwant %+v", nodes, want)
	}
}
