// Package codesize measures the module's hand-written Go code the way CONTRIBUTING limits it:
// functions a reader can hold (at most MaxFuncLines) in files split by concept (at most
// MaxFileLines). Tests and generated code are not held to it. Its test fails when a limit is
// crossed, so the limits cannot drift the way a figure in a document does.
package codesize

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The limits (issue 40: functions a reader can hold, files by concept).
const (
	MaxFuncLines = 80
	MaxFileLines = 500
)

// Func is one function or method and its length in lines, from func to its closing brace.
type Func struct {
	File, Name string
	Lines      int
}

// File is one source file and its length in lines.
type File struct {
	Path  string
	Lines int
}

// Report is the module's hand-written code, longest first.
type Report struct {
	Files []File
	Funcs []Func
}

// Measure walks the module at root: every .go file that is neither a test nor generated (a
// "Code generated ... DO NOT EDIT." line, Go's convention), outside .git and testdata.
func Measure(root string) (Report, error) {
	var r Report
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == ".git" || name == "testdata" || name == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		generated, lines, err := scan(path)
		if err != nil || generated {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		r.Files = append(r.Files, File{Path: rel, Lines: lines})
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Body != nil {
				n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
				r.Funcs = append(r.Funcs, Func{File: rel, Name: funcName(fn), Lines: n})
			}
		}
		return nil
	})
	sort.SliceStable(r.Files, func(i, j int) bool { return r.Files[i].Lines > r.Files[j].Lines })
	sort.SliceStable(r.Funcs, func(i, j int) bool { return r.Funcs[i].Lines > r.Funcs[j].Lines })
	return r, err
}

// scan reports whether the file is generated and counts its lines.
func scan(path string) (generated bool, lines int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return false, 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for s.Scan() {
		lines++
		if t := s.Text(); strings.HasPrefix(t, "// Code generated ") && strings.HasSuffix(t, " DO NOT EDIT.") {
			generated = true
		}
	}
	return generated, lines, s.Err()
}

// funcName is Name or Receiver.Name, the receiver without its pointer or type parameters.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}
