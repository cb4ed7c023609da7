package runner

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/report"
	"github.com/protobench/protobench/internal/results"
)

// The results folder is written at three moments of a run, each for its own reason:
//   - after each run, writeRecords replaces results.json, so that an interrupted run keeps what
//     it measured and --resume can continue from it;
//   - at the session's end, session.finish writes run.json's end (session.writeInfo) and
//     results.WriteAll the records again with results.csv and summary.md;
//   - after the teardown, closeRun writes report.html (renderReport), so that a teardown after
//     a signal is not kept waiting by the report.
// run.json's start (openSession) and scenario.yaml are written when the folder is made.

// writeRecords replaces results.json with recs, in the results package's format (missing
// figures as null).
func writeRecords(dir string, recs []record.Record) error {
	var buf bytes.Buffer
	if err := results.WriteJSON(&buf, recs); err != nil {
		return err
	}
	return results.WriteFileAtomic(filepath.Join(dir, results.JSONFile), buf.Bytes())
}

// renderReport writes the results folder's report.html at the end of every run, interrupted
// ones included; a report that cannot be made is a warning, never a lost run.
func renderReport(dir string, stderr io.Writer) {
	if err := report.Write(dir); err != nil {
		fmt.Fprintf(stderr, "protobench: warning: report.html: %v\n", err)
	}
}
