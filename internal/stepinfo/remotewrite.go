package stepinfo

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/golang/snappy"
	"google.golang.org/protobuf/encoding/protowire"
)

// Sample is one value at one instant.
type Sample struct {
	At    time.Time
	Value float64
}

// Series is a metric name, its labels and samples in ascending time.
type Series struct {
	Name    string
	Labels  map[string]string
	Samples []Sample
}

// Writer sends series with Prometheus remote write 1.0: a snappy-compressed protobuf
// prometheus.WriteRequest POSTed to /api/v1/write. The message has four small types, encoded
// here with protowire rather than by importing Prometheus itself for its generated prompb.
type Writer struct {
	URL  string // .../api/v1/write
	HTTP *http.Client
}

// NewWriter writes to the Prometheus at baseURL (e.g. http://127.0.0.1:9090).
func NewWriter(baseURL string) *Writer {
	return &Writer{URL: strings.TrimRight(baseURL, "/") + "/api/v1/write", HTTP: &http.Client{Timeout: 5 * time.Second}}
}

// Write sends series in one request. Prometheus answers 204; anything else is an error with its
// message (for example "out of order sample" or the receiver being disabled).
func (w *Writer) Write(ctx context.Context, series []Series) error {
	if len(series) == 0 {
		return nil
	}
	return w.Send(ctx, EncodeWriteRequest(series))
}

// Send sends an encoded prometheus.WriteRequest, for messages Series cannot express (tests write
// native histograms as k6 does).
func (w *Writer) Send(ctx context.Context, writeRequest []byte) error {
	body := snappy.Encode(nil, writeRequest)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	resp, err := w.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("remote write to %s: %w", w.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("remote write to %s: HTTP %d: %s", w.URL, resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	return nil
}

// EncodeWriteRequest is the protobuf of prometheus.WriteRequest{timeseries} (remote.proto):
//
//	WriteRequest { repeated TimeSeries timeseries = 1; }
//	TimeSeries   { repeated Label labels = 1; repeated Sample samples = 2; }
//	Label        { string name = 1; string value = 2; }
//	Sample       { double value = 1; int64 timestamp = 2; } // milliseconds
//
// Labels go sorted by name with __name__ first, as the receiver expects.
func EncodeWriteRequest(series []Series) []byte {
	var out []byte
	for _, s := range series {
		ts := AppendLabels(nil, s.Name, s.Labels)
		for _, smp := range s.Samples {
			var b []byte
			b = protowire.AppendTag(b, 1, protowire.Fixed64Type)
			b = protowire.AppendFixed64(b, math.Float64bits(smp.Value))
			b = protowire.AppendTag(b, 2, protowire.VarintType)
			b = protowire.AppendVarint(b, uint64(smp.At.UnixMilli()))
			ts = protowire.AppendTag(ts, 2, protowire.BytesType)
			ts = protowire.AppendBytes(ts, b)
		}
		out = protowire.AppendTag(out, 1, protowire.BytesType)
		out = protowire.AppendBytes(out, ts)
	}
	return out
}

// AppendLabels appends a TimeSeries' label fields (field 1): __name__ first, then labels sorted by
// name, as the receiver expects. Tests that write other sample types (native histograms) build
// their TimeSeries on it.
func AppendLabels(ts []byte, name string, labels map[string]string) []byte {
	names := make([]string, 0, len(labels))
	for k := range labels {
		names = append(names, k)
	}
	sort.Strings(names)
	ts = appendLabel(ts, "__name__", name)
	for _, k := range names {
		ts = appendLabel(ts, k, labels[k])
	}
	return ts
}

func appendLabel(b []byte, name, value string) []byte {
	var l []byte
	l = protowire.AppendTag(l, 1, protowire.BytesType)
	l = protowire.AppendString(l, name)
	l = protowire.AppendTag(l, 2, protowire.BytesType)
	l = protowire.AppendString(l, value)
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	return protowire.AppendBytes(b, l)
}
