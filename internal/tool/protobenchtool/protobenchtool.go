// Package protobenchtool is the tool adapter for protobench's own load generator (`protobench
// load`, package loadgen), the primary tool of every comparison: it drives every protocol with the
// same client architecture.
//
// Args builds the `load` command line from an invocation: the JSON result goes to
// RawDir/RawPrefix.json, live metrics are served on :9102 (Prometheus scrapes the fixed container
// name protobench-loadgen) with the invocation's labels, and the generator does its own warm-up,
// which it excludes from the result. Check validates the invocation with the generator's own flag
// validation, so the adapter and the generator cannot disagree. Parse reads the result file,
// whose common fields already carry the normalized record's names; for a step split among
// several generators (tool.Split), ParseParts merges the parts' files (parts.go).
package protobenchtool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strconv"
	"time"

	"github.com/protobench/protobench/internal/loadgen"
	// loadcmd links every driver in, so that Check validates any scheme as `load` would.
	_ "github.com/protobench/protobench/internal/loadgen/loadcmd"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/targets"
	"github.com/protobench/protobench/internal/tool"
)

// MetricsListen is where the generator serves live metrics inside its container.
const MetricsListen = ":9102"

// Adapter is the protobench generator's adapter.
type Adapter struct{}

func init() { tool.Register(Adapter{}) }

// Name is "protobench".
func (Adapter) Name() string { return "protobench" }

// Service is the compose service the generator runs in.
func (Adapter) Service() string { return "loadgen" }

// OwnWarmup is true: `load --warmup` runs the warm-up on the same connections and leaves it out
// of every figure.
func (Adapter) OwnWarmup() bool { return true }

// Capabilities: every protocol, method, model and HTTP mode, and method mixes: the generator is
// what every comparison runs on. It is the tool whose results merge when several client nodes
// share a step (Parts: parts.go).
func (Adapter) Capabilities() tool.Capabilities {
	var modes []tool.HTTPMode
	for _, v := range []string{targets.HTTP1, targets.HTTP2} {
		for _, e := range []string{targets.EncodingJSON, targets.EncodingProtobuf} {
			modes = append(modes, tool.HTTPMode{Version: v, Encoding: e})
		}
	}
	return tool.Capabilities{
		LiveMetrics: tool.LiveScrape,
		Protocols:   targets.Protocols, Models: []string{"closed", "open"}, HTTP: modes, Mix: true, Image: "loadgen",
		Requests: true, TLS: true, Program: "protobench", Parts: Adapter{},
		// What the registered drivers can do (a driver's scheme is its protocol's name): the
		// churners, and those that compress under compression gzip.
		Churn: loadgen.ChurnSchemes(),
		Gzip:  loadgen.GzipSchemes(),
	}
}

// InputFiles is nil: the generator reads no input files.
func (Adapter) InputFiles(tool.Invocation) map[string][]byte { return nil }

// ResultFile is the base name of the JSON result under RawDir.
func ResultFile(inv tool.Invocation) string { return inv.RawPrefix + ".json" }

// TimeseriesFile is the base name of the per-second timeline under RawDir (record.Timeseries).
func TimeseriesFile(inv tool.Invocation) string { return inv.RawPrefix + ".timeseries.json" }

// Check reports why the generator cannot run the invocation, in the generator's own words.
func (a Adapter) Check(inv tool.Invocation) error {
	switch inv.Model {
	case "closed", "open":
	default:
		return fmt.Errorf("protobench: model %q, want closed or open", inv.Model)
	}
	if inv.Model == "open" && !(inv.RatePerSec > 0) {
		return fmt.Errorf("protobench: the open model needs a positive rate, got %v", inv.RatePerSec)
	}
	if r := inv.Request; r != nil && r.HostProtoFile != "" {
		// The generator reads the proto where it runs; here, that is the host's copy.
		host := *r
		host.ProtoFile = r.HostProtoFile
		inv.Request = &host
	}
	if inv.CAFile != "" && inv.HostCAFile != "" {
		// The generator's parser reads the CA, and the path it is given is the container's.
		// Here, on the host, that is the run's own copy; before the run has made it (a dry
		// run), the TLS flags, which the runner writes itself, are left out of the check.
		if _, err := os.Stat(inv.HostCAFile); err == nil {
			inv.CAFile = inv.HostCAFile
		} else {
			inv.CAFile = ""
		}
	}
	var stderr bytes.Buffer
	args := a.Args(inv)
	if _, _, err := loadgen.ParseArgs(args[1:], &stderr); err != nil {
		return fmt.Errorf("protobench: %v", err)
	}
	return nil
}

// Args is the command line, `load` first.
func (Adapter) Args(inv tool.Invocation) []string {
	args := []string{"load",
		"--target", inv.Scheme + "://" + inv.Address,
		"--target-name", inv.Target,
	}
	if inv.Request == nil {
		// A custom target's own call names itself (below).
		args = append(args, "--method", inv.Method)
	}
	if inv.Pattern != "" {
		args = append(args, "--zmq-pattern", inv.Pattern)
	}
	if inv.HTTPVersion != "" {
		args = append(args, "--http-version", inv.HTTPVersion)
	}
	if inv.Encoding != "" {
		args = append(args, "--encoding", inv.Encoding)
	}
	if inv.CAFile != "" {
		args = append(args, "--tls-ca", inv.CAFile)
		if inv.ServerName != "" {
			args = append(args, "--tls-server-name", inv.ServerName)
		}
	}
	if r := inv.Request; r != nil {
		// A custom target's own call: the drivers' flags for it.
		if r.Call != "" {
			args = append(args, "--grpc-proto", r.ProtoFile, "--grpc-call", r.Call, "--grpc-data", r.Data)
		} else {
			args = append(args, "--http-method", r.HTTPMethod, "--http-path", r.HTTPPath)
			for _, h := range r.HTTPHeaders {
				args = append(args, "--http-header", h)
			}
			if r.HTTPBody != "" {
				args = append(args, "--http-body", r.HTTPBody)
			}
		}
	}
	args = append(args,
		"--connections", strconv.Itoa(inv.Connections),
		"--concurrency", strconv.Itoa(inv.Concurrency),
	)
	if inv.RequestsPerConnection > 0 {
		args = append(args, "--requests-per-connection", strconv.Itoa(inv.RequestsPerConnection))
	}
	if inv.Compression != "" {
		args = append(args, "--compression", inv.Compression)
	}
	if inv.Model == "open" {
		args = append(args, "--rate", strconv.FormatFloat(inv.RatePerSec, 'f', -1, 64))
	}
	if !inv.StartAt.IsZero() {
		args = append(args, "--start-at", loadgen.FormatStartAt(inv.StartAt))
	}
	args = append(args,
		"--duration", inv.Duration.String(),
		"--warmup", inv.Warmup.String(),
		"--payload-bytes", strconv.Itoa(inv.PayloadBytes),
		"--out", path.Join(inv.RawDir, ResultFile(inv)),
		"--timeseries", path.Join(inv.RawDir, TimeseriesFile(inv)),
		"--metrics-listen", MetricsListen,
	)
	keys := make([]string, 0, len(inv.Labels))
	for k := range inv.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, allowed := range loadgen.AllowedLabels {
			if k == allowed {
				args = append(args, "--label", k+"="+inv.Labels[k])
			}
		}
	}
	return append(args, "--progress", "off")
}

// Parse reads the JSON result the generator wrote. When there is none but the parts of a split
// step (tool.Split) wrote theirs, it merges them (ParseParts): a runner that knows how many
// parts ran should call ParseParts, which also notices a missing last part.
func (Adapter) Parse(inv tool.Invocation, raw tool.Raw) (record.Record, error) {
	name := ResultFile(inv)
	b, ok := raw.Files[name]
	if n := countParts(inv, raw); !ok && n > 0 {
		return ParseParts(inv, n, raw)
	}
	if !ok {
		return record.Record{}, fmt.Errorf("protobench wrote no %s (its last words: %q)", name, tool.LastLine(raw.Stderr))
	}
	res, err := Decode(bytes.NewReader(b))
	if err != nil {
		return record.Record{}, fmt.Errorf("%s: %v", name, err)
	}
	return recordOf(res), nil
}

// recordOf is a result's record, with the parts of a merged result (its "parts") as the
// record's ClientParts.
func recordOf(res *loadgen.Result) record.Record {
	rec := res.Record
	rec.ClientParts = nil
	if res.Parts == nil {
		return rec
	}
	for i, p := range res.Parts.Parts {
		n, err := strconv.Atoi(p.Part)
		if err != nil {
			n = i + 1
		}
		rec.ClientParts = append(rec.ClientParts, record.ClientPart{
			Part: n, Connections: p.Connections, Concurrency: p.Concurrency, Rate: p.Rate,
			Requests: p.Requests, Errors: p.Errors, ThroughputRPS: p.ThroughputRPS, DurationS: p.DurationS,
			LatencyP99Ms: p.LatencyP99Ms, LatencyCount: p.LatencyCount, Error: p.Error,
			Start: unixUTC(p.StartUnix), End: unixUTC(p.EndUnix), StartWaitS: p.StartWaitS, StartLateS: p.StartLateS,
		})
	}
	return rec
}

// unixUTC is a result's Unix time in seconds as a UTC time, to the microsecond (a float64 of
// seconds since 1970 holds about that); zero stays zero.
func unixUTC(s float64) time.Time {
	if s == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(s*1e9)).Round(time.Microsecond).UTC()
}

// Decode reads a `protobench load` JSON result.
func Decode(r io.Reader) (*loadgen.Result, error) {
	var res loadgen.Result
	dec := json.NewDecoder(r)
	if err := dec.Decode(&res); err != nil {
		return nil, err
	}
	if res.Tool != "protobench" {
		return nil, fmt.Errorf("not a protobench load result (tool %q)", res.Tool)
	}
	return &res, nil
}
