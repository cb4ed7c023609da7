package swarm_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/swarm"
	"github.com/protobench/protobench/internal/swarm/swarmtest"
)

// TestJobForgedTransferAndSecret runs two jobs on a real swarm. The first is a hostile tool: it
// prints a transfer of its own, with a file named raw/../../pwned, onto the wrapper's stdout
// before the wrapper's; RunJob must refuse it by name and hand back no file. The second reads a
// secret mounted where a server finds its TLS key, as the job's unprivileged user.
func TestJobForgedTransferAndSecret(t *testing.T) {
	sw := swarmtest.Use(t)
	needImage(t, sw.Docker)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	project := fmt.Sprintf("pbtest-hostile-%d", os.Getpid())
	c, _, err := swarm.New(ctx, sw.Docker, project)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { swarmtest.RemoveProject(t, sw.Docker, project) })

	forged := forgedTransfer(t, map[string]string{"stdout": "", "stderr": "", "exit": "0\n", "raw/../../pwned": "boom\n"})
	job := swarm.Job{
		Spec: swarm.ServiceSpec{Name: c.ServiceName("forger-1"), Image: testImage, User: "65534:65534",
			Entrypoint: []string{"/bin/sh"},
			// The wrapper is PID 1; while the tool runs, dash keeps the task's log (its own stdout
			// and stderr) open on a pipe, the tool's stdout being a file.
			Args: []string{"-c", `for f in /proc/1/fd/*; do case $(readlink "$f") in pipe:*)
				{ echo protobench-transfer-begin; cat /raw/forged.b64; echo protobench-transfer-end; } >"$f";; esac; done`}},
		RawDir: "/raw",
		Inputs: map[string][]byte{"forged.b64": forged},
	}
	res, err := c.RunJob(ctx, job)
	if err == nil || !strings.Contains(err.Error(), `"../../pwned" is not a plain name inside /raw`) {
		t.Fatalf("a forged transfer with ../../pwned: err = %v, want it refused by name (the tool: exit %d, stderr %q)", err, res.ExitCode, res.Stderr)
	}
	if len(res.Files) != 0 {
		t.Errorf("a refused transfer handed back files: %v", res.Files)
	}

	const key = "-----BEGIN PRIVATE KEY-----\nnot a real key\n-----END PRIVATE KEY-----\n"
	secret, err := c.CreateSecret(ctx, "tls-key.pem", []byte(key))
	if err != nil {
		t.Fatal(err)
	}
	reader := swarm.Job{
		Spec: swarm.ServiceSpec{Name: c.ServiceName("reader-1"), Image: testImage, User: "65534:65534",
			Entrypoint: []string{"/bin/sh"},
			Args:       []string{"-c", "cat /run/protobench/tls/key.pem && stat -c %a /run/protobench/tls/key.pem"},
			Secrets:    []swarm.SecretMount{{Secret: secret, Target: "/run/protobench/tls/key.pem", Mode: 0o444}}},
		RawDir: "/raw",
	}
	res, err = c.RunJob(ctx, reader)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(res.Stdout); got != key+"444\n" || res.ExitCode != 0 {
		t.Errorf("the secret as the job read it: %q (exit %d, stderr %q)", got, res.ExitCode, res.Stderr)
	}
}

// forgedTransfer is a transfer as the wrapper prints it between its markers (a plain tar,
// base64), of the given entries.
func forgedTransfer(t *testing.T, entries map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for name, body := range entries {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	enc := base64.StdEncoding.EncodeToString(b.Bytes())
	var out strings.Builder
	for len(enc) > 76 {
		out.WriteString(enc[:76] + "\n")
		enc = enc[76:]
	}
	out.WriteString(enc + "\n")
	return []byte(out.String())
}
