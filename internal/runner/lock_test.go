package runner

import (
	"bufio"
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/results"
)

// The lock tests hold locks in a second process (this test binary, re-run as
// TestLockHelperProcess), as a first run would, and try the second run here.

// TestLockHelperProcess is the first run: it takes the locks its environment names, says so on
// stdout, and holds them until its stdin closes. It does nothing when run as a test.
func TestLockHelperProcess(t *testing.T) {
	project := os.Getenv("PROTOBENCH_TEST_HOLD_PROJECT")
	if project == "" {
		t.Skip("a helper process of the lock tests")
	}
	var cores []int
	for _, c := range strings.Split(os.Getenv("PROTOBENCH_TEST_HOLD_CORES"), ",") {
		if n, err := strconv.Atoi(c); err == nil {
			cores = append(cores, n)
		}
	}
	l, err := lockRun(project, os.Getenv("PROTOBENCH_TEST_HOLD_RESUME"), cores)
	if err != nil {
		os.Stdout.WriteString("error: " + err.Error() + "\n")
		os.Exit(3)
	}
	if f := os.Getenv("PROTOBENCH_TEST_HOLD_FOLDER"); f != "" {
		if err := l.lockFolder(f); err != nil {
			os.Stdout.WriteString("error: " + err.Error() + "\n")
			os.Exit(3)
		}
	}
	os.Stdout.WriteString("locked\n")
	bufio.NewReader(os.Stdin).ReadString('\n')
	l.release()
	os.Exit(0)
}

// holdLocks starts a process holding project's lock (with cores, and resume or folder when
// set) and returns its pid and how to end it.
func holdLocks(t *testing.T, project, cores, resume, folder string) (int, func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHelperProcess$")
	cmd.Env = append(os.Environ(), "PROTOBENCH_TEST_HOLD_PROJECT="+project, "PROTOBENCH_TEST_HOLD_CORES="+cores,
		"PROTOBENCH_TEST_HOLD_RESUME="+resume, "PROTOBENCH_TEST_HOLD_FOLDER="+folder)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := func() {
		stdin.Close()
		cmd.Wait()
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if line != "locked\n" {
		stop()
		t.Fatalf("the first run could not take its locks: %q %v", line, err)
	}
	t.Cleanup(stop)
	return cmd.Process.Pid, stop
}

// snapshot is every file under dir with its bytes and mode.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		s := info.Mode().String()
		if !d.IsDir() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			s += " " + string(b)
		}
		out[p] = s
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameSnapshot(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for p, b := range before {
		if after[p] != b {
			t.Errorf("%s: %s changed", what, p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s: %s appeared", what, p)
		}
	}
}

// firstRunFolder is a results folder as a first run of the smoke scenario leaves it while it runs.
func firstRunFolder(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "smoke-first")
	if err := os.MkdirAll(filepath.Join(dir, "raw"), 0o755); err != nil {
		t.Fatal(err)
	}
	sc, err := os.ReadFile(filepath.Join("..", "..", "scenarios", "smoke.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		results.ScenarioFile: sc,
		results.RunFile:      []byte(`{"run_id": "smoke-first", "scenario": "smoke", "plan_flags": {"quick": true}}` + "\n"),
		results.JSONFile:     []byte("[]\n"),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runCLI runs `protobench run` with args (a docker CLI that does not exist, so that a run the
// locks let through stops before it could start anything).
func runCLI(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Command(context.Background(), append([]string{"--docker", "/nonexistent/docker"}, args...), &stdout, &stderr)
	return code, stderr.String()
}

// TestSecondRunOnHeldProjectIsRefused: while a first run holds project lockp (writing its
// folder), a second run of the same project is refused at once, naming the first one's pid and
// folder and --project, and leaves the first one's folder and lock as they were.
func TestSecondRunOnHeldProjectIsRefused(t *testing.T) {
	t.Setenv(LockDirEnv, t.TempDir())
	folder := firstRunFolder(t)
	pid, stop := holdLocks(t, "lockp", "", "", folder)
	beforeFolder, beforeLocks := snapshot(t, folder), snapshot(t, lockDir())

	code, stderr := runCLI(t, "--project", "lockp", "--quick", "smoke")
	if code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	for _, want := range []string{"pid " + strconv.Itoa(pid), folder, "--project lockp-2", `project "lockp" is in use`} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	sameSnapshot(t, "the first run's folder", beforeFolder, snapshot(t, folder))
	sameSnapshot(t, "the locks", beforeLocks, snapshot(t, lockDir()))

	// Once the first run ends (however it ends: the kernel drops its lock), the project is free.
	stop()
	l, err := lockRun("lockp", "", nil)
	if err != nil {
		t.Fatalf("after the first run ended: %v", err)
	}
	l.release()
}

// TestTwoResumesOfOneFolder: while one run resumes a folder, a second --resume of it (under
// another project) is refused, and the folder is left as it was.
func TestTwoResumesOfOneFolder(t *testing.T) {
	t.Setenv(LockDirEnv, t.TempDir())
	folder := firstRunFolder(t)
	pid, _ := holdLocks(t, "resume-a", "", folder, "")
	before := snapshot(t, folder)

	code, stderr := runCLI(t, "--project", "resume-b", "--resume", folder)
	if code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	for _, want := range []string{"results folder " + folder + " is in use", "pid " + strconv.Itoa(pid), `project "resume-a"`} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	sameSnapshot(t, "the resumed folder", before, snapshot(t, folder))
	// The refused run released its own project's lock.
	l, err := lockRun("resume-b", "", nil)
	if err != nil {
		t.Fatalf("project resume-b after the refusal: %v", err)
	}
	l.release()
}

// TestProjectsOnSharedCoresAreRefused: a run of another project on cores the first one pins to
// is refused, naming both sets; disjoint cores, or none (swarm), are accepted.
func TestProjectsOnSharedCoresAreRefused(t *testing.T) {
	t.Setenv(LockDirEnv, t.TempDir())
	pid, _ := holdLocks(t, "cores-a", "0,1", "", "")
	_, err := lockRun("cores-b", "", []int{1, 2})
	if err == nil {
		t.Fatal("a second project on core 1 was accepted")
	}
	for _, want := range []string{"cores 1,2", `project "cores-a"`, "pid " + strconv.Itoa(pid), "runs on 0,1", "server_cpuset"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	for _, cores := range [][]int{{2, 3}, nil} {
		l, err := lockRun("cores-c", "", cores)
		if err != nil {
			t.Errorf("cores %v: %v", cores, err)
		}
		l.release()
	}
}

// TestLockFolderRefusesALink: a lock folder or lock file that is a symbolic link (someone
// else's, in a shared /tmp) is refused rather than followed.
func TestLockFolderRefusesALink(t *testing.T) {
	base := t.TempDir()
	victim := filepath.Join(base, "victim")
	if err := os.WriteFile(victim, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "locks")
	t.Setenv(LockDirEnv, dir)
	if err := os.Symlink(victim, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := lockRun("linked", "", nil); err == nil || !strings.Contains(err.Error(), "not a folder") {
		t.Errorf("a lock folder that is a link: %v", err)
	}
	os.Remove(dir)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, projectLockPath(dir, "linked")); err != nil {
		t.Fatal(err)
	}
	if _, err := lockRun("linked", "", nil); err == nil {
		t.Error("a project lock file that is a link was followed")
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep me\n" {
		t.Errorf("the link's target changed: %q", b)
	}
}
