package obsbench

import (
	"bytes"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

func TestFlagsRejectBadInput(t *testing.T) {
	cases := map[string][]string{
		"--repeats":         {"--repeats", "0"},
		"are both 1":        {"--server-core", "1", "--client-core", "1"},
		"--scrape-interval": {"--scrape-interval", "often"},
		"--housekeeping":    {"--housekeeping", "-1s"},
		"--duration":        {"--duration", "10ms"},
		"unexpected":        {"extra"},
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

// TestStackFlagsComeFromCompose checks the benchmark's cAdvisor and node-exporter run with the
// compose file's flags, with only the ports and the housekeeping interval replaced.
func TestStackFlagsComeFromCompose(t *testing.T) {
	cadvisor, node, err := composeCommands(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(withFlags(cadvisor, map[string]string{"--port": "1234", "--housekeeping_interval": "2s"}), " ")
	for _, want := range []string{"--port=1234", "--housekeeping_interval=2s", "--docker_only=true", "--store_container_labels=true"} {
		if !strings.Contains(got, want) {
			t.Errorf("cAdvisor flags %q lack %q", got, want)
		}
	}
	if strings.Contains(got, "--port=8080") {
		t.Errorf("cAdvisor flags %q keep compose's port", got)
	}
	got = strings.Join(withFlags(node, map[string]string{"--web.listen-address": "127.0.0.1:9"}), " ")
	for _, want := range []string{"--collector.disable-defaults", "--web.listen-address=127.0.0.1:9"} {
		if !strings.Contains(got, want) {
			t.Errorf("node-exporter flags %q lack %q", got, want)
		}
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
