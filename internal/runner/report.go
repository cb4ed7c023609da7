package runner

import (
	"fmt"
	"io"

	"github.com/protobench/protobench/internal/report"
)

// renderReport writes the results folder's report.html at the end of every run, interrupted
// ones included; a report that cannot be made is a warning, never a lost run.
func renderReport(dir string, stderr io.Writer) {
	if err := report.Write(dir); err != nil {
		fmt.Fprintf(stderr, "protobench: warning: report.html: %v\n", err)
	}
}
