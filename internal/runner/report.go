package runner

import "io"

// renderReport writes the results folder's report.html, interrupted runs included, through
// package report once it exists; until then the folder's summary.md is the report.
func renderReport(dir string, stderr io.Writer) {}
