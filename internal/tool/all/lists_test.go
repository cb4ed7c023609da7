package all

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/repo"
	"github.com/protobench/protobench/internal/tool"
)

// TestHandWrittenToolListsMatchRegistry guards the places outside Go that name the tools: each
// lists the compose services of the registered adapters, no more and no fewer. They had drifted
// before (h2load was missing from compose/README.md's table); `protobench generate` now writes
// them from the adapters, and this test catches a file edited by hand or not regenerated.
func TestHandWrittenToolListsMatchRegistry(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, name := range tool.Names() {
		a, _ := tool.Lookup(name)
		want[a.Service()] = true
	}
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	check := func(where string, got []string) {
		t.Helper()
		seen := map[string]bool{}
		for _, s := range got {
			seen[s] = true
			if !want[s] {
				t.Errorf("%s names %q, which is no registered tool's service (want %v)", where, s, keys(want))
			}
		}
		for s := range want {
			if !seen[s] {
				t.Errorf("%s omits %q, a registered tool's service: add it there", where, s)
			}
		}
	}

	// compose/README.md: the table row of the tools profile, "| loadgen, ghz, ... | tools |".
	row := regexp.MustCompile(`(?m)^\| ([a-z0-9, ]+?) (?:\([^|]*\) )?\| tools \|`).FindStringSubmatch(read("compose/README.md"))
	if row == nil {
		t.Fatal("compose/README.md: no table row with the profile tools")
	}
	check("compose/README.md's tools row", strings.Split(strings.ReplaceAll(row[1], " ", ""), ","))

	// compose/docker-compose.yml: the header's list and the services on the tool anchor.
	compose := read("compose/docker-compose.yml")
	header := regexp.MustCompile(`(?m)^#\s+tools\s+([a-z0-9, ]+?) \(`).FindStringSubmatch(compose)
	if header == nil {
		t.Fatal("compose/docker-compose.yml: no header line '#   tools ...'")
	}
	check("compose/docker-compose.yml's header", strings.Split(strings.ReplaceAll(header[1], " ", ""), ","))
	var services []string
	for _, m := range regexp.MustCompile(`(?m)^  ([a-z0-9-]+):\n    <<: \*tool$`).FindAllStringSubmatch(compose, -1) {
		services = append(services, m[1])
	}
	check("compose/docker-compose.yml's services on *tool", services)
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
