package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/prom"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/swarm/swarmtest"
)

// The fault tests run the real CLI against the real stack, each in its own compose project, and
// hurt it the way the issue lists: signals, a hung docker, a dying server, a paused tool, a
// paused Prometheus, a full disk, a decoy of another project. Every one ends by checking that no
// container of its project is left.

// syncBuffer collects a process's output while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// cliRun is one protobench process.
type cliRun struct {
	t    *testing.T
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	code int
}

type faultEnv struct {
	cli
	work string
}

func newFaultEnv(t *testing.T) *faultEnv {
	t.Helper()
	c := requireE2E(t, "the fault tests against the compose stack")
	swarmtest.ComposeStack(t)
	return &faultEnv{cli: c, work: t.TempDir()}
}

// start runs the CLI with args and extra environment.
func (e *faultEnv) start(t *testing.T, env []string, args ...string) *cliRun {
	t.Helper()
	cmd := e.command(context.Background(), env, args...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &cliRun{t: t, cmd: cmd, out: out, done: make(chan struct{}), code: -1}
	go func() {
		err := cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok {
			r.code = ee.ExitCode()
		} else if err == nil {
			r.code = 0
		}
		close(r.done)
	}()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			cmd.Process.Kill()
			<-r.done
		}
	})
	return r
}

// run runs the CLI to its end and returns its exit status and output.
func (e *faultEnv) run(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	r := e.start(t, env, args...)
	return r.wait(15 * time.Minute), r.out.String()
}

// waitOutput waits until the output holds s.
func (r *cliRun) waitOutput(s string, within time.Duration) {
	r.t.Helper()
	deadline := time.Now().Add(within)
	for !strings.Contains(r.out.String(), s) {
		select {
		case <-r.done:
			r.t.Fatalf("protobench ended (status %d) before printing %q:\n%s", r.code, s, r.out.String())
		default:
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("protobench did not print %q within %s:\n%s", s, within, r.out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (r *cliRun) signal(sig os.Signal) {
	r.t.Helper()
	if err := r.cmd.Process.Signal(sig); err != nil {
		r.t.Fatalf("signal %v: %v", sig, err)
	}
}

// wait waits for the process to end and returns its exit status.
func (r *cliRun) wait(within time.Duration) int {
	r.t.Helper()
	select {
	case <-r.done:
		return r.code
	case <-time.After(within):
		r.t.Fatalf("protobench still running after %s:\n%s", within, r.out.String())
	}
	return -1
}

func docker(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func projectContainers(t *testing.T, project string) []string {
	t.Helper()
	return strings.Fields(docker(t, "ps", "-aq", "--filter", "label=com.docker.compose.project="+project))
}

// project names a compose project for one test and removes whatever it leaves, by its label.
func project(t *testing.T, name string) string {
	p := fmt.Sprintf("pbfault-%s-%d", name, os.Getpid())
	t.Cleanup(func() {
		if ids := strings.Fields(docker(t, "ps", "-aq", "--filter", "label=com.docker.compose.project="+p)); len(ids) > 0 {
			exec.Command("docker", append([]string{"rm", "-f"}, ids...)...).Run()
		}
		exec.Command("docker", "network", "rm", p+"_default").Run()
		exec.Command("docker", "volume", "rm", "-f", p+"_prometheus-data").Run()
	})
	return p
}

func assertNoContainers(t *testing.T, project string) {
	t.Helper()
	if ids := projectContainers(t, project); len(ids) > 0 {
		t.Errorf("containers of project %s left behind: %v", project, ids)
	}
}

// scenarioFile writes a scenario named name into the work folder.
func (e *faultEnv) scenarioFile(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(e.work, name+".yaml")
	if err := os.WriteFile(path, []byte("name: "+name+"\n"+body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// resultsDir is the one results folder under out.
func resultsDir(t *testing.T, out string) string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(out, "*"))
	if len(dirs) != 1 {
		t.Fatalf("want one results folder under %s, found %v", out, dirs)
	}
	return dirs[0]
}

func loadRecords(t *testing.T, dir string) []record.Record {
	t.Helper()
	recs, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func key(r record.Record) string {
	return fmt.Sprintf("%s/%s/%s/%d", r.Step, r.Target, r.Tool, r.Repeat)
}

// assertComplete checks that recs hold exactly want runs, each once and each without error.
func assertComplete(t *testing.T, recs []record.Record, want int) {
	t.Helper()
	seen := map[string]int{}
	for _, r := range recs {
		seen[key(r)]++
		if !r.Valid() || r.ThroughputRPS <= 0 {
			t.Errorf("%s: error %q, throughput %.1f", key(r), r.Error, r.ThroughputRPS)
		}
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s recorded %d times", k, n)
		}
	}
	if len(seen) != want {
		t.Errorf("%d distinct runs recorded, want %d", len(seen), want)
	}
}

const threeRuns = `description: three short runs for the fault tests
defaults: {warmup: 1s, duration: 2s, repeats: 1, cooldown: 0s}
steps:
  - name: a
    targets: [grpc, rest, netrpc]
    tools: [protobench]
    method: Echo
    payload_bytes: 64
    connections: 2
    concurrency: 1
`

// TestFaultInterruptThenResume: Ctrl-C mid-run exits 130 with the partial results written and no
// container left; status counts what is done; a resume with other flags or another scenario is
// refused with 2; the real resume finishes with every run recorded once; kill -9 of the CLI is
// also resumable.
func TestFaultInterruptThenResume(t *testing.T) {
	e := newFaultEnv(t)
	p := project(t, "intr")
	sc := e.scenarioFile(t, "intr", threeRuns)
	out := filepath.Join(e.work, "out")

	r := e.start(t, nil, "run", sc, "--out", out, "--project", p)
	r.waitOutput("[2/3]", 10*time.Minute)
	r.signal(syscall.SIGINT)
	if code := r.wait(2 * time.Minute); code != 130 {
		t.Fatalf("exit status after SIGINT = %d, want 130:\n%s", code, r.out.String())
	}
	assertNoContainers(t, p)
	dir := resultsDir(t, out)
	recs := loadRecords(t, dir)
	if len(recs) == 0 || !recs[0].Valid() {
		t.Fatalf("the run measured before the signal is not kept: %+v", recs)
	}
	if _, err := os.Stat(filepath.Join(dir, "summary.md")); err != nil {
		t.Errorf("no summary after an interrupted run: %v", err)
	}
	before, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}

	code, status := e.run(t, nil, "status", dir)
	if code != 0 || !strings.Contains(status, "of 3 runs done") || !strings.Contains(status, "--resume "+dir) {
		t.Errorf("status (exit %d):\n%s", code, status)
	}

	code, msg := e.run(t, nil, "run", "--resume", dir, "--quick", "--project", p)
	if code != 2 || !strings.Contains(msg, "--quick") {
		t.Errorf("resume with --quick: exit %d, want 2 naming --quick:\n%s", code, msg)
	}
	changed := e.scenarioFile(t, "intr", strings.Replace(threeRuns, "three short runs", "three other runs", 1))
	code, msg = e.run(t, nil, "run", changed, "--resume", dir, "--project", p)
	if code != 2 || !strings.Contains(msg, "sha256") {
		t.Errorf("resume with another scenario: exit %d, want 2 naming the hash:\n%s", code, msg)
	}
	assertNoContainers(t, p)

	// kill -9 leaves the containers: `down --project` removes them, and the resume continues.
	r = e.start(t, nil, "run", "--resume", dir, "--project", p)
	r.waitOutput("protobench: starting", 10*time.Minute)
	r.signal(syscall.SIGKILL)
	r.wait(time.Minute)
	if code, msg := e.run(t, nil, "down", "--project", p); code != 0 {
		t.Fatalf("down after kill -9: exit %d\n%s", code, msg)
	}
	assertNoContainers(t, p)

	code, msg = e.run(t, nil, "run", "--resume", dir, "--project", p)
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s", code, msg)
	}
	assertComplete(t, loadRecords(t, dir), 3)
	var first, after RunInfoJSON
	json.Unmarshal(before, &first)
	b, _ := os.ReadFile(filepath.Join(dir, "run.json"))
	json.Unmarshal(b, &after)
	if !after.Started.Equal(first.Started) || after.RunID != first.RunID {
		t.Errorf("run.json's original metadata changed: started %v -> %v", first.Started, after.Started)
	}
	if len(after.Resumes) < 2 {
		t.Errorf("run.json records %d resumes, want the killed one and the finished one", len(after.Resumes))
	}
	assertNoContainers(t, p)
}

// RunInfoJSON is the part of run.json these tests read.
type RunInfoJSON struct {
	RunID         string            `json:"run_id"`
	Started       time.Time         `json:"started"`
	PrometheusURL string            `json:"prometheus_url"`
	Resumes       []json.RawMessage `json:"resumes"`
}

// TestFaultSignals: SIGHUP and SIGTERM mid-run exit 129 and 143, Ctrl-C during start-up 130,
// each with no container left.
func TestFaultSignals(t *testing.T) {
	e := newFaultEnv(t)
	sc := e.scenarioFile(t, "sig", threeRuns)
	for _, c := range []struct {
		name  string
		sig   syscall.Signal
		after string
		want  int
	}{
		{"hup", syscall.SIGHUP, "[1/3]", 129},
		{"startup", syscall.SIGINT, "protobench: starting", 130},
		{"term", syscall.SIGTERM, "[2/3]", 143},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := project(t, "sig"+c.name)
			r := e.start(t, nil, "run", sc, "--out", filepath.Join(e.work, c.name), "--project", p)
			r.waitOutput(c.after, 10*time.Minute)
			r.signal(c.sig)
			if code := r.wait(2 * time.Minute); code != c.want {
				t.Errorf("exit status = %d, want %d:\n%s", code, c.want, r.out.String())
			}
			assertNoContainers(t, p)
		})
	}
}

// standInDocker writes a docker CLI and a compose CLI that pass through to the real ones until
// the file hang exists, and from then on never answer.
func standInDocker(t *testing.T, dir string) (dockerCLI, composeCLI, hang string) {
	t.Helper()
	hang = filepath.Join(dir, "hang")
	realCompose, err := exec.LookPath("docker-compose")
	composeCmd := realCompose
	if err != nil {
		composeCmd = "docker compose"
	}
	realDocker, err := exec.LookPath("docker")
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, target string) string {
		path := filepath.Join(dir, name)
		script := fmt.Sprintf("#!/bin/sh\nif [ -e %q ]; then exec sleep 3600; fi\nexec %s \"$@\"\n", hang, target)
		if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}
	return write("docker", realDocker), write("docker-compose", composeCmd), hang
}

// TestFaultSecondSignalWhileDockerHangs: once docker stops answering, a first Ctrl-C starts the
// graceful cleanup, which hangs; the second skips it, and the CLI exits 130 at once, saying what
// it left behind and how to remove it.
func TestFaultSecondSignalWhileDockerHangs(t *testing.T) {
	e := newFaultEnv(t)
	p := project(t, "hang")
	sc := e.scenarioFile(t, "hang", threeRuns)
	dockerCLI, composeCLI, hang := standInDocker(t, t.TempDir())
	t.Cleanup(func() { os.Remove(hang) })
	env := []string{"PROTOBENCH_DOCKER=" + dockerCLI, "PROTOBENCH_COMPOSE=" + composeCLI}
	r := e.start(t, env, "run", sc, "--out", filepath.Join(e.work, "hang"), "--project", p)
	r.waitOutput("[1/3]", 10*time.Minute)
	if err := os.WriteFile(hang, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r.signal(syscall.SIGINT)
	time.Sleep(2 * time.Second)
	r.signal(syscall.SIGINT)
	code := r.wait(45 * time.Second)
	out := r.out.String()
	if code != 130 {
		t.Errorf("exit status = %d, want 130:\n%s", code, out)
	}
	for _, want := range []string{"left behind", "label=com.docker.compose.project=" + p} {
		if !strings.Contains(out, want) {
			t.Errorf("cleanup message lacks %q:\n%s", want, out)
		}
	}
	if len(projectContainers(t, p)) == 0 {
		t.Errorf("docker hung, yet nothing was left behind: the stand-in did not hang")
	}
	t.Logf("protobench said:\n%s", out)
	// The project's own cleanup (t.Cleanup) removes them with the real docker.
}

// TestFaultDaemonStopsAnswering: docker hangs mid-run without any signal; the run ends with one
// message naming it, keeping what it measured.
func TestFaultDaemonStopsAnswering(t *testing.T) {
	e := newFaultEnv(t)
	p := project(t, "gone")
	sc := e.scenarioFile(t, "gone", threeRuns)
	dockerCLI, composeCLI, hang := standInDocker(t, t.TempDir())
	t.Cleanup(func() { os.Remove(hang) })
	env := []string{"PROTOBENCH_DOCKER=" + dockerCLI, "PROTOBENCH_COMPOSE=" + composeCLI}
	out := filepath.Join(e.work, "gone")
	r := e.start(t, env, "run", sc, "--out", out, "--project", p)
	r.waitOutput("[2/3]", 10*time.Minute)
	if err := os.WriteFile(hang, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code := r.wait(4 * time.Minute)
	msg := r.out.String()
	if code != 1 || !strings.Contains(msg, "Docker stopped answering") {
		t.Errorf("exit %d, want 1 with 'Docker stopped answering':\n%s", code, msg)
	}
	t.Logf("protobench said:\n%s", msg)
	recs := loadRecords(t, resultsDir(t, out))
	if len(recs) == 0 || !recs[0].Valid() {
		t.Errorf("the run measured before docker hung is not kept: %+v", recs)
	}
}

// TestFaultServerAndTool: a server OOM-killed at its cap, a server killed mid-step and a paused
// load tool each fail their own run with a clear error and flag, the server's log is kept, and
// the run goes on; a decoy `rest` container of another project spinning a core is not counted.
func TestFaultServerAndTool(t *testing.T) {
	e := newFaultEnv(t)
	p := project(t, "srv")
	decoyProject := project(t, "decoy")
	sc := e.scenarioFile(t, "srv", `description: server and tool faults
defaults: {warmup: 1s, duration: 4s, repeats: 1, cooldown: 0s}
steps:
  - name: oom
    targets: [grpc]
    tools: [protobench]
    method: Echo
    payload_bytes: 8MiB
    connections: 32
    concurrency: 1
    caps: {server_memory: 48MiB}
  - name: killed
    targets: [netrpc]
    tools: [protobench]
    method: Echo
    payload_bytes: 64
    connections: 2
    concurrency: 1
    duration: 8s
  - name: paused
    targets: [grpc]
    tools: [protobench]
    method: Echo
    payload_bytes: 64
    connections: 2
    concurrency: 1
  - name: after
    targets: [rest]
    tools: [protobench]
    method: GetUser
    connections: 2
    concurrency: 1
    duration: 6s
`)
	// The decoy: another project's `rest`, spinning half a core for the whole test.
	image := docker(t, "images", "--format", "{{.Repository}}:{{.Tag}}", "protobench/base:latest")
	if image == "" {
		t.Skip("protobench/base:latest is missing (protobench images build)")
	}
	decoy := docker(t, "run", "-d", "--cpus", "0.5",
		"--label", "com.docker.compose.project="+decoyProject, "--label", "com.docker.compose.service=rest",
		"--label", "com.docker.compose.oneoff=False",
		image, "sh", "-c", "while :; do :; done")
	t.Cleanup(func() { exec.Command("docker", "rm", "-f", decoy).Run() })

	out := filepath.Join(e.work, "srv")
	r := e.start(t, nil, "run", sc, "--out", out, "--project", p, "--keep-up")
	t.Cleanup(func() { e.run(t, nil, "down", "--project", p) })

	r.waitOutput("[2/4] killed", 15*time.Minute)
	killServer := func() bool {
		ids := strings.Fields(docker(t, "ps", "-q", "--filter", "label=com.docker.compose.project="+p,
			"--filter", "label=com.docker.compose.service=netrpc", "--filter", "status=running"))
		if len(ids) == 0 {
			return false
		}
		// Into the 8 s step; a kill that comes earlier, before the server is healthy, is
		// diagnosed the same way.
		time.Sleep(4 * time.Second)
		docker(t, "kill", ids[0])
		return true
	}
	deadline := time.Now().Add(2 * time.Minute)
	for !killServer() {
		if time.Now().After(deadline) {
			t.Fatalf("the netrpc server never ran:\n%s", r.out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}

	r.waitOutput("[3/4] paused", 5*time.Minute)
	tool := p + "-loadgen"
	deadline = time.Now().Add(2 * time.Minute)
	for {
		if st, err := exec.Command("docker", "inspect", "--format", "{{.State.Running}}", tool).Output(); err == nil && strings.TrimSpace(string(st)) == "true" {
			docker(t, "pause", tool)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the load tool container %s never ran:\n%s", tool, r.out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}

	code := r.wait(10 * time.Minute)
	if code != 1 {
		t.Errorf("exit status = %d, want 1 (some runs failed):\n%s", code, r.out.String())
	}
	dir := resultsDir(t, out)
	recs := loadRecords(t, dir)
	byStep := map[string]record.Record{}
	for _, rec := range recs {
		byStep[rec.Step] = rec
	}
	checks := []struct{ step, flag, text string }{
		{"oom", "server-fault", "OOM-killed at its 48 MiB cap"},
		{"killed", "server-fault", "exited with code 137"},
		{"paused", "timeout", "timeout"},
	}
	for _, c := range checks {
		rec, ok := byStep[c.step]
		if !ok {
			t.Errorf("no record for step %s", c.step)
			continue
		}
		if !strings.Contains(rec.Error, c.text) || !rec.HasFlag(c.flag) {
			t.Errorf("step %s: error %q flags %v, want %q and flag %s", c.step, rec.Error, rec.Flags, c.text, c.flag)
		}
	}
	for _, step := range []string{"oom", "killed"} {
		logs, _ := filepath.Glob(filepath.Join(dir, "raw", "*"+step+"*.server.*.log"))
		if len(logs) == 0 {
			t.Errorf("step %s: the server's log is not in raw/", step)
		}
	}
	after, ok := byStep["after"]
	if !ok || !after.Valid() || after.ThroughputRPS <= 0 {
		t.Fatalf("the run did not go on after the faults: %+v", after)
	}

	// The decoy ran beside the `after` step: Prometheus counts it under service rest, and the
	// record must not.
	b, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var info RunInfoJSON
	if err := json.Unmarshal(b, &info); err != nil {
		t.Fatal(err)
	}
	pc := prom.New(info.PrometheusURL)
	start, end := time.Unix(0, int64(after.StartUnix*1e9)), time.Unix(0, int64(after.EndUnix*1e9))
	ctx := context.Background()
	// Read the way the runner reads its record (raw samples around the window, interpolated
	// at its ends): increase() over a short window under-reads by up to a fifth, which would
	// eat the margin this check has.
	decoyCPU, ok1, err1 := pc.Increase(ctx, fmt.Sprintf(`container_cpu_usage_seconds_total{container_label_com_docker_compose_project=%q}`, decoyProject), start, end)
	anyRest, ok2, err2 := pc.Increase(ctx, `container_cpu_usage_seconds_total{container_label_com_docker_compose_service="rest"}`, start, end)
	if err1 != nil || err2 != nil || !ok1 || !ok2 || decoyCPU <= 0 {
		t.Fatalf("Prometheus did not see the decoy: %v %v %v %v %v", decoyCPU, ok1, ok2, err1, err2)
	}
	t.Logf("after step: the record's server CPU %.3f s; every rest %.3f s, the decoy %.3f s", after.ServerCPUSeconds, anyRest, decoyCPU)
	if after.ServerCPUSeconds <= 0 || after.ServerCPUSeconds > anyRest-decoyCPU/2 {
		t.Errorf("server CPU of rest %.3f s counts the decoy (every rest: %.3f s, decoy: %.3f s)", after.ServerCPUSeconds, anyRest, decoyCPU)
	}
}

// TestFaultObservabilityDown: Prometheus paused and cAdvisor stopped mid-run: the runs still
// measure throughput, the CPU figures are missing with a warning, and nothing is left behind.
func TestFaultObservabilityDown(t *testing.T) {
	e := newFaultEnv(t)
	p := project(t, "obs")
	sc := e.scenarioFile(t, "obs", threeRuns)
	out := filepath.Join(e.work, "obs")
	r := e.start(t, nil, "run", sc, "--out", out, "--project", p)
	// Only the last run loses its observability: each such run waits out the Prometheus
	// timeouts, and one shows the point.
	r.waitOutput("[3/3]", 10*time.Minute)
	find := func(service string) string {
		ids := strings.Fields(docker(t, "ps", "-q", "--filter", "label=com.docker.compose.project="+p, "--filter", "label=com.docker.compose.service="+service))
		if len(ids) == 0 {
			t.Fatalf("no %s container in project %s", service, p)
		}
		return ids[0]
	}
	docker(t, "pause", find("prometheus"))
	docker(t, "stop", find("cadvisor"))
	code := r.wait(10 * time.Minute)
	recs := loadRecords(t, resultsDir(t, out))
	if len(recs) != 3 {
		t.Errorf("%d records, want 3 (exit %d):\n%s", len(recs), code, r.out.String())
	}
	for _, rec := range recs {
		if rec.ThroughputRPS <= 0 {
			t.Errorf("%s: no throughput without Prometheus: %q", key(rec), rec.Error)
			for _, f := range rec.RawFiles {
				b, _ := os.ReadFile(filepath.Join(resultsDir(t, out), f))
				t.Logf("%s:\n%s", f, b)
			}
		}
	}
	if !strings.Contains(r.out.String(), "warning") {
		t.Errorf("no warning about the missing figures:\n%s", r.out.String())
	}
	t.Logf("protobench said:\n%s", r.out.String())
	assertNoContainers(t, p)
}

// TestFaultDiskFull: --out on a small tmpfs that fills up mid-run: the run fails clearly, the
// records written before stay readable, and nothing is left behind.
func TestFaultDiskFull(t *testing.T) {
	e := newFaultEnv(t)
	if os.Getuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	p := project(t, "disk")
	sc := e.scenarioFile(t, "disk", threeRuns)
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("mount tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	r := e.start(t, nil, "run", sc, "--out", mnt, "--project", p)
	r.waitOutput("[2/3]", 10*time.Minute)
	// Fill what is left of the disk.
	exec.Command("dd", "if=/dev/zero", "of="+filepath.Join(mnt, "filler"), "bs=64k").Run()
	code := r.wait(5 * time.Minute)
	msg := r.out.String()
	if code != 1 || !strings.Contains(msg, "no space left on device") {
		t.Errorf("exit %d, want 1 naming the full disk:\n%s", code, msg)
	}
	dirs, _ := filepath.Glob(filepath.Join(mnt, "*-disk"))
	if len(dirs) != 1 {
		t.Fatalf("results folder: %v", dirs)
	}
	recs := loadRecords(t, dirs[0])
	if len(recs) == 0 || !recs[0].Valid() {
		t.Errorf("the records written before the disk filled are lost: %+v", recs)
	}
	assertNoContainers(t, p)
}

// TestFaultInterruptDuringBuild: Ctrl-C while the protobench image builds exits 130 at once and
// leaves no results folder. The build runs from a copy of the checkout with one extra source
// file, so its image is certainly not built yet.
func TestFaultInterruptDuringBuild(t *testing.T) {
	e := newFaultEnv(t)
	p := project(t, "build")
	copyRoot := filepath.Join(t.TempDir(), "checkout")
	cp := exec.Command("sh", "-c", `mkdir -p "$2" && cd "$1" && tar --exclude=./.git --exclude=./results --exclude=./bin -cf - . | tar -C "$2" -xf -`, "sh", e.root, copyRoot)
	if out, err := cp.CombinedOutput(); err != nil {
		t.Fatalf("copy the checkout: %v %s", err, out)
	}
	marker := fmt.Sprintf("package main\n\n// build marker %d: makes this copy's image differ from every built one\n", time.Now().UnixNano())
	if err := os.WriteFile(filepath.Join(copyRoot, "cmd", "protobench", "zz_fault_marker.go"), []byte(marker), 0o644); err != nil {
		t.Fatal(err)
	}
	sc := e.scenarioFile(t, "build", threeRuns)
	out := filepath.Join(e.work, "build-out")
	r := e.start(t, []string{"PROTOBENCH_ROOT=" + copyRoot}, "run", sc, "--out", out, "--project", p)
	// The build's progress line, printed after its first 10 s.
	r.waitOutput("images: protobench/protobench:", 10*time.Minute)
	r.signal(syscall.SIGINT)
	if code := r.wait(2 * time.Minute); code != 130 {
		t.Errorf("exit status = %d, want 130:\n%s", code, r.out.String())
	}
	entries, _ := os.ReadDir(out)
	if len(entries) != 0 {
		t.Errorf("an interrupted build left %v under --out", entries)
	}
	assertNoContainers(t, p)
	t.Logf("protobench said:\n%s", r.out.String())
}
