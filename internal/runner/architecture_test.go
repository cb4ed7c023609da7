package runner

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The section of ARCHITECTURE.md that follows one run through the code, and its chain: the line
// of arrows between backquoted functions, from the command to the measurement of one run.
const (
	pathSection = "## The path of one run through the code"
	chainArrow  = " → "
)

// nameToken is a backquoted name the section gives: `pkg.Func`, `Type.method` or a bare runner
// function. File names (`run.json`) are not names.
var (
	nameToken = regexp.MustCompile("`([A-Za-z_][A-Za-z0-9_]*(?:\\.[A-Za-z_][A-Za-z0-9_]*)?)`")
	fileName  = regexp.MustCompile(`\.(json|csv|md|html|yaml|yml|go)$`)
)

// TestArchitecturePathMatchesTheCode holds ARCHITECTURE.md's "path of one run" to the code, so
// the document cannot go stale: every name it gives must be declared (a function, method,
// interface method, type or variable of the package it names), its chain must be a chain of
// calls, and every runner function or method that a function of the chain calls must be named
// in the section: a step of the run cannot be added, renamed or hidden without the text.
func TestArchitecturePathMatchesTheCode(t *testing.T) {
	section := architectureSection(t)
	idx := indexDecls(t, filepath.Join("..", ".."))
	named := map[string]bool{}
	for _, m := range nameToken.FindAllStringSubmatch(section, -1) {
		if fileName.MatchString(m[1]) {
			continue
		}
		named[m[1]] = true
		if !idx.resolves(m[1]) {
			t.Errorf("ARCHITECTURE.md names `%s`, which the code does not declare", m[1])
		}
	}
	chain := chainOf(t, section)
	runner := idx.pkgs["runner"]
	for i, name := range chain {
		fn := runner.funcs[strings.TrimPrefix(name, "runner.")]
		if fn == nil {
			t.Errorf("the chain's `%s` is no function of package runner", name)
			continue
		}
		callees := runner.callees(t, fn)
		if i+1 < len(chain) && !callees[chain[i+1]] {
			t.Errorf("the chain says `%s` calls `%s`; it does not", name, chain[i+1])
		}
		if i == 0 {
			continue // the command's own flags and signals are not the run's steps
		}
		var missing []string
		for c := range callees {
			if !named[c] {
				missing = append(missing, c)
			}
		}
		sort.Strings(missing)
		for _, c := range missing {
			t.Errorf("`%s`, on the chain, calls `%s`, which ARCHITECTURE.md's path does not name", name, c)
		}
	}
}

// architectureSection is the text of the section, up to the next heading of its level.
func architectureSection(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, pathSection)
	if i < 0 {
		t.Fatalf("ARCHITECTURE.md has no %q", pathSection)
	}
	text = text[i+len(pathSection):]
	if j := strings.Index(text, "\n## "); j >= 0 {
		text = text[:j]
	}
	return text
}

// chainOf is the section's one line of arrows, as names.
func chainOf(t *testing.T, section string) []string {
	t.Helper()
	for _, line := range strings.Split(section, "\n") {
		if !strings.Contains(line, chainArrow) {
			continue
		}
		var chain []string
		for _, part := range strings.Split(line, chainArrow) {
			m := nameToken.FindStringSubmatch(part)
			if m == nil {
				t.Fatalf("chain link %q is not a backquoted name", part)
			}
			chain = append(chain, m[1])
		}
		if len(chain) < 3 {
			t.Fatalf("chain %q is too short to follow a run", line)
		}
		return chain
	}
	t.Fatalf("the section has no chain (backquoted names joined by %q)", chainArrow)
	return nil
}

// pkgDecls are the declarations of one package (by its name), from its non-test files.
type pkgDecls struct {
	names   map[string]bool          // package-level functions, types, variables, constants
	members map[string]bool          // "Type.name": methods, struct fields, interface methods
	embeds  map[string][]string      // interface or struct type -> its embedded type names
	funcs   map[string]*ast.FuncDecl // "name" or "Type.method", for the runner's calls
	results map[string][]string      // function or method -> its result types' names
	fields  map[string]string        // "Type.field" -> the field's type name
	params  map[*ast.FuncDecl]map[string]string
}

type declIndex struct{ pkgs map[string]*pkgDecls }

// indexDecls parses every non-test Go file of the module under root.
func indexDecls(t *testing.T, root string) *declIndex {
	t.Helper()
	idx := &declIndex{pkgs: map[string]*pkgDecls{}}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		idx.add(f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if idx.pkgs["runner"] == nil {
		t.Fatal("no package runner under the module")
	}
	return idx
}

func (idx *declIndex) pkg(name string) *pkgDecls {
	p := idx.pkgs[name]
	if p == nil {
		p = &pkgDecls{names: map[string]bool{}, members: map[string]bool{}, embeds: map[string][]string{},
			funcs: map[string]*ast.FuncDecl{}, results: map[string][]string{}, fields: map[string]string{},
			params: map[*ast.FuncDecl]map[string]string{}}
		idx.pkgs[name] = p
	}
	return p
}

func (idx *declIndex) add(f *ast.File) {
	p := idx.pkg(f.Name.Name)
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			p.addFunc(d)
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					p.names[s.Name.Name] = true
					p.addType(s)
				case *ast.ValueSpec:
					for _, n := range s.Names {
						p.names[n.Name] = true
					}
				}
			}
		}
	}
}

func (p *pkgDecls) addFunc(d *ast.FuncDecl) {
	key := d.Name.Name
	params := map[string]string{}
	if d.Recv != nil && len(d.Recv.List) == 1 {
		recv := typeName(d.Recv.List[0].Type)
		key = recv + "." + key
		p.members[key] = true
		for _, n := range d.Recv.List[0].Names {
			params[n.Name] = recv
		}
	} else {
		p.names[key] = true
	}
	for _, fl := range d.Type.Params.List {
		for _, n := range fl.Names {
			params[n.Name] = typeName(fl.Type)
		}
	}
	p.funcs[key], p.params[d] = d, params
	if d.Type.Results != nil {
		for _, fl := range d.Type.Results.List {
			for range max(1, len(fl.Names)) {
				p.results[key] = append(p.results[key], typeName(fl.Type))
			}
		}
	}
}

func (p *pkgDecls) addType(s *ast.TypeSpec) {
	var list *ast.FieldList
	switch tt := s.Type.(type) {
	case *ast.StructType:
		list = tt.Fields
	case *ast.InterfaceType:
		list = tt.Methods
	default:
		return
	}
	for _, fl := range list.List {
		if len(fl.Names) == 0 {
			p.embeds[s.Name.Name] = append(p.embeds[s.Name.Name], typeName(fl.Type))
			continue
		}
		for _, n := range fl.Names {
			p.members[s.Name.Name+"."+n.Name] = true
			p.fields[s.Name.Name+"."+n.Name] = typeName(fl.Type)
		}
	}
}

// typeName is the name of a type expression without pointers and package: *engine.Engine is
// "Engine"; "" for a type without one (a map, a func).
func typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return typeName(e.X)
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}

// resolves says whether name is declared: `pkg.Name`, `Type.member` (through embedded types),
// or a bare name of package runner.
func (idx *declIndex) resolves(name string) bool {
	left, right, dotted := strings.Cut(name, ".")
	if !dotted {
		return idx.pkgs["runner"].names[name]
	}
	if p := idx.pkgs[left]; p != nil && p.names[right] {
		return true
	}
	for _, p := range idx.pkgs {
		if p.hasMember(left, right, 0) {
			return true
		}
	}
	return false
}

func (p *pkgDecls) hasMember(typ, member string, depth int) bool {
	if p.members[typ+"."+member] {
		return true
	}
	for _, e := range p.embeds[typ] {
		if depth < 4 && p.hasMember(e, member, depth+1) {
			return true
		}
	}
	return false
}

// callees are the runner functions and methods fn calls (in closures too), as the section
// names them: "name" or "Type.method". Without go/types (the runner links cgo) receivers are
// typed syntactically: fn's receiver and parameters, `:=` from a runner function's results or a
// composite literal, `var` with a type, and fields of runner structs. A receiver none of these
// types (a range variable, another package's value) is taken as not the runner's, and a runner
// method called on an expression of another shape fails the test.
func (p *pkgDecls) callees(t *testing.T, fn *ast.FuncDecl) map[string]bool {
	t.Helper()
	locals := map[string]string{}
	for k, v := range p.params[fn] {
		locals[k] = v
	}
	out := map[string]bool{}
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			p.noteLocals(locals, n)
		case *ast.ValueSpec:
			for _, id := range n.Names {
				locals[id.Name] = typeName(n.Type)
			}
		case *ast.CallExpr:
			switch f := n.Fun.(type) {
			case *ast.Ident:
				if p.funcs[f.Name] != nil {
					out[f.Name] = true
				}
			case *ast.SelectorExpr:
				typ := p.typeOf(locals, f.X)
				if typ != "" && p.funcs[typ+"."+f.Sel.Name] != nil {
					out[typ+"."+f.Sel.Name] = true
				} else if typ == "" && p.isMethodName(f.Sel.Name) && !p.foreign(locals, f.X) {
					t.Errorf("%s: cannot tell the type of the receiver of .%s(); name its type in the test's rules", fn.Name.Name, f.Sel.Name)
				}
			}
		}
		return true
	})
	return out
}

// noteLocals records the runner type of variables an assignment declares: from a runner
// function's results, or a composite literal of a runner type.
func (p *pkgDecls) noteLocals(locals map[string]string, a *ast.AssignStmt) {
	if len(a.Rhs) != 1 {
		for i, r := range a.Rhs {
			if id, ok := a.Lhs[i].(*ast.Ident); ok && i < len(a.Lhs) {
				locals[id.Name] = p.exprType(locals, r)
			}
		}
		return
	}
	var types []string
	switch r := a.Rhs[0].(type) {
	case *ast.CallExpr:
		key := ""
		switch f := r.Fun.(type) {
		case *ast.Ident:
			key = f.Name
		case *ast.SelectorExpr:
			if typ := p.typeOf(locals, f.X); typ != "" {
				key = typ + "." + f.Sel.Name
			}
		}
		types = p.results[key]
	default:
		types = []string{p.exprType(locals, r)}
	}
	for i, l := range a.Lhs {
		if id, ok := l.(*ast.Ident); ok && i < len(types) && id.Name != "_" {
			locals[id.Name] = types[i]
		}
	}
}

func (p *pkgDecls) exprType(locals map[string]string, e ast.Expr) string {
	switch e := e.(type) {
	case *ast.UnaryExpr:
		return p.exprType(locals, e.X)
	case *ast.CompositeLit:
		return typeName(e.Type)
	}
	return p.typeOf(locals, e)
}

// typeOf is the runner type of x, or "" when it is not one the index knows.
func (p *pkgDecls) typeOf(locals map[string]string, x ast.Expr) string {
	switch x := x.(type) {
	case *ast.Ident:
		return locals[x.Name]
	case *ast.SelectorExpr:
		if base := p.typeOf(locals, x.X); base != "" {
			return p.fields[base+"."+x.Sel.Name]
		}
	case *ast.ParenExpr:
		return p.typeOf(locals, x.X)
	}
	return ""
}

func (p *pkgDecls) isMethodName(name string) bool {
	for key := range p.funcs {
		if strings.HasSuffix(key, "."+name) {
			return true
		}
	}
	return false
}

// foreign says x is plainly not a runner value: an imported package, a field chain that
// leaves the runner's types, or a value whose type the index holds as another package's.
func (p *pkgDecls) foreign(locals map[string]string, x ast.Expr) bool {
	switch x := x.(type) {
	case *ast.Ident:
		typ, known := locals[x.Name]
		if !known {
			return true // not a parameter or local of the function: a package name
		}
		return !p.names[typ]
	case *ast.SelectorExpr:
		base := p.typeOf(locals, x.X)
		if base == "" {
			return p.foreign(locals, x.X)
		}
		typ, isField := p.fields[base+"."+x.Sel.Name]
		return !isField || !p.names[typ]
	case *ast.CallExpr, *ast.IndexExpr:
		return true
	}
	return false
}
