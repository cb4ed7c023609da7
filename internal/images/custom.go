package images

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/protobench/protobench/internal/compose"
)

// Custom makes the image of a scenario's own target available: ref when the user names an image
// they have (it must be present: protobench never pulls a user's image behind their back), or a
// build of dockerfile with its folder as the context, tagged protobench/custom-<name>:<hash> so
// a second run builds nothing. It prints one line like Ensure does.
func Custom(ctx context.Context, opts Options, name, ref, dockerfile string) (Image, error) {
	e, err := newEnsurer(opts)
	if err != nil {
		return Image{}, err
	}
	if _, err := compose.CheckDocker(ctx, e.r.docker); err != nil {
		return Image{}, err
	}
	img := Image{Name: "custom-" + name}
	if ref != "" {
		id, err := e.r.imageID(ctx, ref)
		if err != nil {
			return Image{}, err
		}
		if id == "" {
			return Image{}, fmt.Errorf("image %s of custom target %s is not present: build or pull it first (docker image inspect %s finds nothing)", ref, name, ref)
		}
		img.Ref, img.ID, img.Source, img.Note = ref, id, Cached, "the scenario's own image"
		e.report(img, 0)
		return img, nil
	}
	dir := filepath.Dir(dockerfile)
	bc := newBuildContext(filepath.Base(dockerfile))
	// .git and the like are never build inputs, and would make the hash change on every commit.
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		return bc.addHostFile(filepath.ToSlash(rel), p, false)
	})
	if err != nil {
		return Image{}, fmt.Errorf("custom target %s: read the build context %s: %w", name, dir, err)
	}
	text, err := os.ReadFile(dockerfile)
	if err != nil {
		return Image{}, err
	}
	info, err := parseDockerfile(string(text))
	if err != nil {
		return Image{}, fmt.Errorf("%s: %w", dockerfile, err)
	}
	args, hashArgs, err := e.imageArgs(ctx, info.Args, nil)
	if err != nil {
		return Image{}, err
	}
	built, err := e.buildContextImage(ctx, img.Name, bc, args, hashArgs)
	if err != nil {
		return Image{}, fmt.Errorf("custom target %s: build %s: %w", name, dockerfile, err)
	}
	built.Name, built.Note = img.Name, "built from "+strings.TrimPrefix(dockerfile, opts.RepoRoot+"/")
	e.report(built, 0)
	return built, nil
}
