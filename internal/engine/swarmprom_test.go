package engine

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/bcrypt"

	"github.com/protobench/protobench/internal/swarm"
	"github.com/protobench/protobench/internal/swarm/swarmtest"
)

func TestRenderWebConfig(t *testing.T) {
	b, err := renderWebConfig("protobench", "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	var c webConfig
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("%v in\n%s", err, b)
	}
	if len(c.BasicAuthUsers) != 1 || bcrypt.CompareHashAndPassword([]byte(c.BasicAuthUsers["protobench"]), []byte("s3cret")) != nil {
		t.Errorf("web config does not hold protobench's hash of the password:\n%s", b)
	}
	if strings.Contains(string(b), "s3cret") {
		t.Errorf("web config holds the password itself:\n%s", b)
	}
}

// TestPublishedPrometheusAsksForThePassword publishes a real Prometheus on a real swarm as a
// run does on a monitor node, and checks that its API and its remote-write receiver refuse a
// request without the run's password and answer one with it (the runner's URL), and that the
// tools get the password for k6's remote write.
func TestPublishedPrometheusAsksForThePassword(t *testing.T) {
	docker := swarmtest.Docker()
	image := ""
	for _, ref := range []string{"protobench/prometheus:latest", "prom/prometheus:v2.53.3"} {
		if exec.Command(docker, "image", "inspect", ref).Run() == nil {
			image = ref
			break
		}
	}
	if image == "" {
		t.Skip("no Prometheus image here: build it with `protobench images build prometheus`")
	}
	sw := swarmtest.Use(t)
	project := fmt.Sprintf("pbtest-prom%d", os.Getpid())
	t.Cleanup(func() { swarmtest.RemoveProject(t, sw.Docker, project) })
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	t.Setenv("PROTOBENCH_PROMETHEUS_PORT", strconv.Itoa(port))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := &swarm.Client{Docker: sw.Docker, Project: project}
	s := &Swarm{sw: c}
	spec := swarm.ServiceSpec{Name: c.ServiceName("prometheus"), Image: image,
		Args: []string{"--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus", "--web.enable-remote-write-receiver"}}
	if err := s.publishPrometheus(ctx, &spec, swarm.Node{ID: sw.NodeID, Addr: "127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateService(ctx, spec); err != nil {
		t.Fatal(err)
	}
	withAuth, err := url.Parse(s.promPublished)
	if err != nil || withAuth.User == nil {
		t.Fatalf("the runner's URL %q carries no password", s.promPublished)
	}
	bare := *withAuth
	bare.User = nil
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil}}
	status := func(method, u string) int {
		req, err := http.NewRequestWithContext(ctx, method, u, strings.NewReader(""))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	var last int
	for last = status("GET", withAuth.String()+"/-/ready"); last != http.StatusOK; last = status("GET", withAuth.String()+"/-/ready") {
		if ctx.Err() != nil {
			t.Fatalf("Prometheus never answered its runner's URL (last status %d)", last)
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, r := range []struct{ method, path string }{{"GET", "/-/ready"}, {"GET", "/api/v1/query?query=up"}, {"POST", "/api/v1/write"}} {
		if got := status(r.method, bare.String()+r.path); got != http.StatusUnauthorized {
			t.Errorf("%s %s without the password: status %d, want 401", r.method, r.path, got)
		}
	}
	if got := status("POST", withAuth.String()+"/api/v1/write"); got == http.StatusUnauthorized || got == 0 {
		t.Errorf("remote write with the password: status %d", got)
	}
	var tool swarm.ServiceSpec
	s.promToolEnv(&tool)
	if tool.Env["K6_PROMETHEUS_RW_PASSWORD"] != s.promPassword || tool.Env["K6_PROMETHEUS_RW_USERNAME"] != promUser {
		t.Errorf("tool env %v lacks the password for k6's remote write", tool.Env)
	}
}
