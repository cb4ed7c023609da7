package repo

import (
	"path/filepath"
	"testing"
)

func TestRootFromNestedFolders(t *testing.T) {
	t.Setenv("PROTOBENCH_ROOT", "")
	want, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{".", "../../images/cadvisor", "../../scenarios"} {
		t.Run(dir, func(t *testing.T) {
			t.Chdir(dir)
			got, err := Root()
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("Root() from %s = %s, want %s", dir, got, want)
			}
		})
	}
}

func TestRootOutsideACheckout(t *testing.T) {
	t.Setenv("PROTOBENCH_ROOT", "")
	t.Chdir(t.TempDir())
	if got, err := Root(); err == nil {
		t.Fatalf("Root() outside a checkout = %s, want an error", got)
	}
}

func TestRootFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PROTOBENCH_ROOT", dir)
	got, err := Root()
	if err != nil || got != dir {
		t.Fatalf("Root() = %q, %v; want %q", got, err, dir)
	}
}
