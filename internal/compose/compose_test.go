package compose

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// dryRunClient is a Client on a temporary compose file that only prints commands.
func dryRunClient(t *testing.T, command []string) (*Client, *bytes.Buffer) {
	t.Helper()
	dir := t.TempDir()
	for _, f := range DefaultFiles {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("services: {}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var log bytes.Buffer
	c, err := New(context.Background(), Options{
		Dir: dir, DryRun: true, Log: &log, Command: command,
		Env: map[string]string{"PROTOBENCH_RAW_DIR": "/tmp/raw dir"},
	})
	if err != nil {
		t.Fatal(err)
	}
	log.Reset()
	return c, &log
}

func TestDryRunPrintsExactCommands(t *testing.T) {
	ctx := context.Background()
	for _, command := range [][]string{{"docker", "compose"}, {"docker-compose"}} {
		t.Run(strings.Join(command, " "), func(t *testing.T) {
			c, log := dryRunClient(t, command)
			base := strings.Join(command, " ") + " -p protobench -f " + filepath.Join(c.opts.Dir, MainFile) +
				" -f " + filepath.Join(c.opts.Dir, ServersFile) +
				" --profile servers --profile tools --profile grafana"
			env := "'PROTOBENCH_RAW_DIR=/tmp/raw dir' "
			cases := []struct {
				name string
				call func() error
				want []string
			}{
				{"up", func() error {
					return c.Up(ctx, map[string]string{"PROTOBENCH_OBS_CPUSET": "0"}, "prometheus", "cadvisor")
				}, []string{"+ PROTOBENCH_OBS_CPUSET=0 " + env + base + " up -d prometheus cadvisor"}},
				{"recreate", func() error {
					return c.Recreate(ctx, "grpc", map[string]string{"PROTOBENCH_SERVER_CPUS": "1"})
				}, []string{"+ " + env + "PROTOBENCH_SERVER_CPUS=1 " + base + " up -d --no-deps --force-recreate --renew-anon-volumes grpc"}},
				{"run", func() error {
					_, _, code, err := c.Run(ctx, "ghz", "protobench-ghz", "", nil, []string{"--call", "a b"})
					if code != 0 {
						t.Errorf("dry-run exit code %d", code)
					}
					return err
				}, []string{
					"+ docker rm -f protobench-ghz",
					"+ " + env + base + " run --rm -T --no-deps --name protobench-ghz ghz --call 'a b'",
				}},
				{"run with entrypoint", func() error {
					_, _, _, err := c.Run(ctx, "wrk", "protobench-wrk", "wrk2", nil, []string{"-R", "100"})
					return err
				}, []string{
					"+ docker rm -f protobench-wrk",
					"+ " + env + base + " run --rm -T --no-deps --name protobench-wrk --entrypoint wrk2 wrk -R 100",
				}},
				{"remove", func() error { return c.Remove(ctx, "grpc") }, []string{"+ " + env + base + " rm --force --stop grpc"}},
				{"down", func() error { return c.Down(ctx) }, []string{"+ " + env + base + " down --remove-orphans --timeout 10"}},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					log.Reset()
					if err := tc.call(); err != nil {
						t.Fatal(err)
					}
					got := strings.Split(strings.TrimSpace(log.String()), "\n")
					if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
						t.Fatalf("printed\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
					}
				})
			}
		})
	}
}

// TestDockerArgsNetworkMode: a service with network_mode joins that network as compose would put
// it there, without the project network's alias; the others join the project's network.
func TestDockerArgsNetworkMode(t *testing.T) {
	svcs, err := ParseConfig([]byte("services:\n  loadgen:\n    image: x\n    network_mode: host\n  ghz:\n    image: y\n"))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := dryRunClient(t, []string{"docker", "compose"})
	host := strings.Join(c.DockerArgs(FastContainer{Service: svcs["loadgen"], Name: "p-loadgen", OneOff: true}), " ")
	if !strings.Contains(host, "--name p-loadgen --network host --label") || strings.Contains(host, "--network-alias") {
		t.Errorf("network_mode host: %s", host)
	}
	bridge := strings.Join(c.DockerArgs(FastContainer{Service: svcs["ghz"], Name: "p-ghz", OneOff: true}), " ")
	if !strings.Contains(bridge, "--network protobench_default --network-alias ghz") {
		t.Errorf("no network_mode: %s", bridge)
	}
}

func TestUpNeedsServices(t *testing.T) {
	c, _ := dryRunClient(t, []string{"docker", "compose"})
	if err := c.Up(context.Background(), nil); err == nil {
		t.Fatal("Up without services succeeded")
	}
}

func TestPublishedPort(t *testing.T) {
	cases := []struct {
		name     string
		service  string
		env      map[string]string
		wantPort int
		wantErr  string
	}{
		{"prometheus default", "prometheus", nil, 9090, ""},
		{"grafana default", "grafana", nil, 3000, ""},
		{"prometheus moved", "prometheus", map[string]string{"PROTOBENCH_PROMETHEUS_PORT": "19090"}, 19090, ""},
		{"unpublished service", "grpc", map[string]string{"PROTOBENCH_PROMETHEUS_PORT": "1"}, 0, ""},
		{"not a number", "grafana", map[string]string{"PROTOBENCH_GRAFANA_PORT": "x"}, 0, `PROTOBENCH_GRAFANA_PORT="x": want a port number`},
		{"out of range", "prometheus", map[string]string{"PROTOBENCH_PROMETHEUS_PORT": "70000"}, 0, "want a port number 1-65535"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			port, _, err := PublishedPort(c.service, c.env)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil || port != c.wantPort {
				t.Fatalf("port %d, %v; want %d", port, err, c.wantPort)
			}
		})
	}
}

func TestTakenPortIsNamed(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	// A docker CLI that does not exist: the "is it our own container" lookup fails and the
	// check falls back to the socket, which is what this test is about.
	c := &Client{opts: Options{Docker: filepath.Join(t.TempDir(), "no-docker"), ProjectName: "x"}}
	env := map[string]string{"PROTOBENCH_PROMETHEUS_PORT": strconv.Itoa(port)}
	// Without publish.yml nothing is published, so no port can be in the way.
	if err := c.checkPublishedPort(context.Background(), "prometheus", env); err != nil {
		t.Fatalf("a stack that publishes nothing was refused: %v", err)
	}
	c.files = []string{"/x/docker-compose.yml", "/x/" + PublishFile}
	err = c.checkPublishedPort(context.Background(), "prometheus", env)
	var pe *PortInUseError
	if !errors.As(err, &pe) || !errors.Is(err, ErrPortInUse) {
		t.Fatalf("got %v, want a PortInUseError", err)
	}
	for _, want := range []string{"port " + strconv.Itoa(port), "prometheus", "PROTOBENCH_PROMETHEUS_PORT"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not name %q", err, want)
		}
	}
	l.Close()
	if err := c.checkPublishedPort(context.Background(), "prometheus", env); err != nil {
		t.Fatalf("free port reported taken: %v", err)
	}
}

func TestUnreachableDockerIsOneClearError(t *testing.T) {
	cases := []struct {
		name   string
		docker string
		host   string
		want   string
	}{
		{"no daemon at DOCKER_HOST", "docker", "unix://" + filepath.Join(os.TempDir(), "protobench-no-such.sock"), "cannot reach the Docker daemon"},
		{"no docker CLI", filepath.Join(os.TempDir(), "protobench-no-docker"), "", "not installed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.host != "" {
				t.Setenv("DOCKER_HOST", c.host)
			}
			_, err := CheckDocker(context.Background(), c.docker)
			if !errors.Is(err, ErrDockerUnreachable) {
				t.Fatalf("got %v, want ErrDockerUnreachable", err)
			}
			if msg := err.Error(); !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") {
				t.Fatalf("message %q: want one line containing %q", msg, c.want)
			}
		})
	}
}

func TestStripV1Noise(t *testing.T) {
	cases := []struct {
		name, stderr string
		exitCode     int
		want         string
	}{
		{
			name: "progress around the tool's own stderr",
			stderr: "Creating network \"protobench_default\" with the default driver\n" +
				"Creating volume \"protobench_prometheus-data\" with default driver\n" +
				"Creating protobench_wrk_run ... \r\n" +
				"Creating protobench_wrk_run ... done\r\n" +
				"unable to connect to rest:8080 Connection refused\n",
			want: "unable to connect to rest:8080 Connection refused\n",
		},
		{
			name:     "exit status line after a failure",
			stderr:   "Creating protobench_wrk_run ... done\r\nwrk: bad flag\n3\n",
			exitCode: 3,
			want:     "wrk: bad flag\n",
		},
		{
			name:   "a number the tool printed stays when it exited 0",
			stderr: "3\n",
			want:   "3\n",
		},
		{
			name:   "tool lines that merely look similar stay",
			stderr: "Creating connections ... done\nCreating network \"other_default\" with the default driver\n",
			want:   "Creating connections ... done\nCreating network \"other_default\" with the default driver\n",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := string(stripV1Noise([]byte(c.stderr), "protobench", "wrk", c.exitCode))
			if got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}
