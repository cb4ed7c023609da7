package engine

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/swarm"
	"github.com/protobench/protobench/internal/swarm/swarmtest"
	"github.com/protobench/protobench/internal/targets"
	"github.com/protobench/protobench/internal/tlscert"
)

// TestShareCertificatesKeyIsASecret stores a real certificate folder on a real swarm: the key
// must be a secret, which no `docker config inspect` prints, the CA and certificate configs;
// a server's spec mounts all three at targets.TLSMount, a tool's the CA only.
func TestShareCertificatesKeyIsASecret(t *testing.T) {
	sw := swarmtest.Use(t)
	project := fmt.Sprintf("pbtest-tls%d", os.Getpid())
	t.Cleanup(func() { swarmtest.RemoveProject(t, sw.Docker, project) })
	dir := t.TempDir()
	if _, err := tlscert.Generate(dir, tlscert.Options{}); err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(dir + "/" + tlscert.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := &Swarm{sw: &swarm.Client{Docker: sw.Docker, Project: project}, tlsDir: dir}
	if err := s.shareCertificates(ctx); err != nil {
		t.Fatal(err)
	}
	ls := func(kind string) []string {
		out, err := exec.Command(sw.Docker, kind, "ls", "--filter", "label="+swarm.ProjectLabel+"="+project, "--format", "{{.Name}}").CombinedOutput()
		if err != nil {
			t.Fatalf("docker %s ls: %v: %s", kind, err, out)
		}
		return strings.Fields(string(out))
	}
	configs, secrets := ls("config"), ls("secret")
	if len(configs) != 2 || len(secrets) != 1 || !strings.Contains(secrets[0], "key") {
		t.Fatalf("configs %v, secrets %v: want the CA and certificate as configs, the key as the one secret", configs, secrets)
	}
	for _, c := range configs {
		out, err := exec.Command(sw.Docker, "config", "inspect", "--format", `{{printf "%s" .Spec.Data}}`, c).CombinedOutput()
		if err != nil {
			t.Fatalf("docker config inspect %s: %v: %s", c, err, out)
		}
		if strings.Contains(string(out), "PRIVATE KEY") || strings.Contains(string(out), strings.TrimSpace(string(key))) {
			t.Errorf("config %s prints the private key", c)
		}
	}
	if out, _ := exec.Command(sw.Docker, "secret", "inspect", secrets[0]).CombinedOutput(); strings.Contains(string(out), "PRIVATE KEY") {
		t.Errorf("docker secret inspect prints the key")
	}

	var server, tool swarm.ServiceSpec
	s.tls.server(&server)
	s.tls.tool(&tool)
	args := strings.Join(server.CreateArgs(), " ")
	for _, want := range []string{
		"--secret source=" + secrets[0] + ",target=" + targets.TLSMount + "/" + tlscert.KeyFile,
		",target=" + targets.TLSMount + "/" + tlscert.CertFile,
		",target=" + targets.TLSMount + "/" + tlscert.CAFile,
	} {
		if !strings.Contains(args, want) {
			t.Errorf("a server's service lacks %q:\n%s", want, args)
		}
	}
	if len(tool.Secrets) != 0 || len(tool.Configs) != 1 || !strings.HasSuffix(tool.Configs[0].Target, "/"+tlscert.CAFile) {
		t.Errorf("a tool gets %+v and %+v; want the CA alone", tool.Configs, tool.Secrets)
	}
	if slices.ContainsFunc(server.Configs, func(c swarm.ConfigMount) bool { return strings.HasSuffix(c.Target, tlscert.KeyFile) }) {
		t.Errorf("the key is a config of the server's service: %+v", server.Configs)
	}
}
