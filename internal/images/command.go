package images

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/protobench/protobench/internal/compose"
)

// Command runs `protobench images <build|list|env> [flags] [names...]` and returns the exit
// status: 0 on success, 1 when an image failed, 2 for usage errors and an unreachable Docker.
//
//	build  make the images available (pull or build), one line per image
//	list   the same resolution without building: what a run would use and whether it is there
//	env    the compose variables selecting the images, as KEY=VALUE lines
//	prune  remove local protobench/* tags that the current sources no longer produce
func Command(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		commandUsage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	sub := args[0]
	opts, code, ok := commandFlags(sub, args[1:], stderr)
	if !ok {
		return code
	}
	dryRun := opts.DryRun // the user's: prune honours it; resolution below is always dry
	switch sub {
	case "build":
	case "list", "env", "prune":
		// Resolution without side effects: a dry run prints nothing for cached images.
		opts.DryRun = true
		opts.Log = io.Discard
		if sub == "prune" {
			opts.Only = nil // what is current is decided over every image
		}
	default:
		fmt.Fprintf(stderr, "protobench images: unknown subcommand %q\n", sub)
		commandUsage(stderr)
		return 2
	}
	set, err := Ensure(ctx, opts)
	if errors.Is(err, compose.ErrDockerUnreachable) || (set == nil && err != nil) {
		fmt.Fprintf(stderr, "protobench images: %v\n", err)
		return 2
	}
	switch sub {
	case "build":
		if err != nil {
			fmt.Fprintf(stderr, "protobench images: %v\n", err)
			return 1
		}
	case "list":
		printList(stdout, set)
	case "env":
		printEnv(stdout, stderr, set)
	case "prune":
		return pruneCommand(ctx, opts.Docker, set, err, dryRun, stdout, stderr)
	}
	return 0
}

func commandUsage(w io.Writer) {
	fmt.Fprintf(w, "usage: protobench images build|list|env|prune [flags] [image...]\nimages: %s\n", strings.Join(Names(), ", "))
}

// commandFlags parses a subcommand's flags and names into Options. When parsing ends the command
// (-h, or a bad flag) ok is false and code is the exit status.
func commandFlags(sub string, args []string, stderr io.Writer) (opts Options, code int, ok bool) {
	fs := flag.NewFlagSet("protobench images "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	repo := fs.String("repo", ".", "repository root (build contexts and Dockerfiles)")
	extraCA := fs.String("extra-ca-dir", "", `directory of extra CA certificates (*.crt) for the Go builder; "none" for none (default `+DefaultExtraCADir+`)`)
	offline := fs.Bool("offline", false, "never pull, even where a registry answers: use upstream images already present, build the rest")
	dryRun := fs.Bool("dry-run", false, "print the pull and build commands instead of running them")
	verbose := fs.Bool("v", false, "stream build output to stderr")
	goroot := fs.String("goroot", "", "Go toolchain to copy into the Go builder when no golang image can be had (default: go env GOROOT)")
	docker := fs.String("docker", "docker", "docker CLI to use")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return Options{}, 0, false
		}
		return Options{}, 2, false
	}
	opts = Options{
		RepoRoot:   *repo,
		ExtraCADir: *extraCA,
		Offline:    *offline,
		DryRun:     *dryRun,
		Only:       fs.Args(),
		GoRoot:     *goroot,
		Docker:     *docker,
		Log:        stderr,
	}
	if *verbose {
		opts.BuildLog = stderr
	}
	return opts, 0, true
}

// printEnv writes the compose variables selecting the images, warning on stderr about images
// that a build would still have to make.
func printEnv(stdout, stderr io.Writer, set Set) {
	for _, img := range set.Sorted() {
		if img.Source == Built || img.Source == Pulled { // a dry run: not there yet
			fmt.Fprintf(stderr, "protobench images: %s is not present yet (run `protobench images build %s`)\n", img.Ref, img.Name)
		}
	}
	env := EnvVars(set)
	for _, k := range sortedKeys(env) {
		fmt.Fprintf(stdout, "%s=%s\n", k, env[k])
	}
}

// pruneCommand removes stale tags once resolution (err) has decided, over every image, what is
// current.
func pruneCommand(ctx context.Context, docker string, set Set, err error, dryRun bool, stdout, stderr io.Writer) int {
	if err != nil {
		// Without a complete picture of what is current, removing anything is a guess.
		fmt.Fprintf(stderr, "protobench images prune: cannot tell which images are current: %v\n", err)
		return 1
	}
	if perr := prune(ctx, docker, set, dryRun, stdout); perr != nil {
		fmt.Fprintf(stderr, "protobench images prune: %v\n", perr)
		return 1
	}
	return 0
}

// printList writes one row per image: name, state, reference, what it is.
func printList(w io.Writer, set Set) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "IMAGE\tSTATE\tREFERENCE\tNOTE")
	for _, img := range set.Sorted() {
		state := string(img.Source)
		switch {
		case img.Source == Built: // only reached in a dry run: not there yet
			state = "to build"
		case img.Source == Pulled:
			state = "to pull"
		}
		ref := img.Ref
		if ref == "" {
			ref = "-"
		}
		note := img.Note
		if img.Variant != "" && !strings.Contains(note, img.Variant) {
			note = strings.TrimSpace(img.Variant + " " + note)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", img.Name, state, ref, note)
	}
	tw.Flush()
}

// prune removes protobench/<name>:<hash> tags that are neither current in set nor :latest. The
// image data goes once no tag refers to it; layers shared with current images stay.
func prune(ctx context.Context, docker string, set Set, dryRun bool, out io.Writer) error {
	r := &runner{docker: docker, buildLog: io.Discard, log: out, dryRun: dryRun}
	list, err := r.query(ctx, docker, "image", "ls", "--format", "{{.Repository}}:{{.Tag}}", LocalRepository+"*")
	if err != nil {
		return err
	}
	current := map[string]bool{}
	for _, img := range set {
		current[img.Ref] = true
	}
	var stale []string
	for _, ref := range strings.Fields(list) {
		if current[ref] || strings.HasSuffix(ref, ":latest") || strings.HasSuffix(ref, ":<none>") {
			continue
		}
		stale = append(stale, ref)
	}
	if len(stale) == 0 {
		fmt.Fprintln(out, "no stale tags")
	} else {
		sort.Strings(stale)
		for _, ref := range stale {
			fmt.Fprintf(out, "removing %s\n", ref)
		}
		if err := r.exec(ctx, nil, nil, docker, append([]string{"image", "rm"}, stale...)...); err != nil {
			return err
		}
	}
	return pruneLeftovers(ctx, r, docker, out)
}

// pruneLeftovers removes what builds and runs leave besides tags: dangling images of our builds
// (rebuilt tags leave their old layers untagged; every build labels its image
// io.protobench.image) and the unused Prometheus volumes of our compose projects. Other images
// and volumes are never touched: both are selected by our labels.
func pruneLeftovers(ctx context.Context, r *runner, docker string, out io.Writer) error {
	fmt.Fprintln(out, "removing dangling images of protobench builds")
	if err := r.exec(ctx, nil, nil, docker, "image", "prune", "--force", "--filter", "label=io.protobench.image"); err != nil {
		return err
	}
	vols, err := r.query(ctx, docker, "volume", "ls", "--quiet", "--filter", "dangling=true",
		"--filter", "label=com.docker.compose.volume=prometheus-data")
	if err != nil {
		return err
	}
	if len(strings.Fields(vols)) == 0 {
		return nil
	}
	fmt.Fprintf(out, "removing unused Prometheus volumes of protobench stacks: %s\n", strings.Join(strings.Fields(vols), ", "))
	return r.exec(ctx, nil, nil, docker, append([]string{"volume", "rm"}, strings.Fields(vols)...)...)
}
