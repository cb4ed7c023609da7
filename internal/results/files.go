package results

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/scenario"
)

// File names inside a results folder.
const (
	RunFile      = "run.json"
	JSONFile     = "results.json"
	CSVFile      = "results.csv"
	SummaryFile  = "summary.md"
	ScenarioFile = "scenario.yaml" // the exact bytes whose hash run.json records
)

// WriteAll writes a results folder: run.json (run, when not nil), scenario.yaml (the plan's
// scenario file, byte for byte), results.json, results.csv and summary.md. It applies the
// self-evident flags (ApplyFlags) to a copy of recs first, so the files agree whoever calls it.
// Each file is replaced atomically, so calling WriteAll after every run keeps a folder that an
// interrupted run can be resumed from.
func WriteAll(dir string, run any, plan *scenario.Plan, recs []record.Record) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	recs = normalize(recs)
	ApplyFlags(recs)
	if run != nil {
		data, err := json.MarshalIndent(run, "", "  ")
		if err != nil {
			return fmt.Errorf("results: run.json: %w", err)
		}
		if err := writeFile(filepath.Join(dir, RunFile), append(data, '\n')); err != nil {
			return err
		}
	}
	if plan != nil && plan.Scenario != nil && len(plan.Scenario.Raw) > 0 {
		if err := writeFile(filepath.Join(dir, ScenarioFile), plan.Scenario.Raw); err != nil {
			return err
		}
	}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, recs); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, JSONFile), buf.Bytes()); err != nil {
		return err
	}
	buf.Reset()
	if err := WriteCSV(&buf, recs); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, CSVFile), buf.Bytes()); err != nil {
		return err
	}
	buf.Reset()
	if err := writeSummary(&buf, plan, recs, linksOf(run)); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, SummaryFile), buf.Bytes())
}

// Load reads results.json from a results folder, e.g. to resume a run or to re-render a summary.
func Load(dir string) ([]record.Record, error) {
	data, err := os.ReadFile(filepath.Join(dir, JSONFile))
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	var recs []record.Record
	if err := json.Unmarshal(data, &recs); err != nil {
		return nil, fmt.Errorf("results: %s: %w", filepath.Join(dir, JSONFile), err)
	}
	return recs, nil
}

// FromRun starts a Record with everything the plan knows about a run; the tool adapter's Parse
// fills the measured fields and the runner the server's CPU and memory.
func FromRun(plan *scenario.Plan, run scenario.Run) record.Record {
	name := ""
	if plan != nil && plan.Scenario != nil {
		name = plan.Scenario.Name
	}
	return record.Record{
		Scenario: name, Step: run.Step, Repeat: run.Repeat,
		Target: run.Target, Tool: run.Tool, Method: run.Method, Model: run.Model,
		Connections: run.Connections, Concurrency: run.Concurrency, Rate: run.Rate,
		LoadPercent: run.LoadPercent, CapacityStep: run.CapacityStep,
		PayloadBytes: run.PayloadBytes, DurationS: run.Duration.Seconds(),
		InFlight: run.InFlight, Topology: run.TopologyText(),
		HTTPVersion: run.HTTPVersion, Encoding: run.Encoding,
		RequestsPerConnection: run.RequestsPerConnection,
		Compression:           run.Compression,
		Flags:                 []string{},
	}
}

// WriteJSON writes records as an indented JSON array (results.json); figures a record does not
// have (Missing) are null.
func WriteJSON(w io.Writer, recs []record.Record) error {
	data, err := marshalRecords(normalize(recs))
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

// normalize copies recs with nil slices made empty, so JSON always holds [] rather than null.
func normalize(recs []record.Record) []record.Record {
	out := make([]record.Record, len(recs))
	copy(out, recs)
	for i := range out {
		if out[i].Flags == nil {
			out[i].Flags = []string{}
		} else {
			out[i].Flags = append([]string{}, out[i].Flags...)
		}
	}
	return out
}

// column is one flat CSV column: its header and how to read it from a record.
type column struct {
	name  string
	index []int // reflect field path
	ptr   bool  // the path crosses a pointer (service_time_ms) that may be nil
}

// columns derives the CSV header from Record's JSON names, flattening nested structs as
// "latency_ms.p99". Deriving rather than listing keeps the CSV in step with Record by itself.
func columns() []column {
	var cols []column
	var walk func(t reflect.Type, prefix string, index []int, ptr bool)
	walk = func(t reflect.Type, prefix string, index []int, ptr bool) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			path := append(append([]int{}, index...), i)
			ft, isPtr := f.Type, false
			if ft.Kind() == reflect.Pointer {
				ft, isPtr = ft.Elem(), true
			}
			if ft.Kind() == reflect.Struct {
				walk(ft, prefix+name+".", path, ptr || isPtr)
				continue
			}
			cols = append(cols, column{name: prefix + name, index: path, ptr: ptr || isPtr})
		}
	}
	walk(reflect.TypeOf(record.Record{}), "", nil, false)
	return cols
}

// CSVHeader is the header row of results.csv.
func CSVHeader() []string {
	cols := columns()
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.name
	}
	return out
}

// WriteCSV writes records as results.csv: one row per record, lists joined with ";", and the
// fields of a missing optional block (service_time_ms) left empty.
func WriteCSV(w io.Writer, recs []record.Record) error {
	cols := columns()
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader()); err != nil {
		return err
	}
	row := make([]string, len(cols))
	for _, r := range recs {
		v := reflect.ValueOf(r)
		missing := map[string]bool{}
		for _, m := range Missing(r) {
			missing[m] = true
		}
		for i, c := range cols {
			top, _, _ := strings.Cut(c.name, ".")
			if missing[top] {
				row[i] = "" // not measured, which 0 would hide
				continue
			}
			row[i] = cell(v, c)
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func cell(v reflect.Value, c column) string {
	for _, i := range c.index {
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return ""
			}
			v = v.Elem()
		}
		v = v.Field(i)
	}
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'f', -1, 64)
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Slice:
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = fmt.Sprint(v.Index(i).Interface())
		}
		return strings.Join(parts, ";")
	}
	return fmt.Sprint(v.Interface())
}

// writeFile replaces path atomically; see WriteFileAtomic.
func writeFile(path string, data []byte) error {
	if err := WriteFileAtomic(path, data); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	return nil
}

// WriteFileAtomic replaces path with data, mode 0644: it writes a uniquely named temporary file
// in the same directory, fsyncs it, and renames it into place, so a reader sees the old file or
// the new one and never half of one, whatever interrupts the write (a signal, a full disk). The
// rename replaces a symlink at path instead of writing through it, and a directory that is
// itself a symlink is refused. A failed write leaves no temporary file behind.
func WriteFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if st, err := os.Lstat(dir); err == nil && st.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("%s is a symlink: refusing to write %s through it", dir, filepath.Base(path))
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	ok = true
	// The rename itself must survive a crash too.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
