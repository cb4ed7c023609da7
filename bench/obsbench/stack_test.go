package obsbench

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/compose"
	"github.com/protobench/protobench/internal/images"
	"github.com/protobench/protobench/internal/prom"
	"github.com/protobench/protobench/internal/swarm/swarmtest"
)

// TestSetSwitchesOnlyTheChosen pauses and unpauses real containers standing in for the stack:
// with cadvisor the only one switched, "off" must freeze it and leave the others running.
func TestSetSwitchesOnlyTheChosen(t *testing.T) {
	ctx, base := baseImage(t)
	st := &stack{containers: map[string]string{}, switched: []string{"cadvisor"}}
	for _, name := range stackServices {
		out, err := exec.CommandContext(ctx, "docker", "run", "-d", "--rm", "--label", "protobench.obsbench.test=1", base, "sleep", "120").CombinedOutput()
		if err != nil {
			t.Fatalf("docker run: %v: %s", err, out)
		}
		id := strings.TrimSpace(string(out))
		defer exec.Command("docker", "rm", "-f", id).Run()
		st.containers[name] = id
	}
	paused := func() map[string]bool {
		m := map[string]bool{}
		for name, id := range st.containers {
			out, err := exec.CommandContext(ctx, "docker", "inspect", "-f", "{{.State.Paused}}", id).Output()
			if err != nil {
				t.Fatal(err)
			}
			m[name] = strings.TrimSpace(string(out)) == "true"
		}
		return m
	}
	if err := st.set(ctx, false); err != nil {
		t.Fatal(err)
	}
	if p := paused(); !p["cadvisor"] || p["prometheus"] || p["node-exporter"] {
		t.Errorf("off with only cadvisor switched: paused %v, want cadvisor alone", p)
	}
	if err := st.set(ctx, true); err != nil {
		t.Fatal(err)
	}
	if p := paused(); p["cadvisor"] || p["prometheus"] || p["node-exporter"] {
		t.Errorf("on: paused %v, want none", p)
	}
	st.switched = nil
	if err := st.set(ctx, false); err != nil {
		t.Fatal(err)
	}
	if p := paused(); !p["cadvisor"] || !p["prometheus"] || !p["node-exporter"] {
		t.Errorf("off with all switched: paused %v, want all", p)
	}
	if err := st.set(ctx, true); err != nil {
		t.Fatal(err)
	}
}

// TestStackAndToolThroughTheEngine runs the bench's step for real, briefly: the native server
// (hostproc), the stack started by the Compose engine from the compose file with the bench's
// override, and one k6 trial through the engine's fast path, pushing to Prometheus. The
// containers must carry the compose file's cpusets, CPU weights and caps on the host network,
// Prometheus must scrape every job at the bench's addresses and receive k6's push, the switch
// must freeze only what it names, and the removal must leave nothing of the project: no
// container, no volume, no network. (k6 rather than our generator: its image does not change
// with the Go code, so the test needs no image built for the checkout at hand.)
func TestStackAndToolThroughTheEngine(t *testing.T) {
	if _, err := compose.CheckDocker(context.Background(), "docker"); errors.Is(err, compose.ErrDockerUnreachable) {
		t.Skipf("docker unreachable: %v", err)
	}
	swarmtest.ComposeStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	set, err := images.Ensure(ctx, images.Options{RepoRoot: root, Only: []string{images.Prometheus, images.Cadvisor, images.NodeExporter, images.K6}})
	if err != nil {
		t.Fatal(err)
	}
	o, err := parseFlags([]string{"--tool", "k6", "--duration", "2s", "--warmup", "0s", "--connections", "2", "--out", t.TempDir()}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	o.obsCPUs = stackCores(o.serverCore, o.clientCore, o.tool)
	srv, err := startServer(ctx, root, o)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.stop()
	st, err := startStack(ctx, root, o, set, srv.metrics)
	if err != nil {
		t.Fatal(err)
	}
	project := st.client.ProjectName()
	removed := false
	remove := func() {
		if removed {
			return
		}
		removed = true
		st.remove()
		for _, what := range [][]string{{"ps", "-aq"}, {"volume", "ls", "-q"}, {"network", "ls", "-q"}} {
			out, err := exec.Command("docker", append(what, "--filter", "label="+compose.ProjectLabel+"="+project)...).Output()
			if err != nil || len(bytes.TrimSpace(out)) > 0 {
				t.Errorf("docker %s after the removal: %q %v", strings.Join(what, " "), out, err)
			}
		}
	}
	defer remove()

	settings := strings.Join(st.settings, "\n")
	for _, name := range stackServices {
		out, err := exec.CommandContext(ctx, "docker", "inspect", "--format",
			`{{.HostConfig.NetworkMode}} {{.HostConfig.CpusetCpus}} {{.HostConfig.CpuShares}} {{index .Config.Labels "com.docker.compose.service"}}`, st.containers[name]).Output()
		if err != nil {
			t.Fatal(err)
		}
		if got, want := strings.TrimSpace(string(out)), "host "+o.obsCPUs+" 64 "+name; got != want {
			t.Errorf("%s: %q, want %q (compose's cpuset and weight, the bench's host network)", name, got, want)
		}
		if !strings.Contains(settings, name+" (started by compose; as docker inspect reads it back): --network host --cpuset-cpus "+o.obsCPUs+" --cpu-shares 64 ") {
			t.Errorf("settings lack %s's read-back line:\n%s", name, settings)
		}
	}

	name := project + "-k6-test"
	run, inv, err := k6Run(o, srv.addr, "http://"+st.promAddr, "t", name)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.note(ctx, run, "k6", o.outDir, io.Discard); err != nil {
		t.Fatal(err)
	}
	line := st.settings[len(st.settings)-1]
	for _, want := range []string{"--network host", "--cpus 1", "--cpuset-cpus " + strconv.Itoa(o.clientCore), "--memory 1073741824",
		"-e GOGC=400", "-e GOMEMLIMIT=858993456", "-e K6_PROMETHEUS_RW_SERVER_URL=http://" + st.promAddr + "/api/v1/write", "protobench.role=tool"} {
		if !strings.Contains(line, want) {
			t.Errorf("k6's docker run lacks %q: %s", want, line)
		}
	}
	tr, err := trialSched(o.outDir, "t", name, func() (trial, error) { return runK6(ctx, st, run, inv, o.outDir) })
	if err != nil {
		t.Fatal(err)
	}
	if tr.RPS <= 0 || tr.Wait == nil {
		t.Errorf("k6's run through the engine: %+v (wait %v), want requests and its threads' schedstat", tr, tr.Wait)
	}

	// Every job of the bench's configuration is up (the configuration reached Prometheus and
	// each address is right), and k6's push arrived.
	pc := prom.New("http://" + st.promAddr)
	deadline := time.Now().Add(time.Minute)
	for {
		up, err := pc.Query(ctx, "up", time.Time{})
		jobs := map[string]float64{}
		for _, s := range up {
			jobs[s.Labels["job"]] = s.Value
		}
		pushed, _ := pc.Query(ctx, `count({__name__=~"k6_.+"})`, time.Time{})
		if err == nil && jobs["cadvisor"] == 1 && jobs["node-exporter"] == 1 && jobs["servers"] == 1 && jobs["prometheus"] == 1 && len(pushed) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus' jobs after a minute: %v (%v); k6's series: %v", jobs, err, pushed)
		}
		time.Sleep(500 * time.Millisecond)
	}

	cpu := st.cpu()
	st.switched = []string{"node-exporter"}
	if err := st.set(ctx, false); err != nil {
		t.Fatal(err)
	}
	for _, name := range stackServices {
		out, _ := exec.CommandContext(ctx, "docker", "inspect", "-f", "{{.State.Paused}}", st.containers[name]).Output()
		if paused := strings.TrimSpace(string(out)) == "true"; paused != (name == "node-exporter") {
			t.Errorf("off with node-exporter switched: %s paused %v", name, paused)
		}
		if _, ok := cpu[name]; !ok {
			t.Errorf("%s: its cgroup's CPU time cannot be read", name)
		}
	}
	// Removing a stack left frozen must still take everything.
	remove()
}

// baseImage skips the test without a Docker daemon, and otherwise returns a context bounded for
// the test and the local base image's reference, built if this machine lacks it.
func baseImage(t *testing.T) (context.Context, string) {
	t.Helper()
	if _, err := compose.CheckDocker(context.Background(), "docker"); errors.Is(err, compose.ErrDockerUnreachable) {
		t.Skipf("docker unreachable: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	t.Cleanup(cancel)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	set, err := images.Ensure(ctx, images.Options{RepoRoot: root, Only: []string{images.Base}})
	if err != nil {
		t.Fatal(err)
	}
	return ctx, set[images.Base].Ref
}
