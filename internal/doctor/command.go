package doctor

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/protobench/protobench/internal/cputopo"
	"github.com/protobench/protobench/internal/repo"
	"github.com/protobench/protobench/internal/scenario"
)

// Command is `protobench doctor`: the pre-flight check on its own. It exits 0 whatever it
// finds (it warns, never refuses), 2 for bad flags.
func Command(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	load := fs.Duration("load", 2*time.Second, "how long to sample the other load on the server's and client's CPUs (0 skips it)")
	registry := fs.Bool("registry", true, "check whether a registry answers (one pull of the base image)")
	defDocker := os.Getenv("PROTOBENCH_DOCKER")
	if defDocker == "" {
		defDocker = "docker"
	}
	docker := fs.String("docker", defDocker, "the docker CLI to use (env PROTOBENCH_DOCKER)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "protobench doctor: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *load < 0 {
		fmt.Fprintf(stderr, "protobench doctor: --load %s: expected a duration of 0 or more\n", *load)
		return 2
	}
	root, _ := repo.Root()
	if root == "" {
		root, _ = os.Getwd()
	}
	fmt.Fprintln(stdout, "protobench doctor: what this machine gives a run")
	Print(stdout, Check(ctx, Options{
		Layout: scenario.AutoLayout(cputopo.Host()), Docker: *docker, RepoRoot: root,
		LoadSample: *load, Registry: *registry,
	}))
	return 0
}
