package measure

import (
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/record"
)

func TestUsageQueriesMatchComposeProjectAndServiceLabels(t *testing.T) {
	q := usageQueries("pb-x", "r1", "python-grpc", 30500*time.Millisecond)
	want := `container_cpu_usage_seconds_total{container_label_com_docker_compose_project="pb-x",container_label_com_docker_compose_service="python-grpc",container_label_protobench_run_id="r1"}`
	if q["cpu"] != want {
		t.Fatalf("cpu selector = %s\nwant %s", q["cpu"], want)
	}
	for key, expr := range q {
		if !strings.Contains(expr, `container_label_com_docker_compose_project="pb-x"`) {
			t.Errorf("%s query %s lacks the project", key, expr)
		}
		// Counters are read as raw samples around the window (prom.CounterDelta); the rest over it.
		if !counterQueries[key] && !strings.Contains(expr, `[30500ms]`) {
			t.Errorf("%s query %s lacks the window", key, expr)
		}
	}
}

func TestMeasuredWindow(t *testing.T) {
	started := time.Unix(1000, 0)
	ended := started.Add(40 * time.Second)
	at := func(s float64) float64 { return float64(started.Unix()) + s }
	tests := []struct {
		name       string
		parsed     record.Record
		start, end time.Duration // offsets from started
	}{
		{"tool's own window", record.Record{StartUnix: at(7), EndUnix: at(37), DurationS: 30}, 7 * time.Second, 37 * time.Second},
		{"tail of the run", record.Record{DurationS: 30}, 10 * time.Second, 40 * time.Second},
		{"implausible own window", record.Record{StartUnix: at(-100), EndUnix: at(-70), DurationS: 30}, 10 * time.Second, 40 * time.Second},
		{"longer than the run", record.Record{DurationS: 90}, 0, 40 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, e := measuredWindow(tt.parsed, started, ended)
			if got := s.Sub(started).Round(time.Millisecond); got != tt.start {
				t.Errorf("start offset = %s, want %s", got, tt.start)
			}
			if got := e.Sub(started).Round(time.Millisecond); got != tt.end {
				t.Errorf("end offset = %s, want %s", got, tt.end)
			}
		})
	}
}

// TestLifetimeWindow: with the container's own start and finish, the window counts the reported
// duration from the start plus the tool's warm-up, so a slow stop does not move it.
func TestLifetimeWindow(t *testing.T) {
	started := time.Unix(1000, 0)
	at := func(s float64) float64 { return float64(started.Unix()) + s }
	tests := []struct {
		name       string
		parsed     record.Record
		finished   time.Duration
		warmup     time.Duration
		start, end time.Duration
	}{
		{"slow stop", record.Record{DurationS: 10}, 15 * time.Second, 2 * time.Second, 2 * time.Second, 12 * time.Second},
		{"tool's own window", record.Record{StartUnix: at(3), EndUnix: at(13), DurationS: 10}, 20 * time.Second, 2 * time.Second, 3 * time.Second, 13 * time.Second},
		{"duration past the finish", record.Record{DurationS: 30}, 15 * time.Second, 0, 0, 15 * time.Second},
		{"warm-up past the finish", record.Record{DurationS: 5}, 3 * time.Second, 5 * time.Second, 0, 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, e := lifetimeWindow(tt.parsed, started, started.Add(tt.finished), tt.warmup)
			if got := s.Sub(started).Round(time.Millisecond); got != tt.start {
				t.Errorf("start offset = %s, want %s", got, tt.start)
			}
			if got := e.Sub(started).Round(time.Millisecond); got != tt.end {
				t.Errorf("end offset = %s, want %s", got, tt.end)
			}
		})
	}
}
