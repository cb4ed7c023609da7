package hostinfo

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestParsers(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cpu := write("cpuinfo", "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\n")
	mem := write("meminfo", "MemTotal:       24576000 kB\nMemFree: 1 kB\n")
	osr := write("os-release", "NAME=\"Debian\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n")
	if got := cpuModel(cpu); got != "AMD EPYC 7B13" {
		t.Errorf("cpuModel = %q", got)
	}
	if got := memTotal(mem); got != 24576000*1024 {
		t.Errorf("memTotal = %d", got)
	}
	if got := osPrettyName(osr); got != "Debian GNU/Linux 12 (bookworm)" {
		t.Errorf("osPrettyName = %q", got)
	}
	if got := cpuModel(filepath.Join(dir, "missing")); got != "" {
		t.Errorf("cpuModel(missing) = %q, want empty", got)
	}
}

func TestCollectOnThisMachine(t *testing.T) {
	h := Collect(context.Background(), ".")
	if h.Cores < 1 || h.Kernel == "" || h.GoVersion == "" {
		t.Fatalf("Collect gave an incomplete host: %+v", h)
	}
}
