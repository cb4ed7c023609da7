package e2e

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// e2eLine is one `go test ... -run PATTERN ... ./internal/e2e` line of run.sh.
var e2eLine = regexp.MustCompile(`-run\s+('[^']+'|"[^"]+"|\S+)[^\n]*\./internal/e2e`)

// TestEveryEndToEndTestRunsInRunSh: every TestX of this package is picked by one of run.sh's
// `-run` patterns for ./internal/e2e. These tests skip without PROTOBENCH_E2E, so one missing
// from run.sh never runs anywhere (TestGateEndToEnd and TestServerCountEndToEnd were written,
// passed once, and then sat outside the suite).
func TestEveryEndToEndTestRunsInRunSh(t *testing.T) {
	script, err := os.ReadFile(filepath.Join("..", "..", "run.sh"))
	if err != nil {
		t.Fatal(err)
	}
	var patterns []*regexp.Regexp
	for _, m := range e2eLine.FindAllStringSubmatch(string(script), -1) {
		p := strings.Trim(m[1], `'"`)
		re, err := regexp.Compile(p)
		if err != nil {
			t.Fatalf("run.sh: -run %q: %v", p, err)
		}
		patterns = append(patterns, re)
	}
	if len(patterns) == 0 {
		t.Fatal("run.sh has no go test -run line for ./internal/e2e")
	}
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	tests := 0
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Name.Name == "TestMain" {
				continue
			}
			if fn.Name.Name == "TestEveryEndToEndTestRunsInRunSh" {
				continue // runs in the unit stage, where PROTOBENCH_E2E is not needed
			}
			tests++
			found := false
			for _, re := range patterns {
				if re.MatchString(fn.Name.Name) {
					found = true
				}
			}
			if !found {
				t.Errorf("%s (%s) is in no `-run` pattern of run.sh's ./internal/e2e lines, so no suite runs it", fn.Name.Name, f)
			}
		}
	}
	if tests == 0 {
		t.Fatal("found no end-to-end tests in this package")
	}
}
