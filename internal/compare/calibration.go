package compare

import (
	"encoding/json"
	"fmt"
	"math"
	"os"

	"github.com/protobench/protobench/internal/stats"
)

// Calibration is the between-run spread measured on A/A runs: for each metric, the variance on
// the log scale of one run's geometric mean across runs of the same code on the same host, with
// its degrees of freedom. A folder is one state of the host, so this, not a folder's own
// repeats, is the noise a change between two folders must stand out from.
type Calibration struct {
	Throughput stats.Prior `json:"throughput"`
	P99        stats.Prior `json:"p99"`
	Source     string      `json:"source"`
}

// RecordedCalibration is the between-run spread of the only real A/A through compare kept so
// far (docs/statistics.md, "A real A/A through compare", 2026-11-27): two runs of the same
// commit, grpc-vs-rest getuser, 5 repeats each; throughput medians gRPC 35.7k and 39.8k, REST
// 35.1k and 34.2k req/s. Each row's log ratio is one draw of the difference of two runs'
// means: (ln(39.8/35.7)² + ln(34.2/35.1)²)/2 = 0.00630 is the variance of a difference, half
// of it a run's, on 2 degrees of freedom. p99 was not recorded. bench-aa measures both properly
// (--calibration takes its file).
var RecordedCalibration = Calibration{
	Throughput: stats.Prior{DF: 2, Var: recordedRunVar()},
	Source:     "the real A/A of 2026-11-27 in docs/statistics.md (2 rows, 2 degrees of freedom); measure your host's with bench-aa",
}

func recordedRunVar() float64 {
	a, b := math.Log(39.8/35.7), math.Log(34.2/35.1)
	return (a*a + b*b) / 2 / 2
}

// LoadCalibration reads a calibration file written by bench-aa.
func LoadCalibration(path string) (Calibration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Calibration{}, fmt.Errorf("--calibration: %w", err)
	}
	var c Calibration
	if err := json.Unmarshal(data, &c); err != nil {
		return Calibration{}, fmt.Errorf("--calibration %s: %v (expected the JSON bench-aa writes)", path, err)
	}
	for name, p := range map[string]stats.Prior{"throughput": c.Throughput, "p99": c.P99} {
		if p.DF < 0 || p.Var < 0 || math.IsNaN(p.Var) || (p.DF > 0 && p.Var == 0) {
			return Calibration{}, fmt.Errorf("--calibration %s: %s: want df ≥ 0 and a positive var, got df %v var %v", path, name, p.DF, p.Var)
		}
	}
	if c.Source == "" {
		c.Source = path
	}
	return c, nil
}

// metric picks the metric's prior: 0 throughput, 1 p99.
func (c Calibration) metric(m int) stats.Prior {
	if m == 0 {
		return c.Throughput
	}
	return c.P99
}
