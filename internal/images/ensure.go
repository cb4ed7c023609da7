package images

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/protobench/protobench/internal/compose"
	"github.com/protobench/protobench/internal/tool"
)

// Ensure makes every wanted image available and returns how each was obtained. It prints one
// line per image to Options.Log. A failed build does not stop the others: the image is marked
// Unavailable and the returned error joins every failure. An unreachable Docker daemon is
// returned at once, wrapping compose.ErrDockerUnreachable.
func Ensure(ctx context.Context, opts Options) (Set, error) {
	e, err := newEnsurer(opts)
	if err != nil {
		return nil, err
	}
	if _, err := compose.CheckDocker(ctx, e.r.docker); err != nil {
		return nil, err
	}
	wanted := opts.Only
	if len(wanted) == 0 {
		wanted = Names()
	}
	for _, name := range wanted {
		if _, ok := specByName(name); !ok {
			return nil, fmt.Errorf("unknown image %q (known: %s)", name, strings.Join(Names(), ", "))
		}
	}
	e.probeRegistry(ctx)
	for _, name := range wanted {
		if ctx.Err() != nil {
			return e.set, ctx.Err()
		}
		e.require(ctx, name)
	}
	return e.set, errors.Join(e.errs...)
}

// ensurer carries the state of one Ensure call.
type ensurer struct {
	opts     Options
	r        *runner
	log      io.Writer
	registry bool // a registry answers; pulls are worth trying
	set      Set
	busy     map[string]bool
	errs     []error
	files    []string // repository files, listed once
}

func newEnsurer(opts Options) (*ensurer, error) {
	if opts.RepoRoot == "" {
		return nil, errors.New("images: RepoRoot is required")
	}
	root, err := filepath.Abs(opts.RepoRoot)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return nil, fmt.Errorf("images: %s is not the protobench repository (no go.mod)", root)
	}
	opts.RepoRoot = root
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.BuildLog == nil {
		opts.BuildLog = io.Discard
	}
	if opts.Docker == "" {
		opts.Docker = "docker"
	}
	if opts.DebianMirror == "" {
		opts.DebianMirror = DefaultDebianMirror
	}
	return &ensurer{
		opts: opts,
		r:    &runner{docker: opts.Docker, buildLog: opts.BuildLog, log: opts.Log, dryRun: opts.DryRun},
		log:  opts.Log,
		set:  Set{},
		busy: map[string]bool{},
	}, nil
}

// probeRegistry decides once whether pulls are worth trying: one pull of the base image. A
// failure that means "no registry at all" (DNS, no route, timeout) turns every later pull off.
func (e *ensurer) probeRegistry(ctx context.Context) {
	if e.opts.Offline {
		fmt.Fprintln(e.log, "registry: not used (offline); building local images")
		return
	}
	if e.opts.DryRun {
		// A dry run must not pull; a DNS lookup of Docker Hub is the read-only stand-in.
		lookupCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if _, err := net.DefaultResolver.LookupHost(lookupCtx, "registry-1.docker.io"); err != nil {
			fmt.Fprintf(e.log, "registry: unreachable (%v); would build local images\n", err)
			return
		}
		e.registry = true
		fmt.Fprintln(e.log, "registry: resolvable; would pull pinned upstream images")
		return
	}
	answers, detail := probe(ctx, e.r, 2*time.Minute)
	switch {
	case !answers:
		fmt.Fprintf(e.log, "registry: unreachable (%s); building local images\n", detail)
	case detail == "":
		e.registry = true
		fmt.Fprintln(e.log, "registry: answers; pulling pinned upstream images")
	default:
		// It answered, but said no (rate limit, auth): other pulls may still work.
		e.registry = true
		fmt.Fprintf(e.log, "registry: answers but refused %s (%s); pulling what it serves\n", UpstreamBase, detail)
	}
}

// ProbeRegistry is the registry check of Ensure, on its own, for the pre-flight check: one pull
// of the base image within timeout. answers is false when no registry answers at all (DNS, no
// route, timeout); detail is empty when the pull worked, else what the registry or the network
// said.
func ProbeRegistry(ctx context.Context, docker string, timeout time.Duration) (answers bool, detail string) {
	if docker == "" {
		docker = "docker"
	}
	return probe(ctx, &runner{docker: docker, buildLog: io.Discard, log: io.Discard}, timeout)
}

func probe(ctx context.Context, r *runner, timeout time.Duration) (bool, string) {
	probeCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := r.exec(probeCtx, nil, nil, r.docker, "pull", "--quiet", UpstreamBase)
	if err == nil {
		return true, ""
	}
	var ce *commandError
	detail := err.Error()
	if errors.As(err, &ce) {
		detail = strings.TrimSpace(tool.LastLine([]byte(ce.tail)))
	}
	if probeCtx.Err() != nil || registryUnreachable(err.Error()) {
		return false, detail
	}
	return true, detail
}

// require resolves one logical image (and, through build args, what it is built from), once.
func (e *ensurer) require(ctx context.Context, name string) Image {
	if img, ok := e.set[name]; ok {
		return img
	}
	sp, ok := specByName(name)
	if !ok {
		return Image{Name: name, Source: Unavailable, Note: "unknown image"}
	}
	if e.busy[name] {
		return Image{Name: name, Source: Unavailable, Note: "build dependency cycle"}
	}
	e.busy[name] = true
	defer delete(e.busy, name)

	start := time.Now()
	var img Image
	var err error
	switch {
	case sp.alias != "":
		img = e.require(ctx, sp.alias)
		img.Name = name
		if img.Source != Unavailable {
			img.Note = "same image as " + sp.alias
		}
	case sp.custom != nil:
		img, err = sp.custom(e, ctx, sp)
	default:
		img, err = e.generic(ctx, sp)
	}
	img.Name = name
	if img.Upstream == "" {
		img.Upstream = sp.upstream
	}
	if err != nil {
		img.Source, img.Ref, img.ID = Unavailable, "", ""
		if img.Note == "" {
			img.Note = firstErrLine(err)
		}
		e.errs = append(e.errs, fmt.Errorf("image %s: %w", name, err))
	}
	e.set[name] = img
	e.report(img, time.Since(start))
	return img
}

// report prints the one line per image.
func (e *ensurer) report(img Image, took time.Duration) {
	var b strings.Builder
	source := string(img.Source)
	if e.opts.DryRun && (img.Source == Built || img.Source == Pulled) {
		source = "would be " + source
	}
	fmt.Fprintf(&b, "%s: %s", img.Name, source)
	if img.Ref != "" {
		fmt.Fprintf(&b, " %s", img.Ref)
	}
	if img.Source == Built && !e.opts.DryRun && !strings.HasPrefix(img.Note, "same image as") {
		fmt.Fprintf(&b, " in %s", took.Round(time.Second))
	}
	if img.Note != "" {
		fmt.Fprintf(&b, " (%s)", img.Note)
	}
	fmt.Fprintln(e.log, b.String())
}

// generic is the usual path: the pinned upstream image if it can be had, else the Dockerfile.
func (e *ensurer) generic(ctx context.Context, sp spec) (Image, error) {
	img, note, ok := e.upstream(ctx, sp.upstream)
	if ok {
		return img, nil
	}
	if sp.notBuildable != "" {
		reason := sp.notBuildable
		if note != "" {
			reason = note + "; " + reason
		}
		return Image{Source: Unavailable, Note: reason}, nil
	}
	if _, err := os.Stat(filepath.Join(e.opts.RepoRoot, filepath.FromSlash(sp.dockerfile))); err != nil {
		return Image{Source: Unavailable, Note: sp.dockerfile + " does not exist"}, nil
	}
	img, err := e.buildDockerfile(ctx, sp.name, sp.dockerfile, nil, sp.prepare)
	if err == nil && sp.upstream != "" && img.Note == "" {
		img.Note = "local stand-in for " + sp.upstream + " (" + note + ")"
	}
	return img, err
}

// upstream tries to have ref without building: pull it where a registry answers, or find it
// already present where none does. note says why it could not be had ("" if there was no ref).
func (e *ensurer) upstream(ctx context.Context, ref string) (img Image, note string, ok bool) {
	if ref == "" {
		return Image{}, "", false
	}
	if e.registry {
		if err := e.r.exec(ctx, nil, nil, e.r.docker, "pull", "--quiet", ref); err != nil {
			if registryUnreachable(err.Error()) {
				e.registry = false // it went away: stop trying
			}
			return Image{}, "pull of " + ref + " failed", false
		}
		id, _ := e.r.imageID(ctx, ref)
		return Image{Ref: ref, ID: id, Source: Pulled, Upstream: ref}, "", true
	}
	id, err := e.r.imageID(ctx, ref)
	if err == nil && id != "" {
		return Image{Ref: ref, ID: id, Source: Cached, Upstream: ref, Note: "upstream image present locally"}, "", true
	}
	return Image{}, "no registry", false
}

// buildDockerfile builds a repository Dockerfile (context: the repository root, restricted to
// what its COPY/ADD instructions read) under a content-hash tag, unless that tag exists.
// BASE_IMAGE and GO_BUILDER_IMAGE are filled from the base and go-builder images when declared;
// extraArgs adds others.
func (e *ensurer) buildDockerfile(ctx context.Context, name, dockerfile string, extraArgs map[string]string, prepare func(*ensurer, *buildContext) error) (Image, error) {
	text, err := os.ReadFile(filepath.Join(e.opts.RepoRoot, filepath.FromSlash(dockerfile)))
	if err != nil {
		return Image{}, err
	}
	info, err := parseDockerfile(string(text))
	if err != nil {
		return Image{}, fmt.Errorf("%s: %w", dockerfile, err)
	}
	args, hashArgs, err := e.imageArgs(ctx, info.Args, extraArgs)
	if err != nil {
		return Image{}, err
	}
	if e.files == nil {
		if e.files, err = repoFiles(e.opts.RepoRoot); err != nil {
			return Image{}, fmt.Errorf("list repository files: %w", err)
		}
	}
	selected, err := selectSources(e.files, info.Sources)
	if err != nil {
		return Image{}, fmt.Errorf("%s: %w", dockerfile, err)
	}
	bc := newBuildContext(dockerfile)
	for _, f := range selected {
		if err := bc.addHostFile(f, filepath.Join(e.opts.RepoRoot, filepath.FromSlash(f)), false); err != nil {
			return Image{}, err
		}
	}
	bc.addData(dockerfile, text)
	if prepare != nil {
		if err := prepare(e, bc); err != nil {
			return Image{}, err
		}
	}
	return e.buildContextImage(ctx, name, bc, args, hashArgs)
}

// imageArgs fills the declared image-valued build args from the images they name, and returns
// the args to pass plus the args to hash (image IDs instead of tags, so that a rebuilt base
// changes the hash even when its tag would not).
func (e *ensurer) imageArgs(ctx context.Context, declared []string, extra map[string]string) (args, hashArgs map[string]string, err error) {
	args, hashArgs = map[string]string{}, map[string]string{}
	for _, a := range declared {
		var dep string
		switch a {
		case "BASE_IMAGE":
			dep = Base
		case "GO_BUILDER_IMAGE":
			dep = GoBuilder
		default:
			if v, ok := extra[a]; ok {
				args[a], hashArgs[a] = v, v
			}
			continue
		}
		img := e.require(ctx, dep)
		if img.Source == Unavailable {
			return nil, nil, fmt.Errorf("needs the %s image, which is unavailable", dep)
		}
		args[a] = img.Ref
		hashArgs[a] = img.Ref + "@" + imageIDOrRef(img)
	}
	return args, hashArgs, nil
}

func imageIDOrRef(img Image) string {
	if img.ID != "" {
		return img.ID
	}
	return "dry-run:" + img.Ref
}

// buildContextImage tags the context's content hash and builds it unless that tag exists.
func (e *ensurer) buildContextImage(ctx context.Context, name string, bc *buildContext, args, hashArgs map[string]string) (Image, error) {
	sum, err := bc.contentHash(name, hashArgs)
	if err != nil {
		return Image{}, err
	}
	ref := LocalRepository + name + ":" + sum[:12]
	if id, err := e.r.imageID(ctx, ref); err != nil {
		return Image{}, err
	} else if id != "" {
		e.tagLatest(ctx, ref, name)
		return Image{Ref: ref, ID: id, Source: Cached}, nil
	}
	for _, add := range bc.deferred {
		if err := add(); err != nil {
			return Image{}, err
		}
	}
	// --force-rm: the legacy builder otherwise keeps the container of a step that failed (or was
	// interrupted), and each failed build would leave one behind.
	argv := []string{"build", "--force-rm", "--file", bc.dockerfile, "--tag", ref,
		"--label", "io.protobench.image=" + name, "--label", "io.protobench.content-hash=" + sum}
	for _, k := range sortedKeys(args) {
		argv = append(argv, "--build-arg", k+"="+args[k])
	}
	argv = append(argv, "-")
	fmt.Fprintf(e.opts.BuildLog, "==> %s: building %s\n", name, ref)
	if err := e.streamBuild(ctx, bc, argv); err != nil {
		return Image{}, err
	}
	id := ""
	if !e.opts.DryRun {
		if id, err = e.r.imageID(ctx, ref); err != nil {
			return Image{}, err
		}
	}
	e.tagLatest(ctx, ref, name)
	return Image{Ref: ref, ID: id, Source: Built}, nil
}

// streamBuild pipes the context into `docker build -` with the legacy builder, which works with
// every docker CLI on these machines (the 28.x CLI has no buildx, so BuildKit fails there).
func (e *ensurer) streamBuild(ctx context.Context, bc *buildContext, argv []string) error {
	if e.opts.DryRun {
		fmt.Fprintf(e.log, "# the build context (stdin) is a tar of %d entries assembled by protobench images\n", len(bc.entries))
		return e.r.exec(ctx, nil, []string{"DOCKER_BUILDKIT=0"}, e.r.docker, argv...)
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(bc.writeTar(pw)) }()
	err := e.r.exec(ctx, pr, []string{"DOCKER_BUILDKIT=0"}, e.r.docker, argv...)
	pr.Close()
	return err
}

// tagLatest points protobench/<name>:latest at ref, so a hand-run `docker compose` (whose
// defaults name :latest for local-only images) uses the newest build. Failure is harmless.
func (e *ensurer) tagLatest(ctx context.Context, ref, name string) {
	if e.opts.DryRun {
		return
	}
	_ = e.r.exec(ctx, nil, nil, e.r.docker, "tag", ref, LocalRepository+name+":latest")
}

// protobenchContext narrows the repository to what the binaries compile (go.mod, go.sum and the
// directories of the packages the mains reach, without tests), so an edit to a README or a
// dashboard does not rebuild the image, and adds the deps stub (see images/protobench/imagedeps).
func (e *ensurer) protobenchContext(bc *buildContext) error {
	var missing []string
	for _, m := range protobenchMains {
		if _, err := os.Stat(filepath.Join(e.opts.RepoRoot, m)); err != nil {
			missing = append(missing, "./"+m)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing main package(s) %s: the image must hold /usr/local/bin/protobench and protobench-<name>-server for every Go server in internal/targets", strings.Join(missing, " "))
	}
	g, err := walkGoGraph(e.opts.RepoRoot, protobenchMains, runtime.GOARCH)
	if err != nil {
		return fmt.Errorf("read the import graph: %w", err)
	}
	keep := func(name string) bool {
		switch {
		case name == "go.mod", name == "go.sum", name == bc.dockerfile:
			return true
		case strings.HasPrefix(name, "images/protobench/imagedeps/"):
			return true
		case strings.HasSuffix(name, "_test.go"):
			return false
		}
		for _, d := range g.Dirs {
			if strings.HasPrefix(name, d+"/") {
				return true
			}
		}
		return false
	}
	for name, en := range bc.entries {
		if !en.mode.IsDir() && !keep(name) {
			delete(bc.entries, name)
		}
	}
	pruneEmptyDirs(bc)
	bc.addData("images/protobench/imagedeps/deps.go", depsStub(g.External))
	return nil
}

// pruneEmptyDirs drops directory entries left without files, so removed files do not leave
// hash-relevant empty directories behind.
func pruneEmptyDirs(bc *buildContext) {
	used := map[string]bool{}
	for name, en := range bc.entries {
		if en.mode.IsDir() {
			continue
		}
		for d := filepath.ToSlash(filepath.Dir(name)); d != "." && d != "/"; d = filepath.ToSlash(filepath.Dir(d)) {
			used[d] = true
		}
	}
	for name, en := range bc.entries {
		if en.mode.IsDir() && !used[name] {
			delete(bc.entries, name)
		}
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func firstErrLine(err error) string {
	return strings.TrimSpace(strings.SplitN(err.Error(), "\n", 2)[0])
}
