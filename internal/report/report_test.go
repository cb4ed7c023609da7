package report

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/report/browsertest"
	"github.com/protobench/protobench/internal/report/reporttest"
)

func TestWriteInBrowser(t *testing.T) {
	cases := []struct {
		name string
		opts reporttest.Options
	}{
		{"complete", reporttest.Options{Jitter: 0.03}},
		{"interrupted", reporttest.Options{Jitter: 0.03, Interrupted: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := reporttest.Folder(t, c.opts)
			if err := Write(dir); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, File)
			checkSelfContained(t, path)
			res := browsertest.Check(t, path, "report-"+c.name)
			for _, b := range res.SVGs {
				t.Logf("%5.1f %% ink, %4.1f %% colour  %s", 100*b.Ink, 100*b.Colour, b.Label)
			}
		})
	}
}

// checkSelfContained fails on anything that would need a script or the network.
func checkSelfContained(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	if strings.Contains(strings.ToLower(page), "<script") {
		t.Errorf("%s holds a <script>; the report must need no JavaScript", path)
	}
	for _, m := range regexp.MustCompile(`(?:href|src)="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		if strings.Contains(m[1], "://") || strings.HasPrefix(m[1], "//") {
			t.Errorf("%s links outside the results folder: %s", path, m[1])
		}
	}
}
