package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Debian suite and variant of the debootstrap base.
const (
	baseSuite   = "bookworm"
	baseVariant = "minbase"
)

// baseSources is the apt sources list written into the debootstrap tree: the same suites
// debian:bookworm-slim carries, so both bases install the same package versions.
func baseSources(mirror string) string {
	security := strings.TrimSuffix(mirror, "/debian") + "/debian-security"
	return fmt.Sprintf("deb %[1]s %[2]s main\ndeb %[1]s %[2]s-updates main\ndeb %[3]s %[2]s-security main\n",
		mirror, baseSuite, security)
}

// base is debian:bookworm-slim where it can be had, else `debootstrap --variant=minbase bookworm`
// imported with `docker import`. The local tag hashes the recipe, not the tree: debootstrap's
// output is not byte-reproducible, and a re-run must find the image it made.
func (e *ensurer) base(ctx context.Context, sp spec) (Image, error) {
	if img, _, ok := e.upstream(ctx, sp.upstream); ok {
		img.Variant = sp.upstream
		return img, nil
	}
	recipe := strings.Join([]string{
		"protobench-base/v2", "debootstrap", "--variant=" + baseVariant, baseSuite, e.opts.DebianMirror,
		runtime.GOARCH, baseSources(e.opts.DebianMirror),
		"clean: apt archives, lists, docs, manuals, locales", fmt.Sprint(slimFiles),
	}, "\n")
	sum := sha256.Sum256([]byte(recipe))
	ref := LocalRepository + Base + ":" + hex.EncodeToString(sum[:])[:12]
	if id, err := e.r.imageID(ctx, ref); err != nil {
		return Image{}, err
	} else if id != "" {
		e.tagLatest(ctx, ref, Base)
		return Image{Ref: ref, ID: id, Source: Cached, Variant: "debootstrap"}, nil
	}
	if err := e.ensureDebootstrap(ctx); err != nil {
		return Image{}, err
	}
	tmp, err := os.MkdirTemp("", "protobench-base-")
	if err != nil {
		return Image{}, err
	}
	defer os.RemoveAll(tmp)
	rootfs := filepath.Join(tmp, "rootfs")
	tarball := filepath.Join(tmp, "rootfs.tar")
	fmt.Fprintf(e.opts.BuildLog, "==> base: debootstrap %s into %s\n", baseSuite, rootfs)
	steps := [][]string{
		{"debootstrap", "--variant=" + baseVariant, baseSuite, rootfs, e.opts.DebianMirror},
	}
	for _, st := range steps {
		if err := e.r.exec(ctx, nil, nil, st[0], st[1:]...); err != nil {
			return Image{}, err
		}
	}
	if !e.opts.DryRun {
		if err := finishRootfs(rootfs, baseSources(e.opts.DebianMirror)); err != nil {
			return Image{}, err
		}
	} else {
		fmt.Fprintf(e.log, "+ (write %s/etc/apt/sources.list; remove cached .deb files and apt lists)\n", rootfs)
	}
	if err := e.r.exec(ctx, nil, nil, "tar", "--numeric-owner", "-C", rootfs, "-cf", tarball, "."); err != nil {
		return Image{}, err
	}
	if err := e.r.exec(ctx, nil, nil, e.r.docker, "import",
		"--change", "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"--change", `CMD ["bash"]`,
		"--change", "LABEL io.protobench.image=base io.protobench.recipe="+hex.EncodeToString(sum[:]),
		tarball, ref); err != nil {
		return Image{}, err
	}
	id := ""
	if !e.opts.DryRun {
		if id, err = e.r.imageID(ctx, ref); err != nil {
			return Image{}, err
		}
	}
	e.tagLatest(ctx, ref, Base)
	return Image{Ref: ref, ID: id, Source: Built, Variant: "debootstrap"}, nil
}

// ensureDebootstrap installs debootstrap with apt-get when it is missing (root only).
func (e *ensurer) ensureDebootstrap(ctx context.Context) error {
	if _, err := exec.LookPath("debootstrap"); err == nil {
		return nil
	}
	if os.Geteuid() != 0 {
		return errors.New("no registry answers and building the base needs debootstrap as root: run as root, or install debootstrap and use sudo")
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return errors.New("no registry answers and debootstrap is missing (no apt-get to install it)")
	}
	fmt.Fprintln(e.log, "base: installing debootstrap with apt-get")
	if err := e.r.exec(ctx, nil, []string{"DEBIAN_FRONTEND=noninteractive"}, "apt-get", "update"); err != nil {
		return err
	}
	return e.r.exec(ctx, nil, []string{"DEBIAN_FRONTEND=noninteractive"}, "apt-get", "install", "-y", "--no-install-recommends", "debootstrap")
}

// slimFiles make the debootstrap tree behave like debian:bookworm-slim in image builds: apt
// keeps no downloaded .deb files or package caches in a layer (otherwise every `apt-get install`
// layer carries about 80 MB of them), and dpkg leaves out documentation, manuals and
// translations.
var slimFiles = map[string]string{
	"etc/apt/apt.conf.d/docker-clean": `DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
`,
	"etc/apt/apt.conf.d/docker-no-languages":  "Acquire::Languages \"none\";\n",
	"etc/apt/apt.conf.d/docker-gzip-indexes":  "Acquire::GzipIndexes \"true\";\n",
	"etc/apt/apt.conf.d/docker-no-recommends": "APT::Install-Recommends \"false\";\nAPT::Install-Suggests \"false\";\n",
	"etc/dpkg/dpkg.cfg.d/docker": `path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/lintian/overrides/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/man/*
`,
}

// finishRootfs gives the tree the full bookworm sources and the slim settings, and drops what
// debootstrap leaves behind that no image needs (the downloaded .deb files alone are 90 MB).
func finishRootfs(rootfs, sources string) error {
	files := map[string]string{"etc/apt/sources.list": sources}
	for name, content := range slimFiles {
		files[name] = content
	}
	for name, content := range files {
		p := filepath.Join(rootfs, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
	}
	for _, pattern := range []string{
		"var/cache/apt/archives/*.deb", "var/cache/apt/*.bin", "var/lib/apt/lists/*",
		"usr/share/man/*", "usr/share/info/*", "usr/share/locale/*", "usr/share/groff/*",
		"var/log/*.log", "var/log/apt/*",
	} {
		matches, _ := filepath.Glob(filepath.Join(rootfs, pattern))
		for _, m := range matches {
			if err := os.RemoveAll(m); err != nil {
				return err
			}
		}
	}
	// Documentation goes, except the copyright files Debian's licences ask to keep.
	docs, _ := filepath.Glob(filepath.Join(rootfs, "usr/share/doc/*/*"))
	for _, d := range docs {
		if filepath.Base(d) != "copyright" {
			if err := os.RemoveAll(d); err != nil {
				return err
			}
		}
	}
	return nil
}

// goBuilder builds images/go-builder on golang:1.26-bookworm where it can be had, else on the
// base with the host's Go toolchain copied in; both get the extra CA certificates.
func (e *ensurer) goBuilder(ctx context.Context, sp spec) (Image, error) {
	text, err := os.ReadFile(filepath.Join(e.opts.RepoRoot, filepath.FromSlash(sp.dockerfile)))
	if err != nil {
		return Image{}, err
	}
	bc := newBuildContext("Dockerfile")
	bc.addData("Dockerfile", text)

	caFiles, caNote, err := extraCAs(e.opts.ExtraCADir)
	if err != nil {
		return Image{}, err
	}
	bc.addDir("extra-ca")
	for rel, src := range caFiles {
		if err := bc.addHostFile("extra-ca/"+rel, src, false); err != nil {
			return Image{}, err
		}
	}

	base, _, ok := e.upstream(ctx, UpstreamGo)
	variant := UpstreamGo
	bc.addDir("goroot")
	if !ok {
		base = e.require(ctx, Base)
		if base.Source == Unavailable {
			return Image{}, errors.New("needs the base image, which is unavailable")
		}
		goroot, err := hostGoRoot(e.opts.GoRoot)
		if err != nil {
			return Image{}, err
		}
		ident, err := goRootIdentity(goroot)
		if err != nil {
			return Image{}, err
		}
		// The tests and docs of the toolchain are not needed to build; leaving them out saves
		// a fifth of the context.
		skip := map[string]bool{"test": true, "doc": true, "api": true, "pkg/obj": true}
		bc.deferred = append(bc.deferred, func() error {
			if err := bc.addHostTree("goroot", goroot, skip, true); err != nil {
				return fmt.Errorf("copy GOROOT %s: %w", goroot, err)
			}
			return nil
		})
		bc.identity = append(bc.identity, ident)
		variant = "host Go " + strings.Fields(ident)[0]
	}
	args := map[string]string{"BASE_IMAGE": base.Ref}
	hashArgs := map[string]string{"BASE_IMAGE": base.Ref + "@" + imageIDOrRef(base)}
	img, err := e.buildContextImage(ctx, GoBuilder, bc, args, hashArgs)
	img.Variant = variant
	notes := []string{"on " + variant}
	if caNote != "" {
		notes = append(notes, caNote)
	}
	img.Note = strings.Join(notes, ", ")
	return img, err
}

// extraCAs lists the *.crt files under dir (DefaultExtraCADir when empty, none for "none"),
// keyed by their path relative to dir. A missing default directory is not an error.
func extraCAs(dir string) (map[string]string, string, error) {
	explicit := dir != ""
	if dir == "none" {
		return nil, "no extra CAs", nil
	}
	if dir == "" {
		dir = DefaultExtraCADir
	}
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".crt") {
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			files[filepath.ToSlash(rel)] = p
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && !explicit {
			return nil, "", nil
		}
		return nil, "", fmt.Errorf("extra CA directory: %w", err)
	}
	if len(files) == 0 {
		return nil, "", nil
	}
	return files, fmt.Sprintf("%d extra CA certificate(s) from %s", len(files), dir), nil
}

// hostGoRoot finds the Go toolchain to copy: the given one, `go env GOROOT`, or the GOROOT this
// binary was built with.
func hostGoRoot(given string) (string, error) {
	candidates := []string{given}
	if given == "" {
		if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
			candidates = append(candidates, strings.TrimSpace(string(out)))
		}
		candidates = append(candidates, runtime.GOROOT()) //nolint:staticcheck // fallback when no go is on PATH
	}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(c, "bin", "go")); err == nil {
			return c, nil
		}
	}
	return "", errors.New("no registry answers (so no golang image) and no Go toolchain on this host to copy into the Go builder: install Go or pass --goroot")
}

// goRootIdentity stands for the whole toolchain tree in the content hash: its VERSION file and
// the size and mtime of the go command and the compiler. Hashing 250 MB on every run would make
// warm runs slow; replacing a toolchain changes these.
func goRootIdentity(goroot string) (string, error) {
	version, err := os.ReadFile(filepath.Join(goroot, "VERSION"))
	if err != nil {
		return "", fmt.Errorf("GOROOT %s has no VERSION file: %w", goroot, err)
	}
	parts := []string{strings.SplitN(strings.TrimSpace(string(version)), "\n", 2)[0], goroot}
	compilers, _ := filepath.Glob(filepath.Join(goroot, "pkg", "tool", "*", "compile"))
	for _, p := range append([]string{filepath.Join(goroot, "bin", "go"), filepath.Join(goroot, "go.env")}, compilers...) {
		if fi, err := os.Stat(p); err == nil {
			parts = append(parts, fmt.Sprintf("%s:%d:%d", filepath.Base(p), fi.Size(), fi.ModTime().UnixNano()))
		}
	}
	return strings.Join(parts, " "), nil
}

// wrk is wrk2 built from GitHub where the network allows (tried only when a registry answers),
// else Debian's wrk 4.1, which says so: same output layout, no -R.
func (e *ensurer) wrk(ctx context.Context, sp spec) (Image, error) {
	reason := "no registry, so no GitHub for wrk2's source"
	if e.registry {
		if _, err := os.Stat(filepath.Join(e.opts.RepoRoot, wrk2Dockerfile)); err == nil {
			img, err := e.buildDockerfile(ctx, Wrk, wrk2Dockerfile, nil, nil)
			if err == nil {
				img.Variant = "wrk2"
				return img, nil
			}
			fmt.Fprintf(e.opts.BuildLog, "wrk: wrk2 build failed, falling back to Debian wrk: %v\n", err)
			reason = "the wrk2 build failed"
		}
	}
	img, err := e.buildDockerfile(ctx, Wrk, sp.dockerfile, nil, nil)
	img.Variant = "wrk"
	img.Note = "Debian wrk 4.1 stands in for wrk2 (" + reason + "): no -R, closed model only"
	return img, err
}
