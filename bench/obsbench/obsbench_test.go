package obsbench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/protobench/protobench/internal/prom/promtest"
	"github.com/protobench/protobench/internal/tool"
	"github.com/protobench/protobench/internal/tool/k6"
)

func TestFlagsRejectBadInput(t *testing.T) {
	cases := map[string][]string{
		"--repeats":          {"--repeats", "-1"},
		"are both 1":         {"--server-core", "1", "--client-core", "1"},
		"--scrape-interval":  {"--scrape-interval", "often"},
		"--cpu-shares":       {"--cpu-shares", "1"},
		"--housekeeping":     {"--housekeeping", "-1s"},
		"--duration":         {"--duration", "10ms"},
		"unexpected":         {"extra"},
		"--design":           {"--design", "random"},
		"--concurrency":      {"--concurrency", "0"},
		"k6's remote write":  {"--tool", "k6", "--design", "blocks"},
		"--block":            {"--block", "1s", "--settle", "1s"},
		"--k6-remote-write":  {"--k6-remote-write=false"},
		"needs --tool k6":    {"--k6-push-interval", "50ms"},
		"remote write on":    {"--tool", "k6", "--k6-remote-write=false", "--k6-push-interval", "50ms"},
		"--k6-push-interval": {"--tool", "k6", "--k6-push-interval", "often"},
		`"grafana" is not`:   {"--switch", "cadvisor,grafana"},
	}
	for want, args := range cases {
		_, err := parseFlags(args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: error %v, want one naming %q", args, err, want)
		}
	}
	if _, err := parseFlags([]string{"--repeats", "3", "--duration", "5s"}, io.Discard); err != nil {
		t.Errorf("valid flags refused: %v", err)
	}
	if o, err := parseFlags([]string{"--tool", "k6", "--k6-push-interval", "50ms"}, io.Discard); err != nil || o.k6PushInterval != "50ms" {
		t.Errorf("--tool k6 --k6-push-interval 50ms: %q %v", o.k6PushInterval, err)
	}
	o, err := parseFlags([]string{"--switch", "cadvisor, prometheus,cadvisor"}, io.Discard)
	if err != nil || !slices.Equal(o.switched, []string{"cadvisor", "prometheus"}) {
		t.Errorf("--switch cadvisor, prometheus,cadvisor: %v %v, want [cadvisor prometheus]", o.switched, err)
	}
}

// TestReportSignsAndVerdicts: a stack that lowers throughput by ~10 % and raises p99 by ~10 % is
// reported as a positive cost over the budget; identical arms as no cost, under it.
func TestReportSignsAndVerdicts(t *testing.T) {
	var slow, same []trial
	for i := 0; i < 5; i++ {
		jitter := float64(i) * 0.001
		slow = append(slow,
			trial{Repeat: i, StackOn: true, RPS: 9000 * (1 + jitter), P99Ms: 1.1 * (1 + jitter), Cores: map[string]float64{"prometheus": 0.02, "cadvisor": 0.05}},
			trial{Repeat: i, StackOn: false, RPS: 10000 * (1 + jitter), P99Ms: 1.0 * (1 + jitter)})
		same = append(same,
			trial{Repeat: i, StackOn: true, RPS: 10000 * (1 + jitter), P99Ms: 1.0 * (1 + jitter)},
			trial{Repeat: i, StackOn: false, RPS: 10000 * (1 + jitter), P99Ms: 1.0 * (1 + jitter)})
	}
	var b bytes.Buffer
	report(&b, slow)
	out := b.String()
	for _, want := range []string{"+10.00 %", "+10.00 %", "OVER 3 %", "cadvisor       0.050", "total          0.070"} {
		if !strings.Contains(out, want) {
			t.Errorf("report of a 10 %% cost lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "waiting for a core") {
		t.Errorf("report without schedstat readings prints a wait:\n%s", out)
	}
	b.Reset()
	report(&b, same)
	if out := b.String(); strings.Contains(out, "OVER") || !strings.Contains(out, "under 3 %") {
		t.Errorf("report of equal arms:\n%s", out)
	}
	b.Reset()
	report(&b, slow[:4]) // two repeats
	if out := b.String(); strings.Contains(out, "OVER") || strings.Contains(out, "under") || !strings.Contains(out, "no interval") {
		t.Errorf("report of two repeats gives a verdict:\n%s", out)
	}
}

// TestStackFlagsComeFromCompose checks the benchmark's Prometheus, cAdvisor and node-exporter run
// with the compose file's flags, with only the ports, files and housekeeping interval replaced.
func TestStackFlagsComeFromCompose(t *testing.T) {
	obs, err := readObservability(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	cadvisor, node := obs.cadvisorFlags, obs.nodeFlags
	got := strings.Join(withFlags(cadvisor, map[string]string{"--port": "1234", "--housekeeping_interval": "2s"}), " ")
	for _, want := range []string{"--port=1234", "--housekeeping_interval=2s", "--docker_only=true", "--store_container_labels=true"} {
		if !strings.Contains(got, want) {
			t.Errorf("cAdvisor flags %q lack %q", got, want)
		}
	}
	if strings.Contains(got, "--port=8080") {
		t.Errorf("cAdvisor flags %q keep compose's port", got)
	}
	got = strings.Join(withFlags(obs.promFlags, map[string]string{"--web.listen-address": "127.0.0.1:9", "--storage.tsdb.retention.time": "1d"}), " ")
	for _, want := range append([]string{"--web.listen-address=127.0.0.1:9", "--storage.tsdb.retention.time=1d"}, promtest.StackFlags...) {
		if !strings.Contains(got, want) {
			t.Errorf("Prometheus flags %q lack %q", got, want)
		}
	}
	got = strings.Join(withFlags(node, map[string]string{"--web.listen-address": "127.0.0.1:9"}), " ")
	for _, want := range []string{"--collector.disable-defaults", "--web.listen-address=127.0.0.1:9"} {
		if !strings.Contains(got, want) {
			t.Errorf("node-exporter flags %q lack %q", got, want)
		}
	}
}

// TestOverridesChangeOnlyWhatTheBenchNeeds reads back the bench's compose file: the stack and the
// tool on the host network, the stack's listen addresses, housekeeping and Prometheus
// configuration replaced, and nothing that compose itself decides (images, cpusets, caps, labels);
// a CPU weight only when --cpu-shares asks for one, and never on the tool.
func TestOverridesChangeOnlyWhatTheBenchNeeds(t *testing.T) {
	obs, err := readObservability(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	addrs := stackAddrs{prometheus: "127.0.0.1:1001", cadvisor: "127.0.0.1:1002", nodeExporter: "127.0.0.1:1003"}
	read := func(o options) map[string]map[string]any {
		t.Helper()
		b, err := overrides(obs, o, addrs, "/out/prometheus.yml", "loadgen")
		if err != nil {
			t.Fatal(err)
		}
		var f struct {
			Services map[string]map[string]any `yaml:"services"`
		}
		if err := yaml.Unmarshal(b, &f); err != nil {
			t.Fatalf("%v\n%s", err, b)
		}
		return f.Services
	}
	svcs := read(options{housekeeping: "1s"})
	if len(svcs) != 4 {
		t.Errorf("services %v, want the stack's three and loadgen", slices.Sorted(maps.Keys(svcs)))
	}
	for name, s := range svcs {
		if s["network_mode"] != "host" {
			t.Errorf("%s: network_mode %v, want host", name, s["network_mode"])
		}
		for key := range s {
			if !slices.Contains([]string{"network_mode", "command", "volumes"}, key) {
				t.Errorf("%s: sets %s, which compose decides", name, key)
			}
		}
	}
	cmd := func(name string) string { return fmt.Sprint(svcs[name]["command"]) }
	for name, want := range map[string][]string{
		"prometheus":    {"--web.listen-address=127.0.0.1:1001", "--config.file=/etc/prometheus/prometheus.yml", "--web.enable-remote-write-receiver"},
		"cadvisor":      {"--port=1002", "--housekeeping_interval=1s", "--max_housekeeping_interval=2s", "--enable_metrics=cpu,memory"},
		"node-exporter": {"--web.listen-address=127.0.0.1:1003", "--collector.disable-defaults"},
	} {
		for _, w := range want {
			if !strings.Contains(cmd(name), w) {
				t.Errorf("%s's command %s lacks %s", name, cmd(name), w)
			}
		}
	}
	if v := fmt.Sprint(svcs["prometheus"]["volumes"]); v != "[/out/prometheus.yml:/etc/prometheus/prometheus.yml:ro]" {
		t.Errorf("prometheus volumes %s, want the bench's configuration alone (compose keeps the rest)", v)
	}
	svcs = read(options{housekeeping: "250ms", cpuShares: 1024})
	for _, name := range stackServices {
		if svcs[name]["cpu_shares"] != 1024 {
			t.Errorf("--cpu-shares 1024: %s has cpu_shares %v", name, svcs[name]["cpu_shares"])
		}
	}
	if _, ok := svcs["loadgen"]["cpu_shares"]; ok {
		t.Error("--cpu-shares weighs the tool too; it is the stack's weight")
	}
	if !strings.Contains(cmd("cadvisor"), "--max_housekeeping_interval=500ms") {
		t.Errorf("--housekeeping 250ms: cadvisor %s", cmd("cadvisor"))
	}
}

// TestWithPushInterval: --k6-push-interval lands in k6's remote-write config, the rest unchanged.
func TestWithPushInterval(t *testing.T) {
	inv := tool.Invocation{RawPrefix: "r0-on", PrometheusURL: "http://127.0.0.1:9"}
	for _, data := range (k6.Adapter{}).InputFiles(inv) {
		got, err := withPushInterval(data, "20ms")
		if err != nil {
			t.Fatal(err)
		}
		var c struct {
			Collectors map[string]struct {
				URL                    string `json:"url"`
				PushInterval           string `json:"pushInterval"`
				TrendAsNativeHistogram bool   `json:"trendAsNativeHistogram"`
			} `json:"collectors"`
		}
		if err := json.Unmarshal(got, &c); err != nil {
			t.Fatal(err)
		}
		rw := c.Collectors["experimental-prometheus-rw"]
		if rw.PushInterval != "20ms" || rw.URL != "http://127.0.0.1:9/api/v1/write" || !rw.TrendAsNativeHistogram {
			t.Errorf("config %s", got)
		}
	}
	if _, err := withPushInterval([]byte(`{"collectors":{}}`), "20ms"); err == nil {
		t.Error("a config without the remote-write collector: no error")
	}
}

// TestSettingsSpellInspectAsFlags: what docker inspect reads back reads as docker run flags.
func TestSettingsSpellInspectAsFlags(t *testing.T) {
	var c inspected
	c.Config.Image, c.Config.Cmd = "protobench/prometheus:abc", []string{"--a=1", "--b=2"}
	c.HostConfig.NetworkMode, c.HostConfig.CpusetCpus, c.HostConfig.CpuShares = "host", "1", 64
	c.HostConfig.NanoCpus, c.HostConfig.Memory = 1_500_000_000, 1<<30
	c.Mounts = []mount{{Source: "/x", Destination: "/z", RW: true}, {Source: "/y", Destination: "/etc/p.yml"}}
	want := "--network host --cpuset-cpus 1 --cpu-shares 64 --cpus 1.5 --memory 1073741824 -v /y:/etc/p.yml:ro -v /x:/z:rw protobench/prometheus:abc --a=1 --b=2"
	if got := c.flags(); got != want {
		t.Errorf("flags\n%s\nwant\n%s", got, want)
	}
}

// TestReportPairsRepeats: a 1 % cost inside each repeat while the machine's speed drifts by a
// third from repeat to repeat is shown under the budget, since the cost is taken pair by pair.
func TestReportPairsRepeats(t *testing.T) {
	var trials []trial
	for i, level := range []float64{27000, 39000, 31000, 35000, 29000, 37000} {
		wobble := 1 + 0.001*float64(i%3-1)
		trials = append(trials,
			trial{Repeat: i, StackOn: true, RPS: 0.99 * level * wobble, P99Ms: 1.01 * 30000 / level},
			trial{Repeat: i, StackOn: false, RPS: level, P99Ms: 30000 / level})
	}
	var b bytes.Buffer
	report(&b, trials)
	out := b.String()
	if !strings.Contains(out, "throughput") || strings.Count(out, "under 3 %") != 2 {
		t.Errorf("a 1 %% paired cost under a drift of a third is not shown under the budget:\n%s", out)
	}
}

// TestPrometheusConfigFollowsCompose renders the benchmark's Prometheus configuration from
// compose's: every compose job, its own interval and honor settings kept, the benchmark's
// addresses, and a file promtool accepts. A compose job the benchmark cannot point anywhere is
// refused.
func TestPrometheusConfigFollowsCompose(t *testing.T) {
	var s scrapeSettings
	s.Global.Interval = "1s"
	yes := true
	s.Jobs = []scrapeJob{{Name: "prometheus", Interval: "10s"}, {Name: "cadvisor", HonorTimestamps: &yes}, {Name: "loadgen", HonorLabels: true}, {Name: "servers"}}
	targets := map[string]string{"prometheus": "127.0.0.1:1", "cadvisor": "127.0.0.1:2", "loadgen": "127.0.0.1:3", "servers": "127.0.0.1:4"}
	cfg, err := s.prometheusConfig("", targets, map[string]map[string]string{"servers": {"target": "grpc"}})
	if err != nil {
		t.Fatal(err)
	}
	type job struct {
		Name            string `yaml:"job_name"`
		Interval        string `yaml:"scrape_interval"`
		HonorLabels     bool   `yaml:"honor_labels"`
		HonorTimestamps *bool  `yaml:"honor_timestamps"`
		Static          []struct {
			Targets []string          `yaml:"targets"`
			Labels  map[string]string `yaml:"labels"`
		} `yaml:"static_configs"`
	}
	var got struct {
		Global struct {
			Interval string `yaml:"scrape_interval"`
			Timeout  string `yaml:"scrape_timeout"`
		} `yaml:"global"`
		Jobs []job `yaml:"scrape_configs"`
	}
	decode := func(text string) {
		t.Helper()
		got.Jobs = nil
		if err := yaml.Unmarshal([]byte(text), &got); err != nil {
			t.Fatalf("config is not YAML: %v\n%s", err, text)
		}
	}
	decode(cfg)
	byName := map[string]job{}
	for _, j := range got.Jobs {
		byName[j.Name] = j
	}
	if got.Global.Interval != "1s" || byName["prometheus"].Interval != "10s" || byName["cadvisor"].HonorTimestamps == nil ||
		!*byName["cadvisor"].HonorTimestamps || !byName["loadgen"].HonorLabels {
		t.Errorf("config lost a setting:\n%s", cfg)
	}
	if st := byName["servers"].Static; len(st) != 1 || strings.Join(st[0].Targets, ",") != "127.0.0.1:4" || st[0].Labels["target"] != "grpc" {
		t.Errorf("servers job %+v, want target 127.0.0.1:4 labelled target=grpc", st)
	}
	cfg2, _ := s.prometheusConfig("2s", targets, nil)
	decode(cfg2)
	if got.Global.Interval != "2s" || got.Global.Timeout != "2s" || got.Jobs[0].Interval != "10s" {
		t.Errorf("--scrape-interval 2s: want the global interval replaced and the job's own kept:\n%s", cfg2)
	}
	if promtool, err := exec.LookPath("promtool"); err == nil {
		path := filepath.Join(t.TempDir(), "prometheus.yml")
		if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(promtool, "check", "config", path).CombinedOutput(); err != nil {
			t.Errorf("promtool check config: %v\n%s", err, out)
		}
	}
	delete(targets, "servers")
	if _, err := s.prometheusConfig("", targets, nil); err == nil || !strings.Contains(err.Error(), `"servers"`) {
		t.Errorf("a compose job without a benchmark address: error %v, want one naming it", err)
	}
	// The real compose file renders with the benchmark's five addresses.
	obs, err := readObservability(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	targets["servers"], targets["node-exporter"] = "127.0.0.1:4", "127.0.0.1:5"
	if _, err := obs.scrape.prometheusConfig("", targets, nil); err != nil {
		t.Errorf("compose/prometheus/prometheus.yml: %v", err)
	}
}

func TestBlockOrderIsABBA(t *testing.T) {
	var got []bool
	for k := 0; k < 8; k++ {
		got = append(got, blockOn(k))
	}
	want := []bool{true, false, false, true, true, false, false, true}
	for k := range want {
		if got[k] != want[k] {
			t.Fatalf("blocks on: %v, want %v", got, want)
		}
	}
}

// TestBlockTrials: seconds are counted for the block they lie in, those around a switch (before
// it was done plus settle, or overlapping the next) are left out, and the stack's cores come from
// the CPU read at the block's switches.
func TestBlockTrials(t *testing.T) {
	const start = 1000.0
	// Ten seconds; second k completes 1000+k requests (k = 1..10) with p99 k ms.
	var series []seriesPoint
	for k := 1; k <= 10; k++ {
		series = append(series, seriesPoint{TS: float64(k), Requests: int64(1000 + k), P99Ms: float64(k)})
	}
	switches := []blockSwitch{
		{On: true, Begin: 1000.5, End: 1000.7, CPU: map[string]int64{"prometheus": 0}},
		{On: false, Begin: 1005.2, End: 1005.3, CPU: map[string]int64{"prometheus": 450_000_000}},
		{On: true, Begin: 1009.9, End: 1010.0, CPU: map[string]int64{"prometheus": 450_000_000}},
	}
	// The tool's schedstat every half second: 1 ms of waiting a second while the stack is on
	// (1000-1005), none while it is off, and 0.1 of a core throughout.
	var sched []schedSample
	var waited int64
	for at := 1000.0; at <= 1010; at += 0.5 {
		if at > 1000 && at <= 1005.5 {
			waited += 500_000
		}
		sched = append(sched, schedSample{At: at, Threads: map[string]schedTotals{"7": {CPUNs: int64((at - 1000) * 1e8), WaitNs: waited, Slices: int64((at - 1000) * 100)}}})
	}
	got := blockTrials(start, series, switches, time.Second, sched)
	if len(got) != 2 {
		t.Fatalf("%d trials, want 2: %+v", len(got), got)
	}
	on, off := got[0], got[1]
	// On: from 1001.7 to 1005.2, whole seconds 1002-1003, 1003-1004, 1004-1005 (k = 3, 4, 5).
	if !on.StackOn || on.Requests != 1003+1004+1005 || on.Seconds != 3 || on.P99Ms != 4 {
		t.Errorf("on block %+v, want seconds 3-5", on)
	}
	if c := on.Cores["prometheus"]; c < 0.0999 || c > 0.1001 {
		t.Errorf("on block's prometheus cores %.4f, want 0.45 s over 4.5 s = 0.1", c)
	}
	// Off: from 1006.3 to 1009.9, whole seconds 1007-1008, 1008-1009 (k = 8, 9).
	if off.StackOn || off.Requests != 1008+1009 || off.Seconds != 2 || off.Cores != nil || off.Repeat != 0 {
		t.Errorf("off block %+v, want seconds 8-9 of pair 0", off)
	}
	if on.Wait == nil || math.Abs(on.Wait.WaitMsPerS-1) > 1e-6 || math.Abs(on.Wait.Cores-0.1) > 1e-6 || math.Abs(on.Wait.WaitPerRun-10) > 1e-6 {
		t.Errorf("on block's tool wait %+v, want 1 ms/s, 0.1 cores, 10 us a run", on.Wait)
	}
	if off.Wait == nil || off.Wait.WaitMsPerS != 0 {
		t.Errorf("off block's tool wait %+v, want 0 ms/s", off.Wait)
	}
	if math.Abs(on.RPS-float64(1003+1004+1005)/3) > 1e-9 {
		t.Errorf("on block throughput %.3f", on.RPS)
	}
	// A settle that leaves no whole second drops the block.
	if got := blockTrials(start, series, switches, 3500*time.Millisecond, sched); len(got) != 0 {
		t.Errorf("settle 3.5 s: %d trials, want none", len(got))
	}
}

func TestReportWait(t *testing.T) {
	var trials []trial
	for i := 0; i < 6; i++ {
		level := float64(3 + i%3) // drifts between pairs by more than the stack adds
		trials = append(trials,
			trial{Repeat: i, StackOn: true, RPS: 1000, P99Ms: 1, Wait: &toolWait{WaitMsPerS: level + 2, Cores: 0.1, WaitPerRun: 3}},
			trial{Repeat: i, StackOn: false, RPS: 1000, P99Ms: 1, Wait: &toolWait{WaitMsPerS: level, Cores: 0.1, WaitPerRun: 2}})
	}
	var b bytes.Buffer
	report(&b, trials)
	for _, want := range []string{"stack on     6.00 ms/s (3.0 us a run), on a CPU 0.100 cores", "stack off    4.00 ms/s", "the stack added +2.00 ms/s [+2.00, +2.00] ([min,max], 96.9 % at n=6), 0.20 % of the tool's time (paired, 6 pairs)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}

func TestParseSchedstat(t *testing.T) {
	got, err := parseSchedstat([]byte("123456789 2500 17\n"))
	if err != nil || got != (schedTotals{CPUNs: 123456789, WaitNs: 2500, Slices: 17}) {
		t.Errorf("parseSchedstat = %+v, %v", got, err)
	}
	for _, bad := range []string{"", "1 2", "1 2 x", "1 -2 3", "1 2 3 4"} {
		if _, err := parseSchedstat([]byte(bad)); err == nil {
			t.Errorf("parseSchedstat(%q) accepted", bad)
		}
	}
}

func TestSampleDelta(t *testing.T) {
	th := func(kv ...any) map[string]schedTotals {
		m := map[string]schedTotals{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1].(schedTotals)
		}
		return m
	}
	s := []schedSample{
		// Thread 1 runs throughout; 2 is a helper of the container's start that ends; 3 starts
		// between the second and the third sample.
		{At: 10, Threads: th("1", schedTotals{0, 0, 0}, "2", schedTotals{9e8, 9e6, 900})},
		{At: 11, Threads: th("1", schedTotals{5e8, 4e6, 1000})},
		{At: 12, Threads: th("1", schedTotals{9e8, 6e6, 1600}, "3", schedTotals{1e8, 2e6, 400})},
	}
	w, ok := sampleDelta(s, 10, 12)
	if !ok || w.WaitMsPerS != 4 || w.Cores != 0.5 || w.WaitPerRun != 4 {
		t.Errorf("over 10-12: %+v %v, want 4 ms/s, 0.5 cores, 4 us a run (thread 1 and the new thread 3; the ended 2 left out)", w, ok)
	}
	if w, ok := sampleDelta(s, 11, 12); !ok || w.WaitMsPerS != 4 || w.Cores != 0.5 {
		t.Errorf("over 11-12: %+v %v, want 4 ms/s, 0.5 cores", w, ok)
	}
	if _, ok := sampleDelta(s, 11.5, 12.5); ok {
		t.Error("one sample in the window gave a delta")
	}
	// A thread ID reused by a new thread: its totals restart, and count whole.
	reused := []schedSample{{At: 0, Threads: th("1", schedTotals{5e8, 5e6, 50})}, {At: 1, Threads: th("1", schedTotals{1e8, 1e6, 10})}}
	if w, ok := sampleDelta(reused, 0, 1); !ok || w.WaitMsPerS != 1 || w.Cores != 0.1 {
		t.Errorf("reused thread ID: %+v %v, want 1 ms/s and 0.1 cores", w, ok)
	}
}

// TestStackCoresFollowTheRun: the bench's default place for the stack is a run's
// (scenario.Layout.StackCPUSet): on two cores the generator's core for our generator and the
// server's for k6, which fills its own; with more cores, the spare ones for either.
func TestStackCoresFollowTheRun(t *testing.T) {
	lean, k6 := stackCores(0, 1, "protobench"), stackCores(0, 1, "k6")
	if spare := otherCores(0, 1); spare != "" {
		if lean != spare || k6 != spare {
			t.Errorf("spare cores %q: the stack on %q (protobench) and %q (k6), want the spare ones for both", spare, lean, k6)
		}
		return
	}
	if lean != "1" || k6 != "0" {
		t.Errorf("two cores: the stack on %q for protobench and %q for k6, want 1 and 0", lean, k6)
	}
}
