package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/protobench/protobench/internal/scenario"
)

// One run per compose project and per results folder, and no two projects on the same cores.
// Two runs of one project remove each other's containers; two runs writing one folder lose
// each other's records; two projects pinned to the same cores measure each other. Each lock is
// a flock on a file that names its holder (pid, project, folder, cores), so a refused run can
// say who holds it; the kernel drops the lock when the holder exits, however it exits.

// LockDirEnv names the folder of the host's project locks; os.TempDir()/protobench-locks when
// unset. Every run on one host must see the same folder.
const LockDirEnv = "PROTOBENCH_LOCK_DIR"

// folderLockFile is the lock inside a results folder.
const folderLockFile = ".protobench.lock"

// lockHolder is what a lock file says about the run that holds it.
type lockHolder struct {
	PID     int       `json:"pid"`
	Project string    `json:"project"`
	Folder  string    `json:"folder,omitempty"`
	Cores   []int     `json:"cores,omitempty"` // the host cores the run pins to; none on swarm
	Command []string  `json:"command"`
	Started time.Time `json:"started"`
}

func (h lockHolder) describe() string {
	s := "pid " + strconv.Itoa(h.PID)
	if h.Folder != "" {
		s += ", results folder " + h.Folder
	}
	if !h.Started.IsZero() {
		s += ", started " + h.Started.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	return s
}

// runLocks are the locks a run holds until it ends.
type runLocks struct {
	me      lockHolder
	project *os.File
	folders []*os.File
}

func lockDir() string {
	if d := os.Getenv(LockDirEnv); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "protobench-locks")
}

func projectLockPath(dir, project string) string {
	return filepath.Join(dir, "project-"+project+".lock")
}

// lockRun takes project's lock, refuses cores another project's run holds, and takes the lock
// of folder when it is not empty (a resumed folder). A refusal changes nothing of the holder's.
func lockRun(project, folder string, cores []int) (*runLocks, error) {
	dir := lockDir()
	if err := openLockDir(dir); err != nil {
		return nil, err
	}
	// One registry lock around take-check-record, so that two projects starting at once cannot
	// both miss each other's cores.
	reg, err := openLockFile(filepath.Join(dir, "registry.lock"), 0o666)
	if err != nil {
		return nil, err
	}
	defer reg.Close()
	if err := waitFlock(reg); err != nil {
		return nil, fmt.Errorf("lock %s: %w", reg.Name(), err)
	}
	l := &runLocks{me: lockHolder{PID: os.Getpid(), Project: project, Cores: cores, Command: os.Args, Started: time.Now().UTC()}}
	if l.project, err = takeLock(projectLockPath(dir, project), 0o666); err != nil {
		var h *heldError
		if errors.As(err, &h) {
			return nil, fmt.Errorf("project %q is in use by another run (%s): two runs of one project remove each other's containers. "+
				"Wait for it to end, or run this one beside it under another project name: --project %s-2 (on cores of its own)",
				project, h.holder.describe(), project)
		}
		return nil, err
	}
	if err := l.checkCores(dir); err != nil {
		l.release()
		return nil, err
	}
	if folder != "" {
		if err := l.lockFolder(folder); err != nil {
			l.release()
			return nil, err
		}
	} else if err := writeHolder(l.project, l.me); err != nil {
		l.release()
		return nil, err
	}
	return l, nil
}

// lockFolder takes a results folder's lock and records the folder in the project's lock.
func (l *runLocks) lockFolder(folder string) error {
	f, err := takeLock(filepath.Join(folder, folderLockFile), 0o644)
	if err != nil {
		var h *heldError
		if errors.As(err, &h) {
			return fmt.Errorf("results folder %s is in use by another run (%s, project %q): two runs writing one folder overwrite each other's records. Wait for it to end",
				folder, h.holder.describe(), h.holder.Project)
		}
		return err
	}
	l.folders = append(l.folders, f)
	l.me.Folder = folder
	if err := writeHolder(f, l.me); err != nil {
		return err
	}
	return writeHolder(l.project, l.me)
}

// checkCores refuses cores that a run of another project holds.
func (l *runLocks) checkCores(dir string) error {
	if len(l.me.Cores) == 0 {
		return nil
	}
	others, _ := filepath.Glob(filepath.Join(dir, "project-*.lock"))
	for _, p := range others {
		if p == l.project.Name() {
			continue
		}
		h, held := heldBy(p)
		if !held {
			continue
		}
		var shared []int
		for _, c := range l.me.Cores {
			if slices.Contains(h.Cores, c) {
				shared = append(shared, c)
			}
		}
		if len(shared) > 0 {
			return fmt.Errorf("this run would pin to cores %s, and project %q (%s) runs on %s: two runs on shared cores measure each other. "+
				"Wait for it to end, or give this run cores of its own in its scenario's layout (server_cpuset, client_cpuset, observability_cpuset)",
				cpuList(l.me.Cores), h.Project, h.describe(), cpuList(h.Cores))
		}
	}
	return nil
}

// release drops every lock (the files stay: removing a lock file while another run opens it
// would let two runs hold two different files).
func (l *runLocks) release() {
	if l == nil {
		return
	}
	for _, f := range append(l.folders, l.project) {
		if f != nil {
			unflock(f)
			f.Close()
		}
	}
	l.folders, l.project = nil, nil
}

// heldError is a lock another run holds.
type heldError struct{ holder lockHolder }

func (e *heldError) Error() string { return "held by " + e.holder.describe() }

// takeLock opens path and locks it without waiting; a held lock is a *heldError naming its holder.
func takeLock(path string, mode os.FileMode) (*os.File, error) {
	f, err := openLockFile(path, mode)
	if err != nil {
		return nil, err
	}
	held, err := tryFlock(f)
	if err != nil || held {
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		h, _ := readHolder(path)
		return nil, &heldError{holder: h}
	}
	return f, nil
}

// heldBy reads the holder of path, and whether a run holds it now (a probe lock, dropped at once).
func heldBy(path string) (lockHolder, bool) {
	f, err := os.Open(path)
	if err != nil {
		return lockHolder{}, false
	}
	defer f.Close()
	held, err := tryFlock(f)
	if err != nil {
		return lockHolder{}, false
	}
	if !held {
		unflock(f)
		return lockHolder{}, false
	}
	h, _ := readHolder(path)
	return h, true
}

func readHolder(path string) (lockHolder, error) {
	var h lockHolder
	b, err := os.ReadFile(path)
	if err != nil {
		return h, err
	}
	return h, json.Unmarshal(b, &h)
}

func writeHolder(f *os.File, h lockHolder) error {
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err = f.WriteAt(append(b, '\n'), 0)
	return err
}

// layoutCores are every host core a layout pins something to.
func layoutCores(l scenario.Layout) []int {
	var out []int
	for _, s := range []string{l.ServerCPUSet, l.ClientCPUSet, l.ObservabilityCPUSet} {
		cs, _ := scenario.ParseCPUSet(s)
		for _, c := range cs {
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	slices.Sort(out)
	return out
}

func cpuList(cs []int) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}
