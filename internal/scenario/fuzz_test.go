package scenario

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// errLine is the shape every parse error must have: file:line: field: message.
var errLine = regexp.MustCompile(`^f\.yaml:[1-9][0-9]*: ([^ "]+|[^ "]*"(\\.|[^"\\])*"[^ ]*): [^\n]+$`)

// FuzzParse feeds arbitrary bytes to the parser and, when they parse, to the planner and the
// dry-run printer. None may panic, and every error must keep the file:line: field: form.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(shippedDir, "*.yaml"))
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(planSrc))
	f.Add([]byte(withStep("    matrix:", "      concurrency: []")))
	f.Add([]byte("a: &x [*x]\nname: *x\n"))
	f.Add([]byte("name: c\ndescription: d\ncustom_targets:\n  mine:\n    image: a\n    protocol: http\n    port: 80\n    http: {method: POST, path: /x, headers: ['A: b'], body: '{}'}\nsteps:\n  - {name: s, targets: [mine], method: POST_x}\n"))
	f.Add([]byte("steps: &s\n  - name: *s\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := Parse("f.yaml", data)
		if err != nil {
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("error is %T: %v", err, err)
			}
			for _, e := range es {
				if !errLine.MatchString(e.Error()) {
					t.Fatalf("malformed error %q", e.Error())
				}
			}
			return
		}
		for _, quick := range []bool{false, true} {
			p, err := sc.Plan(PlanOptions{Cores: 2, Quick: quick})
			if err != nil {
				continue
			}
			if err := p.Print(io.Discard); err != nil {
				t.Fatal(err)
			}
		}
	})
}
