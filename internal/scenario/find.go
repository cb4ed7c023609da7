package scenario

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Find loads a scenario by name from scenariosDir, or from a path when nameOrPath names a file
// (it contains a path separator or ends in .yaml/.yml), so users can keep their own scenarios
// anywhere. An unknown name's error lists the scenarios that exist.
func Find(nameOrPath, scenariosDir string) (*Scenario, error) {
	if nameOrPath == "" {
		return nil, fmt.Errorf("no scenario given; available: %s", strings.Join(available(scenariosDir), ", "))
	}
	isPath := strings.ContainsRune(nameOrPath, filepath.Separator) || strings.ContainsRune(nameOrPath, '/') ||
		strings.HasSuffix(nameOrPath, ".yaml") || strings.HasSuffix(nameOrPath, ".yml")
	if isPath {
		if _, err := os.Stat(nameOrPath); err == nil {
			return Load(nameOrPath)
		}
		if strings.ContainsRune(nameOrPath, '/') || strings.ContainsRune(nameOrPath, filepath.Separator) {
			return nil, fmt.Errorf("scenario file %s does not exist", nameOrPath)
		}
		nameOrPath = strings.TrimSuffix(strings.TrimSuffix(nameOrPath, ".yaml"), ".yml")
	}
	for _, ext := range []string{".yaml", ".yml"} {
		p := filepath.Join(scenariosDir, nameOrPath+ext)
		if _, err := os.Stat(p); err == nil {
			return Load(p)
		}
	}
	return nil, fmt.Errorf("unknown scenario %q; available: %s (or give the path of a .yaml file)",
		nameOrPath, strings.Join(available(scenariosDir), ", "))
}

// available lists the scenario names (file stems) in dir.
func available(dir string) []string {
	files, _ := scenarioFiles(dir)
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = stem(f)
	}
	if len(names) == 0 {
		return []string{"none in " + dir}
	}
	return names
}

func stem(path string) string {
	base := filepath.Base(path)
	return strings.TrimSuffix(strings.TrimSuffix(base, ".yaml"), ".yml")
}

// scenarioFiles lists the .yaml and .yml files in dir, sorted.
func scenarioFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		if e.Type()&fs.ModeType != 0 {
			continue
		}
		if n := e.Name(); strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml") {
			files = append(files, filepath.Join(dir, n))
		}
	}
	sort.Strings(files)
	return files, nil
}

// Entry is one line of `protobench list`.
type Entry struct {
	Name        string
	Description string
	Path        string
	Runs        int
	Estimate    time.Duration // full run on this host, StartOverhead included
	Err         error         // the file does not load or plan; the rest is empty
}

// List loads every scenario in dir and estimates its full run on a host with cores cores
// (0: this host). A broken file becomes an entry with Err set rather than hiding the others.
func List(dir string, cores int) ([]Entry, error) {
	files, err := scenarioFiles(dir)
	if err != nil {
		return nil, fmt.Errorf("scenarios: %w", err)
	}
	if len(files) == 0 {
		return nil, errors.New("scenarios: no .yaml files in " + dir)
	}
	out := make([]Entry, 0, len(files))
	for _, f := range files {
		e := Entry{Name: stem(f), Path: f}
		sc, err := Load(f)
		if err != nil {
			e.Err = err
			out = append(out, e)
			continue
		}
		e.Name, e.Description = sc.Name, sc.Description
		plan, err := sc.Plan(PlanOptions{Cores: cores})
		if err != nil {
			e.Err = err
		} else {
			e.Runs, e.Estimate = len(plan.Runs), plan.TotalDuration
		}
		out = append(out, e)
	}
	return out, nil
}
