package promconfig

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// promtool is Debian's (the prometheus package, which ./run.sh test installs); PROMTOOL overrides it.
func promtool(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("PROMTOOL")
	if bin == "" {
		bin = "/usr/bin/promtool"
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("%s not installed (apt-get install -y prometheus): %v", bin, err)
	}
	return bin
}

// TestRenderedConfigIsValid renders the checkout's template and has promtool check it, for a plain
// project and for names with the characters that need care (a dot in a regex).
func TestRenderedConfigIsValid(t *testing.T) {
	bin := promtool(t)
	for _, c := range [][2]string{{"protobench", "protobench-net"}, {"pb.test_1", "pb.test_1-net"}} {
		out, err := Render(c[0], c[1])
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(out, []byte("${")) {
			t.Errorf("placeholder left in:\n%s", out)
		}
		if !bytes.Contains(out, []byte(`"protobench.project=`+c[0]+`"`)) {
			t.Errorf("%s: no filter on the project's label", c[0])
		}
		path := filepath.Join(t.TempDir(), "prometheus.yml")
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		if msg, err := exec.Command(bin, "check", "config", path).CombinedOutput(); err != nil {
			t.Errorf("promtool check config (%s, %s): %v\n%s", c[0], c[1], err, msg)
		}
	}
}

func TestRenderTemplate(t *testing.T) {
	tmpl := []byte("a: \"x=" + ProjectPlaceholder + "\"\nb: " + NetworkPlaceholder + "\nc: " + NetworkPlaceholder + "\n")
	out, err := RenderTemplate(tmpl, "pb", "pb.net")
	if err != nil {
		t.Fatal(err)
	}
	if want := "a: \"x=pb\"\nb: pb\\.net\nc: pb\\.net\n"; string(out) != want {
		t.Errorf("got %q, want %q", out, want)
	}
}

func TestRenderTemplateRefuses(t *testing.T) {
	ok := []byte(ProjectPlaceholder + NetworkPlaceholder)
	cases := []struct {
		name, project, network string
		tmpl                   []byte
		want                   string
	}{
		{"quote in project", `pb"x`, "net", ok, "project name"},
		{"space in network", "pb", "my net", ok, "network name"},
		{"empty project", "", "net", ok, "project name"},
		{"regex in network", "pb", "net|.*", ok, "network name"},
		{"no network placeholder", "pb", "net", []byte(ProjectPlaceholder), "no " + NetworkPlaceholder},
		{"unknown placeholder", "pb", "net", append(append([]byte{}, ok...), "${PROTOBENCH_OTHER}"...), "${PROTOBENCH_OTHER}"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := RenderTemplate(c.tmpl, c.project, c.network)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want one mentioning %q", err, c.want)
			}
		})
	}
}
