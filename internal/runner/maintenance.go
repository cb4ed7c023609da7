package runner

import (
	"context"
	"flag"
	"fmt"
	"github.com/protobench/protobench/internal/repo"
	"io"
	"path/filepath"

	"github.com/protobench/protobench/internal/compose"
)

// DownCommand is `protobench down`: it stops whatever a --keep-up run left running.
func DownCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("down", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var project, docker string
	addStackFlags(fs, &project, &docker)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := checkProjectName(project); err != nil {
		fmt.Fprintln(stderr, "protobench down:", err)
		return 2
	}
	root, err := repo.Root()
	if err != nil {
		fmt.Fprintln(stderr, "protobench:", err)
		return 2
	}
	cc, err := compose.New(ctx, compose.Options{Dir: filepath.Join(root, "compose"), Log: stderr, ProjectName: project, Docker: docker})
	if err != nil {
		fmt.Fprintln(stderr, "protobench:", err)
		return 2
	}
	if err := cc.Down(ctx); err != nil {
		fmt.Fprintln(stderr, "protobench down:", err)
		return 1
	}
	fmt.Fprintf(stdout, "protobench: stack %s stopped\n", project)
	return 0
}
