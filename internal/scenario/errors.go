package scenario

import (
	"fmt"
	"sort"
	"strings"
)

// Error is one problem in a scenario file, located at the line of the offending YAML node.
// Its text is "file:line: field: what was expected", the form editors and CI logs link to.
type Error struct {
	File  string
	Line  int
	Field string // dotted path such as steps[2].matrix.concurrency
	Msg   string
}

// Error formats the problem as "file:line: field: message".
func (e *Error) Error() string {
	return fmt.Sprintf("%s:%d: %s: %s", e.File, e.Line, e.Field, e.Msg)
}

// Errors is every problem found in one scenario file, in line order. Reporting them all at once
// saves the user a fix-and-retry loop per mistake.
type Errors []*Error

// Error lists the problems one per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap exposes the single errors to errors.As and errors.Is.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// maxErrors bounds how many problems one file reports; past that the rest are usually echoes.
const maxErrors = 50

// collector gathers located errors for one file.
type collector struct {
	file string
	errs Errors
}

func (c *collector) add(line int, field, format string, args ...any) {
	if len(c.errs) >= maxErrors {
		return
	}
	if line < 1 {
		line = 1
	}
	// One error, one line: YAML keys and library messages may hold newlines.
	msg := strings.ReplaceAll(fmt.Sprintf(format, args...), "\n", " ")
	c.errs = append(c.errs, &Error{File: c.file, Line: line, Field: field, Msg: msg})
}

// err returns the collected errors sorted by line, or nil.
func (c *collector) err() error {
	if len(c.errs) == 0 {
		return nil
	}
	sort.SliceStable(c.errs, func(i, j int) bool { return c.errs[i].Line < c.errs[j].Line })
	return c.errs
}
