package runner

import (
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/engine"
	"github.com/protobench/protobench/internal/scenario"
)

const resumeScenario = `name: resume-check
description: two runs
defaults: {warmup: 0s, duration: 2s, repeats: 1, cooldown: 0s}
steps:
  - name: a
    targets: [grpc, rest]
    tools: [protobench]
    method: Echo
    payload_bytes: 64
    connections: 2
    concurrency: 1
`

func TestCheckResumeRefusesOtherScenarioOrFlags(t *testing.T) {
	sc, err := scenario.Parse("resume-check.yaml", []byte(resumeScenario))
	if err != nil {
		t.Fatal(err)
	}
	prev := RunInfo{ScenarioSHA256: sc.Hash(), ScenarioFile: "scenarios/resume-check.yaml", PlanFlags: &PlanFlags{Quick: true, Only: "a", Seed: 7}}

	// Flags left out are inherited from the folder, the order seed too, so that the remaining
	// runs keep the order the run drew.
	opts := Options{Resume: "dir"}
	if err := checkResume(&opts, map[string]bool{}, sc, prev); err != nil {
		t.Fatalf("a plain resume: %v", err)
	}
	if !opts.Quick || opts.Only != "a" || opts.Seed != 7 {
		t.Fatalf("inherited flags: %+v", opts)
	}

	opts = Options{Resume: "dir", Quick: false, Repeat: 3, Seed: 8}
	err = checkResume(&opts, map[string]bool{"quick": true, "repeat": true, "seed": true}, sc, prev)
	if err == nil {
		t.Fatal("a resume with other flags was accepted")
	}
	for _, want := range []string{"--quick is false now", "--repeat is 3 now", "--seed is 8 now"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}

	other, err := scenario.Parse("resume-check.yaml", []byte(strings.Replace(resumeScenario, "two runs", "two other runs", 1)))
	if err != nil {
		t.Fatal(err)
	}
	opts = Options{Resume: "dir"}
	if err := checkResume(&opts, map[string]bool{}, other, prev); err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("a resume with another scenario: %v", err)
	}
}

func TestServerFaultNamesTheCause(t *testing.T) {
	tests := []struct {
		st   engine.ContainerState
		want string
	}{
		{engine.ContainerState{Status: "exited", OOMKilled: true, ExitCode: 137, MemoryLimit: 48 << 20}, "server grpc OOM-killed at its 48 MiB cap"},
		{engine.ContainerState{Status: "exited", ExitCode: 2}, "server grpc exited with code 2"},
		{engine.ContainerState{Status: "running", RestartCount: 1}, "server grpc restarted 1 times"},
		{engine.ContainerState{Status: "running"}, ""},
	}
	for _, tt := range tests {
		got := serverFault(tt.st, "grpc")
		if tt.want == "" && got != "" || !strings.HasPrefix(got, tt.want) {
			t.Errorf("serverFault(%+v) = %q, want %q", tt.st, got, tt.want)
		}
	}
}
