package record

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestDecodeTimeseries(t *testing.T) {
	want := Timeseries{Version: TimeseriesVersion, Target: "grpc", Tool: "protobench", Method: "GetUser", Model: "open",
		StartUnix: 100, EndUnix: 102, IntervalS: 1, Points: []TimeseriesPoint{
			{TS: 0, SpanS: 1, Warmup: true, Requests: 10, ThroughputRPS: 10, LatencyMs: PointLatency{P50: 1, P99: 2, Max: 3}},
			{TS: 1, SpanS: 1, Requests: 12, Errors: 1, ThroughputRPS: 12, LatencyMs: PointLatency{P50: 1, P99: 4, Max: 5},
				ServiceTimeMs: &PointLatency{P50: 1, P99: 2, Max: 5}},
		}}
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeTimeseries(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("decoded %+v, want %+v", *got, want)
	}
	for _, bad := range []struct{ in, want string }{
		{`{"version": 2, "points": []}`, "version 2, want 1"},
		{`{"version": 1, "points": {}}`, "cannot unmarshal"},
		{`not json`, "timeseries:"},
	} {
		if _, err := DecodeTimeseries(strings.NewReader(bad.in)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: error %v, want one saying %q", bad.in, err, bad.want)
		}
	}
}
