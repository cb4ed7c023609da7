package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/loadgen"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/swarm/nodes"
	"github.com/protobench/protobench/internal/swarm/swarmtest"
	"github.com/protobench/protobench/internal/tool/protobenchtool"
)

// TestSwarmThreeNodes is the several-host layout on one machine: two dockerds, each in its own
// network namespace with an image store of its own that starts empty, join this daemon's swarm
// over a LAN of veth pairs (internal/swarm/nodes); node 2 is labelled protobench.role=server,
// this node and node 3 client, and `protobench run --engine swarm` runs the main job's headline
// in cleartext and over TLS 1.3 (nodesOnly). Every request crosses the overlay's VXLAN over the
// LAN; the images reach nodes 2 and 3 the way they reach other hosts, through the registry the
// run starts (its image built by the run when missing), and the run's certificates as swarm
// configs.
//
// Our generator's steps are split across the two client nodes: each record must show both
// parts, each with its node and its own count, and the merged histogram's count must be the sum
// of the parts' (in the record and in the raw result files); the parts, given one shared start,
// must have measured one window (checkSharedWindow). Every record must say where each
// side ran and have throughput, and afterwards nothing of the project may be left. Where the
// machine refuses a step of the set-up, the test skips with the command that failed and its
// output.
func TestSwarmThreeNodes(t *testing.T) {
	pb := requireE2E(t, "a gRPC step split across two client nodes of a three-node swarm (--engine swarm)")
	docker := swarmtest.Docker()
	// Names and a LAN apart from the nodes package's own test, which may run at once.
	c, sw := nodes.Use(t, nodes.Options{Docker: docker, Name: "pbe2e", Nodes: 2, HostAddr: "10.77.2.1"})
	server, client := c.Nodes[0], c.Nodes[1]
	// About 4 minutes of work and the images' push and pull; the run first builds the
	// protobench image when the tree changed since the last build, hence the margin.
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	manager := dockerLines(t, docker, "node", "inspect", "--format", "{{.Description.Hostname}}", sw.NodeID)
	for _, n := range c.Nodes {
		if imgs, err := n.Docker(ctx, "images", "--quiet"); err != nil || imgs != "" {
			t.Fatalf("%s's image store is not empty at the start: %q %v", n.Hostname, imgs, err)
		}
	}
	for _, l := range []struct{ node, role string }{{server.NodeID, "server"}, {sw.NodeID, "client"}, {client.NodeID, "client"}} {
		if err := c.Label(ctx, l.node, "protobench.role", l.role); err != nil {
			t.Fatal(err)
		}
	}
	project := fmt.Sprintf("pbtest-nodes-%d", os.Getpid())
	t.Cleanup(func() { swarmtest.RemoveProject(t, docker, project) })

	dir := t.TempDir()
	out := filepath.Join(dir, "results")
	started := time.Now()
	output, err := pb.run(ctx, "run", "grpc-vs-rest", "--quick", "--only", nodesOnly, "--engine", "swarm", "--project", project, "--out", out, "--docker", docker)
	t.Logf("protobench run --engine swarm on three nodes (%s):\n%s", time.Since(started).Round(time.Second), output)
	if err != nil {
		t.Errorf("protobench run --engine swarm: %v", err)
	}
	checkNothingLeft(t, docker, project)
	// The server's and the tools' images reached the nodes, whose stores started empty, from
	// the run's registry (the registry's references name the project).
	for _, n := range c.Nodes {
		imgs, err := n.Docker(ctx, "images", "--format", "{{.Repository}}:{{.Tag}}")
		if err != nil || !strings.Contains(imgs, "/"+project+"/") {
			t.Errorf("%s holds no image from the run's registry: %q %v", n.Hostname, imgs, err)
		}
		t.Logf("images on %s: %s", n.Hostname, strings.Join(strings.Fields(imgs), " "))
	}

	dirs, _ := filepath.Glob(filepath.Join(out, "*-grpc-vs-rest"))
	if len(dirs) != 1 {
		t.Fatalf("expected one results folder under %s, found %v", out, dirs)
	}
	recs, err := results.Load(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	clients := []string{manager, client.Hostname}
	sort.Strings(clients)
	split := 0
	checkMainJobRecords(t, pb.root, nodesOnly, recs, func(name string, r record.Record) {
		if r.Engine != "swarm" || !strings.HasPrefix(r.Placement, "server="+server.Hostname+" client=") {
			t.Errorf("%s: engine %q, placement %q; want swarm, the server on %s", name, r.Engine, r.Placement, server.Hostname)
		}
		if r.HasFlag(record.FlagSharedCores) {
			t.Errorf("%s: flags %v: shared-cores on a placement of server and clients apart", name, r.Flags)
		}
		if r.Tool == "protobench" {
			split++
			if want := fmt.Sprintf("server=%s client=%s", server.Hostname, strings.Join(clients, ",")); r.Placement != want {
				t.Errorf("%s: placement %q, want %q (the load split across both client nodes)", name, r.Placement, want)
			}
			checkSplitRecord(t, dirs[0], name, r, clients)
		} else {
			node := strings.TrimPrefix(r.Placement, "server="+server.Hostname+" client=")
			if node != clients[0] && node != clients[1] || !strings.Contains(strings.Join(r.Notes, " "), "ran on one of 2 client nodes") {
				t.Errorf("%s: placement %q, notes %v: want one client node and the note that the tool could not split its load", name, r.Placement, r.Notes)
			}
		}
		// The server's CPU comes from the cAdvisor task on node 2, scraped across the overlay
		// by Prometheus on node 1 (checkMainJobRecords checks it is there).
		t.Logf("%s on %s: %.0f req/s, server CPU %.2f s", name, r.Placement, r.ThroughputRPS, r.ServerCPUSeconds)
	})
	if split != 4 {
		t.Errorf("%d records of our generator, want the headline's four (grpc and rest, cleartext and TLS), each split", split)
	}

	var info struct {
		Swarm *struct {
			Nodes []struct {
				Hostname string `json:"hostname"`
			} `json:"nodes"`
			Placement string `json:"placement"`
		} `json:"swarm"`
	}
	b, err := os.ReadFile(filepath.Join(dirs[0], "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &info); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("servers=%s clients=%s", server.Hostname, strings.Join(clients, ","))
	if info.Swarm == nil || len(info.Swarm.Nodes) != 3 || info.Swarm.Placement != want {
		t.Errorf("run.json's swarm section lists %+v, want all three nodes and placement %q", info.Swarm, want)
	}
}

// checkSplitRecord checks a record of a step our generator split across the client nodes: two
// parts, one on each client node, each with requests and its own histogram's count; the
// record's count (the merged histogram's) the parts' sum, as the raw result files say too.
func checkSplitRecord(t *testing.T, dir, name string, r record.Record, clients []string) {
	t.Helper()
	if len(r.ClientParts) != 2 {
		t.Errorf("%s: %d parts in the record, want 2: %+v", name, len(r.ClientParts), r.ClientParts)
		return
	}
	var requests, count int64
	var onNodes []string
	for _, p := range r.ClientParts {
		if p.Requests <= 0 || p.LatencyCount <= 0 || p.ThroughputRPS <= 0 || p.Error != "" {
			t.Errorf("%s: part %d on %s measured %d requests, %d latencies, %.0f req/s (%s)", name, p.Part, p.Node, p.Requests, p.LatencyCount, p.ThroughputRPS, p.Error)
		}
		requests += p.Requests
		count += p.LatencyCount
		onNodes = append(onNodes, p.Node)
	}
	sort.Strings(onNodes)
	if strings.Join(onNodes, ",") != strings.Join(clients, ",") {
		t.Errorf("%s: parts ran on %v, want one on each client node %v", name, onNodes, clients)
	}
	if r.LatencyCount != count || r.Requests != requests {
		t.Errorf("%s: the merged histogram holds %d latencies of %d requests, the parts %d of %d", name, r.LatencyCount, r.Requests, count, requests)
	}
	if !strings.Contains(strings.Join(r.Notes, " "), "load split among 2 client nodes, histograms merged") {
		t.Errorf("%s: no note of the split: %v", name, r.Notes)
	}
	checkSharedWindow(t, name, r)
	// The raw files: the merged result's histogram holds the record's count, each part's the
	// part's.
	counts := map[string]int64{}
	for _, f := range r.RawFiles {
		if !resultFile.MatchString(f) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		res, err := protobenchtool.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		h, err := loadgen.DecodeHistogram(res.Histograms.Latency)
		if err != nil {
			t.Fatalf("%s: histograms.latency: %v", f, err)
		}
		counts[resultFile.FindStringSubmatch(f)[1]] = h.TotalCount()
	}
	want := map[string]int64{"": r.LatencyCount}
	for _, p := range r.ClientParts {
		want[fmt.Sprintf(".part%d", p.Part)] = p.LatencyCount
	}
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Errorf("%s: histogram counts in the raw result files %v, the record's %v (\"\" is the merged one)", name, counts, want)
	}
	p1, p2 := r.ClientParts[0], r.ClientParts[1]
	t.Logf("%s: part %d on %s %d requests (%d latencies, %.0f req/s), part %d on %s %d requests (%d latencies, %.0f req/s); merged histogram %d latencies, %d requests, %.0f req/s, p99 %.3f ms",
		name, p1.Part, p1.Node, p1.Requests, p1.LatencyCount, p1.ThroughputRPS, p2.Part, p2.Node, p2.Requests, p2.LatencyCount, p2.ThroughputRPS,
		r.LatencyCount, r.Requests, r.ThroughputRPS, r.LatencyMs.P99)
}

// checkSharedWindow checks that the parts of a split step, given one shared start by the engine,
// waited for it and measured one window: their windows begin and end within
// record.PartsApartFraction of the window (50 ms of the quick run's 5 s; started as their tasks
// came up they were up to 1.4 s apart), none was late, the record is not flagged parts-apart,
// and its throughput is the sum of the parts' rates. It logs the offsets and the waits.
func checkSharedWindow(t *testing.T, name string, r record.Record) {
	t.Helper()
	p1, p2 := r.ClientParts[0], r.ClientParts[1]
	if p1.Start.IsZero() || p2.Start.IsZero() || !p1.End.After(p1.Start) || !p2.End.After(p2.Start) {
		t.Errorf("%s: parts' windows %s–%s and %s–%s, want both measured", name, p1.Start, p1.End, p2.Start, p2.End)
		return
	}
	startOff, endOff := p2.Start.Sub(p1.Start), p2.End.Sub(p1.End)
	window := min(p1.End.Sub(p1.Start), p2.End.Sub(p2.Start))
	tolerance := time.Duration(record.PartsApartFraction * float64(window))
	t.Logf("%s: part %d's window %s–%s, part %d's %s: starts %+.3f ms apart, ends %+.3f ms (tolerance %s); waited %.3f s and %.3f s for the shared start, late %.3f s and %.3f s",
		name, p1.Part, p1.Start.Format("15:04:05.000000"), p1.End.Format("15:04:05.000000"), p2.Part, p2.Start.Format("15:04:05.000000"),
		float64(startOff)/1e6, float64(endOff)/1e6, tolerance, p1.StartWaitS, p2.StartWaitS, p1.StartLateS, p2.StartLateS)
	if startOff.Abs() > tolerance || endOff.Abs() > tolerance {
		t.Errorf("%s: the parts' windows start %s and end %s apart, more than %s: they did not measure one window", name, startOff, endOff, tolerance)
	}
	for _, p := range r.ClientParts {
		if p.StartLateS > 0 || p.StartWaitS <= 0 {
			t.Errorf("%s: part %d was %.3f s late for the shared start (waited %.3f s)", name, p.Part, p.StartLateS, p.StartWaitS)
		}
	}
	if r.HasFlag(record.FlagPartsApart) || r.HasFlag(record.FlagLateStart) {
		t.Errorf("%s: flags %v", name, r.Flags)
	}
	if sum := p1.ThroughputRPS + p2.ThroughputRPS; math.Abs(r.ThroughputRPS-sum) > 0.01 {
		t.Errorf("%s: throughput %.3f req/s, want the sum of the parts' rates %.3f", name, r.ThroughputRPS, sum)
	}
}

// resultFile matches our generator's result files under raw/, the merged one and the parts'
// (<run>.json, <run>.part<k>.json), capturing the part's suffix.
var resultFile = regexp.MustCompile(`^raw/[^/]*?-protobench-r[0-9]+(\.part[0-9]+)?\.json$`)

// checkNothingLeft checks that no object of the project is left on the manager: services,
// networks, configs, secrets, volumes (the registry's storage), containers (a removed service's go shortly after it) and the
// registry's image references.
func checkNothingLeft(t *testing.T, docker, project string) {
	t.Helper()
	label := "label=protobench.project=" + project
	for _, kind := range []string{"service", "network", "config", "secret", "volume"} {
		if left := dockerLines(t, docker, kind, "ls", "-q", "--filter", label); left != "" {
			t.Errorf("%ss of project %s left behind: %s", kind, project, left)
		}
	}
	var left string
	for i := 0; i < 60; i++ {
		if left = dockerLines(t, docker, "ps", "--all", "--quiet", "--filter", label); left == "" {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if left != "" {
		t.Errorf("containers of project %s left behind: %s", project, left)
	}
	for _, ref := range strings.Fields(dockerLines(t, docker, "images", "--format", "{{.Repository}}:{{.Tag}}")) {
		if strings.Contains(ref, "/"+project+"/") {
			t.Errorf("image reference of project %s left behind: %s", project, ref)
		}
	}
}

// nodesOnly is the headline in cleartext and over TLS 1.3, our generator only: its load splits
// across the two client nodes, and the run's certificates must reach the server's node and
// both clients'. The other tools cannot split; TestSwarmEndToEnd runs each of them on a swarm.
const nodesOnly = "getuse[r],getuser-tls-tls"
