// Package repo finds the protobench checkout, for the commands and tests that read its files
// (scenarios, compose files, Dockerfiles, protos).
package repo

import (
	"errors"
	"os"
	"path/filepath"
)

// Root is $PROTOBENCH_ROOT (run.sh sets it), else the nearest parent of the working directory
// that holds go.mod, scenarios/ and compose/: the three together tell the checkout's root from a
// nested module such as images/cadvisor.
func Root() (string, error) {
	if r := os.Getenv("PROTOBENCH_ROOT"); r != "" {
		return filepath.Abs(r)
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if isRoot(dir) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cannot find the protobench checkout (a folder with go.mod, scenarios/ and compose/): run from inside it or set PROTOBENCH_ROOT")
		}
		dir = parent
	}
}

func isRoot(dir string) bool {
	for _, p := range []string{"go.mod", "scenarios", "compose"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			return false
		}
	}
	return true
}
