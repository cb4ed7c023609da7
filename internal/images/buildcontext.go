package images

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// entry is one file, directory or symlink of a build context.
type entry struct {
	name string // slash-separated path inside the context, no leading "./"
	mode fs.FileMode
	src  string // host file to read; empty when data holds the content
	data []byte
	link string // symlink target
	// unhashed entries are not hashed one by one: the context's identity strings stand for them
	// (the host GOROOT is 250 MB; hashing it on every run would be the slowest part of a warm
	// run).
	unhashed bool
}

// buildContext is a Docker build context assembled in memory and streamed to `docker build -`.
type buildContext struct {
	dockerfile string // path of the Dockerfile inside the context
	entries    map[string]entry
	identity   []string // extra strings that stand for unhashed entries
	// deferred add unhashed entries just before a build: they cannot change the hash, so a warm
	// run that finds the image never walks them.
	deferred []func() error
}

func newBuildContext(dockerfile string) *buildContext {
	return &buildContext{dockerfile: dockerfile, entries: map[string]entry{}}
}

// addData adds a generated regular file.
func (c *buildContext) addData(name string, data []byte) {
	c.addParents(name)
	c.entries[name] = entry{name: name, mode: 0o644, data: data}
}

// addDir adds an (empty or not) directory.
func (c *buildContext) addDir(name string) {
	name = strings.TrimSuffix(name, "/")
	c.addParents(name)
	c.entries[name] = entry{name: name, mode: fs.ModeDir | 0o755}
}

// addHostFile adds a file, directory or symlink from the host under name.
func (c *buildContext) addHostFile(name, src string, unhashed bool) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	c.addParents(name)
	e := entry{name: name, mode: fi.Mode(), unhashed: unhashed}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		if e.link, err = os.Readlink(src); err != nil {
			return err
		}
	case fi.IsDir():
	case fi.Mode().IsRegular():
		e.src = src
	default:
		return nil // sockets, devices: never part of a context
	}
	c.entries[name] = e
	return nil
}

// addHostTree adds every file under dir as prefix/<relative path>, skipping top-level
// directories named in skip.
func (c *buildContext) addHostTree(prefix, dir string, skip map[string]bool, unhashed bool) error {
	c.addDir(prefix)
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() && skip[rel] {
			return filepath.SkipDir
		}
		return c.addHostFile(prefix+"/"+rel, p, unhashed)
	})
}

func (c *buildContext) addParents(name string) {
	for dir := path.Dir(name); dir != "." && dir != "/"; dir = path.Dir(dir) {
		if _, ok := c.entries[dir]; ok {
			return
		}
		c.entries[dir] = entry{name: dir, mode: fs.ModeDir | 0o755}
	}
}

func (c *buildContext) sortedNames() []string {
	names := make([]string, 0, len(c.entries))
	for n := range c.entries {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// contentHash is the hex SHA-256 of everything that determines an image: a recipe version, the
// image's name, the build args (image-valued args contribute their image IDs, so a rebuilt base
// changes every hash built on it), the identity strings and every hashed entry's path, type,
// permission bits and content. Modification times are left out on purpose: a fresh checkout
// must hash like the old one.
func (c *buildContext) contentHash(name string, args map[string]string) (string, error) {
	h := sha256.New()
	field := func(parts ...string) {
		for _, p := range parts {
			var n [8]byte
			binary.BigEndian.PutUint64(n[:], uint64(len(p)))
			h.Write(n[:])
			h.Write([]byte(p))
		}
	}
	field("protobench-images/v1", name, c.dockerfile)
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		field("arg", k, args[k])
	}
	for _, id := range c.identity {
		field("identity", id)
	}
	for _, n := range c.sortedNames() {
		e := c.entries[n]
		if e.unhashed {
			continue
		}
		field("entry", e.name, fmt.Sprintf("%o", uint32(e.mode&(fs.ModeType|fs.ModePerm))), e.link)
		switch {
		case e.src != "":
			sum, err := fileSHA256(e.src)
			if err != nil {
				return "", err
			}
			field(sum)
		case e.mode.IsRegular():
			sum := sha256.Sum256(e.data)
			field(hex.EncodeToString(sum[:]))
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// contextModTime is the fixed mtime of every context entry: contents, not timestamps, decide
// whether Docker's layer cache hits.
var contextModTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// writeTar streams the context as an uncompressed tar, entries in sorted order.
func (c *buildContext) writeTar(w io.Writer) error {
	tw := tar.NewWriter(w)
	for _, n := range c.sortedNames() {
		e := c.entries[n]
		hdr := &tar.Header{
			Name:    e.name,
			Mode:    int64(e.mode.Perm()),
			ModTime: contextModTime,
			Format:  tar.FormatPAX,
		}
		var body io.Reader
		switch {
		case e.mode&fs.ModeSymlink != 0:
			hdr.Typeflag = tar.TypeSymlink
			hdr.Linkname = e.link
		case e.mode.IsDir():
			hdr.Typeflag = tar.TypeDir
			hdr.Name += "/"
		case e.src != "":
			f, err := os.Open(e.src)
			if err != nil {
				return err
			}
			fi, err := f.Stat()
			if err != nil {
				f.Close()
				return err
			}
			hdr.Typeflag = tar.TypeReg
			hdr.Size = fi.Size()
			body = f
		default:
			hdr.Typeflag = tar.TypeReg
			hdr.Size = int64(len(e.data))
			body = bytes.NewReader(e.data)
		}
		if err := tw.WriteHeader(hdr); err != nil {
			closeBody(body)
			return err
		}
		if body != nil {
			_, err := io.CopyN(tw, body, hdr.Size)
			closeBody(body)
			if err != nil {
				return fmt.Errorf("%s: %w", e.name, err)
			}
		}
	}
	return tw.Close()
}

func closeBody(r io.Reader) {
	if c, ok := r.(io.Closer); ok {
		c.Close()
	}
}

// repoSkip are the repository-root entries never sent to a build: git's store, run results and
// the binaries run.sh builds. Everything else is a candidate, as with `docker build .`; git's
// ignore rules are deliberately not used, since an unanchored pattern there can hide source
// files that the host's go build compiles.
var repoSkip = map[string]bool{".git": true, "results": true, "bin": true, "protobench": true}

// repoFiles lists the repository's files (slash paths relative to root) that a build may see.
func repoFiles(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		if repoSkip[rel] {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() {
			files = append(files, rel)
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}

// selectSources returns the files among all that a COPY/ADD source names: "." (everything), a
// file, a directory (everything under it), or a glob over files or leading directories.
func selectSources(all []string, sources []string) ([]string, error) {
	picked := map[string]bool{}
	for _, raw := range sources {
		src := strings.TrimPrefix(path.Clean("/"+raw), "/")
		if src == "" {
			for _, f := range all {
				picked[f] = true
			}
			continue
		}
		glob := strings.ContainsAny(src, "*?[")
		matched := false
		for _, f := range all {
			if sourceMatches(src, f, glob) {
				picked[f] = true
				matched = true
			}
		}
		if !matched {
			return nil, fmt.Errorf("COPY source %q matches no file in the repository", raw)
		}
	}
	out := make([]string, 0, len(picked))
	for f := range picked {
		out = append(out, f)
	}
	sort.Strings(out)
	return out, nil
}

func sourceMatches(src, file string, glob bool) bool {
	if !glob {
		return file == src || strings.HasPrefix(file, src+"/")
	}
	// A glob may name files or directories: try the file and each of its leading directories.
	for p := file; p != "." && p != "/"; p = path.Dir(p) {
		if ok, _ := path.Match(src, p); ok {
			return true
		}
	}
	return false
}
