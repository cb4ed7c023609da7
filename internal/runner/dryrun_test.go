package runner

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
)

// needsCompose skips when neither compose is installed: a dry run renders the compose file.
func needsCompose(t *testing.T) {
	t.Helper()
	if exec.Command("docker", "compose", "version").Run() == nil {
		return
	}
	if _, err := exec.LookPath("docker-compose"); err == nil {
		return
	}
	t.Skip("no docker compose or docker-compose")
}

// A swarm dry run prints the docker commands a swarm run makes, from the compose services as
// compose renders them, and starts nothing: no compose command, and the step's labels on its
// services.
func TestDryRunSwarmPrintsServiceCreates(t *testing.T) {
	needsCompose(t)
	var out, errOut bytes.Buffer
	code := Command(context.Background(), []string{"smoke", "--dry-run", "--engine", "swarm", "--project", "pbdrytest"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, errOut.String())
	}
	text := out.String()
	for _, want := range []string{
		"docker network create --driver overlay --attachable --label protobench.project=pbdrytest",
		"docker config create --label protobench.project=pbdrytest pbdrytest-prometheus-dry-run -",
		"docker service create --detach --quiet --name pbdrytest-prometheus ",
		"--config source=pbdrytest-prometheus-dry-run,target=/etc/prometheus/prometheus.yml",
		"--name pbdrytest-cadvisor --no-resolve-image --mode global",
		"--name pbdrytest-node-exporter --no-resolve-image --mode global",
		"--name pbdrytest-grpc ",
		"--container-label protobench.run_id=dry-run --container-label protobench.scenario=smoke --container-label protobench.step=servers",
		"--name pbdrytest-loadgen-1 ",
		"--restart-condition none",
		"protobench-transfer protobench load --target grpc://grpc:50051",
		"docker service rm pbdrytest-loadgen-1",
		"docker service rm pbdrytest-grpc",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("dry run does not print %q", want)
		}
	}
	// Go servers get GOMAXPROCS from their CPU limit (swarm has no cpuset); the Python server
	// does not. A tool's job keeps its whole log.
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.Contains(line, "--name pbdrytest-grpc "):
			if !strings.Contains(line, "--env GOMAXPROCS=1 ") || !strings.Contains(line, "--limit-cpu 1") {
				t.Errorf("the gRPC server's service has no GOMAXPROCS=1 beside its 1-cpu limit:\n%s", line)
			}
		case strings.Contains(line, "--name pbdrytest-python-grpc "):
			if strings.Contains(line, "GOMAXPROCS") {
				t.Errorf("the Python server's service sets GOMAXPROCS:\n%s", line)
			}
		case strings.Contains(line, "--name pbdrytest-loadgen-1 "):
			if !strings.Contains(line, "--log-driver json-file --log-opt max-file=1 --log-opt max-size=8g") {
				t.Errorf("the tool's job does not set its own log options:\n%s", line)
			}
		}
	}
	for _, unwanted := range []string{"compose -p", "docker-compose ", " up -d", "docker run "} {
		if strings.Contains(text, unwanted) {
			t.Errorf("swarm dry run prints a compose or docker run command (%q)", unwanted)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", text)
	}
}

// A compose dry run prints the compose commands of the first run, with the step's labels.
func TestDryRunComposePrintsLabelledCommands(t *testing.T) {
	needsCompose(t)
	var out, errOut bytes.Buffer
	code := Command(context.Background(), []string{"smoke", "--dry-run", "--project", "pbdrytest"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, errOut.String())
	}
	text := out.String()
	for _, want := range []string{"PROTOBENCH_LABEL_RUN_ID=dry-run", "PROTOBENCH_LABEL_STEP=servers", "-p pbdrytest ", "up -d --no-deps --force-recreate", "run --rm -T --no-deps --name pbdrytest-loadgen"} {
		if !strings.Contains(text, want) {
			t.Errorf("dry run does not print %q; output:\n%s", want, text)
		}
	}
	if strings.Contains(text, "service create") {
		t.Error("compose dry run prints swarm commands")
	}
}
