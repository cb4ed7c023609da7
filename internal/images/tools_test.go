package images

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/protobench/protobench/internal/repo"
)

// TestToolImagesHaveDockerfiles: every tool image the adapters declare (toolImageNames,
// generated) is in the catalog and builds from a Dockerfile in the checkout, unless it is another
// image's alias.
func TestToolImagesHaveDockerfiles(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	if len(toolImageNames) == 0 {
		t.Fatal("no tool images: run 'go run ./cmd/protobench generate'")
	}
	for _, name := range toolImageNames {
		sp, ok := specByName(name)
		if !ok {
			t.Errorf("tool image %q is not in the catalog", name)
			continue
		}
		if sp.alias != "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, sp.dockerfile)); err != nil {
			t.Errorf("tool image %q: %v", name, err)
		}
	}
}
