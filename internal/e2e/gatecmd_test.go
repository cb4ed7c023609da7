package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/swarm/swarmtest"
)

// gateImage builds an image of one Go server from this checkout's protobench image, labelled
// with its protocol, with env baked in, and returns its tag.
func gateImage(t *testing.T, ctx context.Context, c cli, from, tag string, env map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	text := "FROM " + from + "\nLABEL org.protobench.protocol=grpc\nENTRYPOINT [\"/usr/local/bin/protobench-grpc-server\"]\n"
	for k, v := range env {
		text += "ENV " + k + "=" + v + "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(ctx, "docker", "build", "-q", "-t", tag, dir).CombinedOutput(); err != nil {
		t.Fatalf("docker build %s: %v\n%s", tag, err, out)
	}
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", tag).Run() })
	return tag
}

var protobenchRef = regexp.MustCompile(`protobench/protobench:[0-9a-f]{12}`)

// TestGateEndToEnd runs `protobench gate` through the real compose stack: the same image as
// base and head passes (exit 0) or, on a noisy host, says inconclusive (exit 3), never slower;
// a head whose every request burns 100 µs more CPU (handler_cpu, a real slowdown of about a
// third of gRPC's own cost here) fails with exit 1. Each writes its Markdown and gate.json.
func TestGateEndToEnd(t *testing.T) {
	c := requireE2E(t, "protobench gate through the compose stack")
	swarmtest.ComposeStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	if out, err := c.run(ctx, "images", "build", "protobench"); err != nil {
		t.Fatalf("protobench images build protobench: %v\n%s", err, out)
	}
	env, _ := c.run(ctx, "images", "env")
	from := protobenchRef.FindString(env)
	if from == "" {
		t.Fatalf("no protobench image in `protobench images env`:\n%s", env)
	}
	base := gateImage(t, ctx, c, from, "protobench-gate-e2e:base", nil)
	slowed := gateImage(t, ctx, c, from, "protobench-gate-e2e:slowed", map[string]string{"PROTOBENCH_HANDLER_CPU": "100us"})
	for _, tc := range []struct {
		name, head string
		codes      []int
	}{
		{"same image twice", base, []int{0, 3}},
		{"head with handler_cpu", slowed, []int{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			md := filepath.Join(out, "comment.md")
			output, err := c.run(ctx, "gate", "--base", base, "--head", tc.head, "--fail-if-slower", "5%",
				"--repeats", "5", "--warmup", "1s", "--duration", "3s", "--out", out, "--markdown", md,
				"--health-check", "/usr/local/bin/protobench-grpc-server --probe")
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			t.Logf("protobench gate (exit %d):\n%s", code, tail(output, 40))
			ok := false
			for _, want := range tc.codes {
				ok = ok || code == want
			}
			if !ok {
				t.Fatalf("exit %d, want one of %v", code, tc.codes)
			}
			comment, err := os.ReadFile(md)
			if err != nil || !strings.HasPrefix(string(comment), "### protobench gate: ") {
				t.Errorf("markdown %q (%v)", comment, err)
			}
			files, _ := filepath.Glob(filepath.Join(out, "*-gate", "gate.json"))
			if len(files) != 1 {
				t.Fatalf("gate.json: %v", files)
			}
			var res struct {
				Outcome string  `json:"outcome"`
				Ratio   float64 `json:"ratio"`
			}
			data, _ := os.ReadFile(files[0])
			if err := json.Unmarshal(data, &res); err != nil || res.Ratio <= 0 {
				t.Errorf("gate.json %s (%v)", data, err)
			}
		})
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
