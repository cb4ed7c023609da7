package serverkit

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/contract"
)

// testSpec has one knob of each kind and a trivial service.
func testSpec(streams *int, name *string, wait *time.Duration) Spec {
	return Spec{
		Protocol:      "test",
		DefaultListen: ":1234",
		Declare: func(fs *Flags) Builder {
			s := fs.Int("streams", "PROTOBENCH_TEST_STREAMS", 100, "streams")
			n := fs.String("name", "PROTOBENCH_TEST_NAME", "dflt", "name")
			w := fs.Duration("wait", "PROTOBENCH_TEST_WAIT", time.Second, "wait")
			return func(cfg Config, m *Metrics) (Service, error) {
				*streams, *name, *wait = *s, *n, *w
				return Bind(cfg.Listen, &httpService{srv: &http.Server{Handler: http.NotFoundHandler()}})
			}
		},
	}
}

type httpService struct{ srv *http.Server }

func (h *httpService) Serve(ln net.Listener) error {
	if err := h.srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}
func (h *httpService) Shutdown(ctx context.Context) error { return h.srv.Shutdown(ctx) }

func TestParseConfigPrecedence(t *testing.T) {
	tests := []struct {
		name        string
		args        []string
		env         map[string]string
		wantListen  string
		wantMetrics string
		wantMax     int
		wantStreams int
		wantName    string
		wantWait    time.Duration
	}{
		{"defaults", nil, nil, ":1234", ":9100", contract.DefaultMaxPayloadBytes, 100, "dflt", time.Second},
		{"env over default", nil,
			map[string]string{"PROTOBENCH_LISTEN": ":1", "PROTOBENCH_METRICS_LISTEN": ":2", "PROTOBENCH_MAX_PAYLOAD_BYTES": "99",
				"PROTOBENCH_TEST_STREAMS": "7", "PROTOBENCH_TEST_NAME": "e", "PROTOBENCH_TEST_WAIT": "3s"},
			":1", ":2", 99, 7, "e", 3 * time.Second},
		{"flag over env", []string{"--listen=:5", "--streams", "8", "-name=f", "--wait=4s", "--max-payload-bytes=5"},
			map[string]string{"PROTOBENCH_LISTEN": ":1", "PROTOBENCH_TEST_STREAMS": "7", "PROTOBENCH_TEST_NAME": "e", "PROTOBENCH_MAX_PAYLOAD_BYTES": "99"},
			":5", ":9100", 5, 8, "f", 4 * time.Second},
		{"empty env is unset", nil, map[string]string{"PROTOBENCH_TEST_STREAMS": ""}, ":1234", ":9100", contract.DefaultMaxPayloadBytes, 100, "dflt", time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var streams int
			var name string
			var wait time.Duration
			lookup := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			cfg, build, err := ParseConfig(testSpec(&streams, &name, &wait), tt.args, lookup)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Listen = "127.0.0.1:0"
			cfg.MetricsListen = "127.0.0.1:0"
			svc, err := build(cfg, NewMetrics("test"))
			if err != nil {
				t.Fatal(err)
			}
			svc.Shutdown(context.Background())
			cfg2, _, _ := ParseConfig(testSpec(new(int), new(string), new(time.Duration)), tt.args, lookup)
			if cfg2.Listen != tt.wantListen || cfg2.MetricsListen != tt.wantMetrics || cfg2.MaxPayloadBytes != tt.wantMax {
				t.Fatalf("listen %q metrics %q max %d; want %q %q %d", cfg2.Listen, cfg2.MetricsListen, cfg2.MaxPayloadBytes, tt.wantListen, tt.wantMetrics, tt.wantMax)
			}
			if streams != tt.wantStreams || name != tt.wantName || wait != tt.wantWait {
				t.Fatalf("knobs %d %q %v; want %d %q %v", streams, name, wait, tt.wantStreams, tt.wantName, tt.wantWait)
			}
			if len(cfg.Knobs) != 3 || cfg.Knobs[0].Name != "streams" || cfg.Knobs[0].Env != "PROTOBENCH_TEST_STREAMS" || cfg.Knobs[0].Value != tt.wantStreams {
				t.Fatalf("knobs recorded as %+v", cfg.Knobs)
			}
		})
	}
}

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		wantText string
	}{
		{"bad env int names the variable", nil, map[string]string{"PROTOBENCH_TEST_STREAMS": "many"}, "PROTOBENCH_TEST_STREAMS"},
		{"bad flag int names the flag", []string{"--streams=x"}, nil, "-streams"},
		{"negative knob", []string{"--streams=-1"}, nil, "non-negative"},
		{"bad duration", nil, map[string]string{"PROTOBENCH_TEST_WAIT": "soon"}, "duration"},
		{"zero payload limit", []string{"--max-payload-bytes=0"}, nil, "--max-payload-bytes"},
		{"unknown flag", []string{"--nope"}, nil, "nope"},
		{"listen without port", []string{"--listen=localhost"}, nil, "--listen"},
		{"metrics listen from env without port", nil, map[string]string{"PROTOBENCH_METRICS_LISTEN": "9100"}, "--metrics-listen"},
		{"stray argument", []string{"serve"}, nil, "unexpected argument"},
		// testSpec's server cannot compress (Spec.Gzip is false).
		{"gzip on a server that cannot", nil, map[string]string{"PROTOBENCH_COMPRESSION": "gzip"}, "--compression gzip: the test server cannot compress"},
		{"unknown compression", []string{"--compression=br"}, nil, `--compression "br": want none or gzip`},
		{"negative handler cpu", []string{"--handler-cpu=-1us"}, nil, "-handler-cpu"},
		{"handler cpu above its bound", nil, map[string]string{"PROTOBENCH_HANDLER_CPU": "2ms"}, "--handler-cpu"},
		{"handler cpu not a duration", nil, map[string]string{"PROTOBENCH_HANDLER_CPU": "fast"}, "PROTOBENCH_HANDLER_CPU"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			_, _, err := ParseConfig(testSpec(new(int), new(string), new(time.Duration)), tt.args, lookup)
			if err == nil || !strings.Contains(err.Error(), tt.wantText) {
				t.Fatalf("err = %v, want one mentioning %q", err, tt.wantText)
			}
		})
	}
}

func TestStartHealthConfigProbeStop(t *testing.T) {
	cfg, build, err := ParseConfig(testSpec(new(int), new(string), new(time.Duration)),
		[]string{"--listen=127.0.0.1:0", "--metrics-listen=127.0.0.1:0", "--streams=42"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Start(cfg, build, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := Probe(r.MetricsAddr(), time.Second); err != nil {
		t.Fatalf("probe of a running server: %v", err)
	}
	resp, err := http.Get("http://" + r.MetricsAddr() + "/config")
	if err != nil {
		t.Fatal(err)
	}
	var doc ConfigDoc
	err = json.NewDecoder(resp.Body).Decode(&doc)
	resp.Body.Close()
	if err != nil || doc.Protocol != "test" || doc.GOMAXPROCS < 1 || doc.Addrs["main"] == "" || len(doc.Knobs) != 3 {
		t.Fatalf("/config = %+v, %v", doc, err)
	}
	if doc.Knobs[0].Value != float64(42) {
		t.Fatalf("/config knob streams = %v, want 42", doc.Knobs[0].Value)
	}
	r.ready.Store(false) // as during Stop: health must say so before the listener goes
	if err := Probe(r.MetricsAddr(), time.Second); err == nil {
		t.Fatal("probe succeeded while the server was not ready")
	}
	addr := r.MetricsAddr()
	if err := r.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-r.Done()
	if err := Probe(addr, time.Second); err == nil {
		t.Fatal("probe succeeded after Stop")
	}
}

func TestReadQuota(t *testing.T) {
	tests := []struct {
		name      string
		files     map[string]string
		wantCores float64
		wantFile  string
	}{
		{"v2 quota", map[string]string{"sys/fs/cgroup/cgroup.controllers": "cpu", "sys/fs/cgroup/cpu.max": "150000 100000\n"}, 1.5, "sys/fs/cgroup/cpu.max"},
		{"v2 unlimited", map[string]string{"sys/fs/cgroup/cgroup.controllers": "cpu", "sys/fs/cgroup/cpu.max": "max 100000\n"}, 0, "sys/fs/cgroup/cpu.max"},
		{"v2 nested via /proc/self/cgroup", map[string]string{
			"proc/self/cgroup":                     "0::/system.slice/x\n",
			"sys/fs/cgroup/cgroup.controllers":     "cpu",
			"sys/fs/cgroup/system.slice/x/cpu.max": "50000 100000\n",
			"sys/fs/cgroup/cpu.max":                "max 100000\n",
		}, 0.5, "sys/fs/cgroup/system.slice/x/cpu.max"},
		{"v1 container mount", map[string]string{
			"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us":  "100000\n",
			"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n",
		}, 1, "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us"},
		{"v1 host path", map[string]string{
			"proc/self/cgroup": "4:cpu,cpuacct:/docker/abc\n3:memory:/docker/abc\n",
			"sys/fs/cgroup/cpu/docker/abc/cpu.cfs_quota_us":  "250000\n",
			"sys/fs/cgroup/cpu/docker/abc/cpu.cfs_period_us": "100000\n",
			"sys/fs/cgroup/cpu/cpu.cfs_quota_us":             "-1\n",
			"sys/fs/cgroup/cpu/cpu.cfs_period_us":            "100000\n",
		}, 2.5, "sys/fs/cgroup/cpu/docker/abc/cpu.cfs_quota_us"},
		{"v1 unlimited", map[string]string{
			"sys/fs/cgroup/cpu/cpu.cfs_quota_us":  "-1\n",
			"sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n",
		}, 0, "sys/fs/cgroup/cpu/cpu.cfs_quota_us"},
		{"no cgroup", nil, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for p, content := range tt.files {
				full := filepath.Join(root, p)
				os.MkdirAll(filepath.Dir(full), 0o755)
				if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cores, file := readQuota(root)
			wantFile := ""
			if tt.wantFile != "" {
				wantFile = filepath.Join(root, tt.wantFile)
			}
			if cores != tt.wantCores || file != wantFile {
				t.Fatalf("readQuota = %v from %q, want %v from %q", cores, file, tt.wantCores, wantFile)
			}
		})
	}
}

func TestMetricsNames(t *testing.T) {
	m := NewMetrics("grpc")
	m.ObserveRequest("Echo", "OK", 30*time.Microsecond)
	m.ObserveMessage(PatternPipeline, 256)
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{
		"protobench_server_requests_total":           false,
		"protobench_server_request_duration_seconds": false,
		"protobench_server_messages_total":           false,
		"protobench_server_message_bytes_total":      false,
	}
	for _, f := range fams {
		if _, ok := want[f.GetName()]; ok {
			want[f.GetName()] = true
		}
	}
	for name, seen := range want {
		if !seen {
			t.Errorf("metric %s not registered", name)
		}
	}
}
