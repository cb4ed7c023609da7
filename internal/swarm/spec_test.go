package swarm

import (
	"archive/tar"
	"bytes"
	"encoding/base64"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/compose"
)

func strp(s string) *string { return &s }

// The grpc server and the loadgen tool as `compose config` renders them (v1), per-run labels as
// the compose client's placeholders.
func renderedServices(t *testing.T) map[string]*compose.Service {
	t.Helper()
	cfg := `
services:
  grpc:
    image: protobench/protobench:abc
    entrypoint: ["/usr/local/bin/protobench-grpc-server"]
    cpus: 1.5
    cpuset: "1"
    mem_limit: "1073741824"
    ulimits: {nofile: {soft: 16384, hard: 16384}}
    labels:
      protobench.role: server
      protobench.step: "@@PROTOBENCH_LABEL_STEP@@"
      protobench.run_id: "@@PROTOBENCH_LABEL_RUN_ID@@"
    environment:
      PROTOBENCH_LISTEN: ":50051"
      PROTOBENCH_GRPC_MAX_CONCURRENT_STREAMS:
    healthcheck: {test: ["CMD", "/usr/local/bin/protobench-grpc-server", "--probe"]}
    stop_grace_period: 15s
  loadgen:
    image: protobench/protobench:abc
    entrypoint: ["protobench"]
    cpus: 1
    cpuset: "0"
    mem_limit: 1g
    user: "65534:65534"
    labels: {protobench.role: tool}
    volumes:
      - /work/results/x/raw:/raw:rw
  cadvisor:
    image: protobench/cadvisor:abc
    command: ["--port=8080", "--docker_only=true"]
    volumes:
      - /:/rootfs:ro
      - /var/run/docker.sock:/var/run/docker.sock:ro
  prometheus:
    image: protobench/prometheus:abc
    volumes:
      - /work/main/compose/prometheus/prometheus.yml:/etc/prometheus/prometheus.yml:ro
      - protobench_prometheus-data:/prometheus:rw
`
	s, err := compose.ParseConfig([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestTranslateServer(t *testing.T) {
	s := renderedServices(t)["grpc"]
	spec := Translate(s, FromCompose{
		Name: "pb-grpc", Project: "pb", Network: "pb-net", Role: RoleServer, Scrape: "servers", ScrapePort: 9100,
		Env: map[string]string{"PROTOBENCH_LABEL_STEP": "unary-1k", "PROTOBENCH_GRPC_MAX_CONCURRENT_STREAMS": "64", "OTHER": "x"},
	})
	spec.DNSRR, spec.RestartNone, spec.NoHealthcheck = true, true, true
	got := strings.Join(spec.CreateArgs(), " ")
	for _, want := range []string{
		"service create --detach --quiet --name pb-grpc --no-resolve-image --mode replicated --replicas 1",
		"--label protobench.scrape.port=9100 --label protobench.scrape=servers",
		"--container-label com.docker.compose.project=pb --container-label com.docker.compose.service=grpc",
		"--container-label protobench.role=server --container-label protobench.run_id= --container-label protobench.step=unary-1k",
		"--env PROTOBENCH_GRPC_MAX_CONCURRENT_STREAMS=64 --env PROTOBENCH_LISTEN=:50051",
		"--constraint node.labels.protobench.role==server",
		"--network name=pb-net,alias=grpc --endpoint-mode dnsrr",
		"--limit-cpu 1.5 --limit-memory 1073741824 --ulimit nofile=16384:16384",
		"--restart-condition none --stop-grace-period 15s --no-healthcheck",
		"--entrypoint /usr/local/bin/protobench-grpc-server protobench/protobench:abc",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "OTHER") || strings.Contains(got, "cpuset") {
		t.Errorf("unexpected variable or cpuset in %s", got)
	}
	if !strings.HasSuffix(got, "protobench/protobench:abc") {
		t.Errorf("a server keeps the image's command: %s", got)
	}
}

func TestTranslateMounts(t *testing.T) {
	svcs := renderedServices(t)
	drop := func(src, dst string) bool { return strings.HasPrefix(src, "/work/") }
	cad := Translate(svcs["cadvisor"], FromCompose{Name: "pb-cadvisor", Mode: ModeGlobal, DropMount: drop,
		Images: map[string]string{"protobench/cadvisor:abc": "127.0.0.1:5000/cadvisor:abc"}})
	got := strings.Join(cad.CreateArgs(), " ")
	for _, want := range []string{
		"--mode global",
		"--mount type=bind,source=/,destination=/rootfs,readonly --mount type=bind,source=/var/run/docker.sock,destination=/var/run/docker.sock,readonly",
		"127.0.0.1:5000/cadvisor:abc --port=8080 --docker_only=true",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "--replicas") {
		t.Errorf("a global service has no replicas: %s", got)
	}
	prom := Translate(svcs["prometheus"], FromCompose{Name: "pb-prometheus", DropMount: drop})
	if len(prom.Mounts) != 0 {
		t.Errorf("checkout files and named volumes have no place on a swarm node: %+v", prom.Mounts)
	}
}

func TestWrapJob(t *testing.T) {
	lg := Translate(renderedServices(t)["loadgen"], FromCompose{Name: "pb-loadgen-1", Role: RoleClient,
		DropMount: func(src, dst string) bool { return dst == "/raw" }})
	lg.Args = []string{"load", "--out", "/raw/x.json", "it's"}
	spec, err := WrapJob(Job{Spec: lg, RawDir: "/raw"})
	if err != nil {
		t.Fatal(err)
	}
	args := spec.CreateArgs()
	got := strings.Join(args, " ")
	for _, want := range []string{"--mode replicated --replicas 1", "--user 65534:65534", "--mount type=tmpfs,destination=/raw",
		"--restart-condition none", "--entrypoint /bin/sh", "--constraint node.labels.protobench.role==client"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	i := slices.Index(args, "protobench/protobench:abc")
	if i < 0 || !slices.Equal(args[i+3:], []string{"protobench-transfer", "protobench", "load", "--out", "/raw/x.json", "it's"}) || args[i+1] != "-c" {
		t.Errorf("want the image then -c script protobench-transfer <program> <args>, got %q", args[i:])
	}
	if _, err := WrapJob(Job{Spec: lg, RawDir: "/"}); err == nil {
		t.Error("RawDir / accepted")
	}
}

func TestShellJoin(t *testing.T) {
	if got := shellJoin([]string{"/bin/sh", "a b", "it's", ""}); got != `/bin/sh 'a b' 'it'"'"'s' ''` {
		t.Errorf("shellJoin: %s", got)
	}
}

func TestUnpackTransfer(t *testing.T) {
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	add := func(name, body string) {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)})
		tw.Write([]byte(body))
	}
	add("stdout", "no newline at the end")
	add("stderr", "warn\n")
	add("exit", "3\n")
	add("nofile", "16384\n")
	add("started", "1700000000.250000000\n")
	add("ended", "1700000005.750000000\n")
	tw.WriteHeader(&tar.Header{Name: "raw/", Typeflag: tar.TypeDir, Mode: 0o755})
	add("raw/r1.json", `{"a":1}`)
	add("raw/body.bin", "input")
	tw.Close()
	enc := base64.StdEncoding.EncodeToString(tb.Bytes())
	var log strings.Builder
	log.WriteString("noise before\n" + transferBegin + "\n")
	for len(enc) > 76 {
		log.WriteString(enc[:76] + "\n")
		enc = enc[76:]
	}
	log.WriteString(enc + "\n" + transferEnd + "\n")
	var res JobResult
	if err := unpackTransfer([]byte(log.String()), "/raw", map[string][]byte{"body.bin": nil}, &res); err != nil {
		t.Fatal(err)
	}
	if string(res.Stdout) != "no newline at the end" || string(res.Stderr) != "warn\n" || res.ExitCode != 3 || res.Nofile != 16384 {
		t.Errorf("got %+v", res)
	}
	if res.Ended.Sub(res.Started) != 5500*time.Millisecond {
		t.Errorf("tool window %s to %s", res.Started, res.Ended)
	}
	if len(res.Files) != 1 || string(res.Files["r1.json"]) != `{"a":1}` {
		t.Errorf("files: %v", res.Files)
	}
	cut := strings.Split(log.String(), transferEnd)[0]
	if err := unpackTransfer([]byte(cut), "/raw", nil, &res); err == nil || !strings.Contains(err.Error(), "cut short") {
		t.Errorf("a cut transfer: %v", err)
	}
	if err := unpackTransfer([]byte("just a log\n"), "/raw", nil, &res); err == nil {
		t.Error("a log without transfer accepted")
	}
}

func TestComposeFillForServices(t *testing.T) {
	got := compose.Fill("a@@PROTOBENCH_LABEL_X@@b@@PROTOBENCH_LABEL_Y@@c", map[string]string{"PROTOBENCH_LABEL_X": "1"})
	if got != "a1bc" {
		t.Errorf("got %q", got)
	}
}

// TestUnderlayMTU reads the MTU of the interface that holds an address, capped at Ethernet's.
func TestUnderlayMTU(t *testing.T) {
	if got := underlayMTU(net.ParseIP("127.0.0.1")); got != 1500 {
		t.Errorf("underlayMTU(127.0.0.1) = %d; want loopback's MTU capped at 1500", got)
	}
	if got := underlayMTU(net.ParseIP("192.0.2.254")); got != 0 {
		t.Errorf("underlayMTU of an address no interface holds = %d; want 0", got)
	}
	if got := underlayMTU(nil); got != 0 {
		t.Errorf("underlayMTU(nil) = %d; want 0", got)
	}
}

// TestWrapperScriptRoundTrip runs the job wrapper itself with this host's sh, tar, gzip and
// base64 around a small tool, and reads its output back: the compressed transfer, and the
// plain one an image without gzip prints.
func TestWrapperScriptRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		path string // PATH for the wrapper; without gzip on it the transfer is plain
	}{{"gzip", os.Getenv("PATH")}, {"no gzip", ""}} {
		t.Run(tc.name, func(t *testing.T) {
			raw := t.TempDir()
			env := os.Environ()
			if tc.path == "" {
				bin := t.TempDir()
				for _, prog := range []string{"sh", "mkdir", "date", "tar", "base64", "cat", "head"} {
					p, err := exec.LookPath(prog)
					if err != nil {
						t.Skipf("%s: %v", prog, err)
					}
					if err := os.Symlink(p, filepath.Join(bin, prog)); err != nil {
						t.Fatal(err)
					}
				}
				env = append(env, "PATH="+bin)
			}
			// 300 KB of a repetitive report, as ghz prints, and a file in RawDir.
			tool := `i=0; while [ $i -lt 3000 ]; do echo '{"latency":1234567,"error":"","status":"OK"}'; i=$((i+1)); done; echo x > "` + raw + `/out.txt"; echo warn >&2; exit 4`
			cmd := exec.Command("/bin/sh", "-c", wrapperScript(raw), "protobench-transfer", "/bin/sh", "-c", tool)
			cmd.Env = env
			out, err := cmd.Output()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 4 {
				t.Fatalf("wrapper: %v (want the tool's exit 4)", err)
			}
			header := transferBegin
			if tc.path != "" {
				header += " gzip"
			}
			if !bytes.Contains(out, []byte("\n"+header+"\n")) && !bytes.HasPrefix(out, []byte(header+"\n")) {
				t.Fatalf("no %q line in the wrapper's output", header)
			}
			var res JobResult
			if err := unpackTransfer(out, raw, nil, &res); err != nil {
				t.Fatal(err)
			}
			if n := bytes.Count(res.Stdout, []byte("\n")); n != 3000 || res.ExitCode != 4 || string(res.Stderr) != "warn\n" || !hasFile(res.Files, "out.txt", "x\n") {
				t.Errorf("stdout lines %d exit %d stderr %q files %v", n, res.ExitCode, res.Stderr, res.Files)
			}
			if tc.path != "" && len(out) > 100_000 {
				t.Errorf("the compressed transfer of a 150 KB repetitive report is %d bytes", len(out))
			}
			// Rotation that dropped the begin marker is named as such.
			lines := strings.SplitAfter(string(out), "\n")
			i := slices.Index(lines, header+"\n")
			if err := unpackTransfer([]byte(strings.Join(lines[i+2:], "")), raw, nil, &res); err == nil || !strings.Contains(err.Error(), "rotation") {
				t.Errorf("a log whose start was rotated away: %v", err)
			}
		})
	}
}

func TestWrapJobOwnLog(t *testing.T) {
	spec, err := WrapJob(Job{Spec: ServiceSpec{Name: "j", Image: "i", Args: []string{"true"}}, RawDir: "/raw"})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(spec.CreateArgs(), " ")
	if !strings.Contains(got, "--log-driver json-file --log-opt max-file=1 --log-opt max-size=8g") {
		t.Errorf("a job's task must set its own log options, got\n%s", got)
	}
}

// hasFile says whether files holds name (under RawDir's folders below its first) with body.
func hasFile(files map[string][]byte, name, body string) bool {
	for k, v := range files {
		if (k == name || strings.HasSuffix(k, "/"+name)) && string(v) == body {
			return true
		}
	}
	return false
}

func TestSecretMountArgs(t *testing.T) {
	s := ServiceSpec{Name: "s", Image: "i", Secrets: []SecretMount{
		{Secret: "pb-tls-key.pem-1", Target: "/run/protobench/tls/key.pem"},
		{Secret: "pb-web-2", Target: "/etc/prometheus/web.yml", Mode: 0o444, UID: "65534", GID: "65534"},
	}}
	got := strings.Join(s.CreateArgs(), " ")
	for _, want := range []string{
		"--secret source=pb-tls-key.pem-1,target=/run/protobench/tls/key.pem,mode=0400",
		"--secret source=pb-web-2,target=/etc/prometheus/web.yml,mode=0444,uid=65534,gid=65534",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
}
