package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

func init() {
	registerDeveloper("generate", "regenerate the committed protobuf code and the files derived from the target and tool registries (--check: fail if any is stale)", runGenerate)
}

// generatedFiles are the committed outputs of protoc, relative to the repository root.
var generatedFiles = []string{
	"internal/contract/benchpb/bench.pb.go",
	"internal/contract/benchpb/bench_grpc.pb.go",
	"internal/contract/benchpb/benchpbconnect/bench.connect.go",
}

// runGenerate regenerates into a scratch directory and compares, so --check never touches the tree.
// The protobuf code comes from protoc; the registry's files from derivedFiles.
func runGenerate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	check := fs.Bool("check", false, "only report whether the committed code is current")
	root := fs.String("root", ".", "repository root")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	tmp, err := os.MkdirTemp("", "protobench-gen-")
	if err != nil {
		fmt.Fprintln(stderr, "protobench generate:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	if err := runProtoc(ctx, *root, tmp, stderr); err != nil {
		fmt.Fprintln(stderr, "protobench generate:", err)
		return 1
	}
	if err := writeDerived(*root, tmp); err != nil {
		fmt.Fprintln(stderr, "protobench generate:", err)
		return 1
	}
	stale, err := syncGenerated(*root, tmp, *check, stdout, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "protobench generate:", err)
		return 1
	}
	if stale > 0 {
		return 1
	}
	if *check {
		fmt.Fprintln(stdout, "generated files are current")
	}
	return 0
}

// runProtoc generates the protobuf code into tmp with the plugin versions go.mod pins (go tool).
func runProtoc(ctx context.Context, root, tmp string, stderr io.Writer) error {
	plugins := map[string]string{}
	for _, p := range []string{"protoc-gen-go", "protoc-gen-go-grpc", "protoc-gen-connect-go"} {
		out, err := exec.CommandContext(ctx, "go", "tool", "-n", p).Output()
		if err != nil {
			return fmt.Errorf("cannot locate %s via 'go tool -n': %w", p, err)
		}
		plugins[p] = string(bytes.TrimSpace(out))
	}
	const module = "github.com/protobench/protobench"
	cmd := exec.CommandContext(ctx, "protoc",
		"--plugin=protoc-gen-go="+plugins["protoc-gen-go"],
		"--plugin=protoc-gen-go-grpc="+plugins["protoc-gen-go-grpc"],
		"--plugin=protoc-gen-connect-go="+plugins["protoc-gen-connect-go"],
		"-I", "proto",
		"--go_out="+tmp, "--go_opt=module="+module,
		"--go-grpc_out="+tmp, "--go-grpc_opt=module="+module,
		"--connect-go_out="+tmp, "--connect-go_opt=module="+module,
		"protobench/v1/bench.proto")
	cmd.Dir = root
	cmd.Stderr = stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("protoc failed (Debian: apt-get install protobuf-compiler): %w", err)
	}
	return nil
}

// writeDerived writes the files derived from the registries into tmp.
func writeDerived(root, tmp string) error {
	for _, d := range derivedFiles {
		text, err := d.make(root)
		if err != nil {
			return fmt.Errorf("%s: %w", d.path, err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(tmp, d.path)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(tmp, d.path), text, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// syncGenerated compares every generated file in tmp with the committed one under root. With
// check it reports the stale ones and counts them; otherwise it copies them over.
func syncGenerated(root, tmp string, check bool, stdout, stderr io.Writer) (stale int, err error) {
	all := append([]string{}, generatedFiles...)
	for _, d := range derivedFiles {
		all = append(all, d.path)
	}
	for _, f := range all {
		fresh, err := os.ReadFile(filepath.Join(tmp, f))
		if err != nil {
			return stale, err
		}
		committed, _ := os.ReadFile(filepath.Join(root, f))
		if bytes.Equal(fresh, committed) {
			continue
		}
		if check {
			fmt.Fprintf(stderr, "%s is stale: run 'go run ./cmd/protobench generate'\n", f)
			stale++
			continue
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755); err != nil {
			return stale, err
		}
		if err := os.WriteFile(filepath.Join(root, f), fresh, 0o644); err != nil {
			return stale, err
		}
		fmt.Fprintln(stdout, "wrote", f)
	}
	return stale, nil
}
