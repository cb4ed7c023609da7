package swarm

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// A tool runs once, as a one-task service, on whichever node the swarm picks, and a bind mount of the
// results folder cannot reach a remote node. So the job carries its inputs in and its outputs
// out itself:
//
//   - inputs (request bodies the tool reads) are swarm configs, mounted read-only at
//     <RawDir>/<name>, where the tool finds them as under compose;
//   - RawDir itself is a tmpfs the tool writes its files into;
//   - the tool's command is wrapped in `sh -c`: the tool runs with its stdout and stderr in
//     files, and when it ends the wrapper prints one tar of {stdout, stderr, exit code, the
//     task's open-files limit, RawDir} to stdout, base64-encoded between two marker lines,
//     and exits with the tool's own status.
//
// The runner reads that back with `docker service logs --raw`, which works for a task on any
// node. The log must hold the whole transfer, and a daemon's default log options need not: a
// json-file driver with log-opts max-size=10m and max-file=3 (the build machines' daemon.json)
// keeps the last 30 MB of a container's log, about 13 MB of base64 once json-file has wrapped
// each 76-character line in its JSON. ghz's report carries about 200 bytes per call, so 5 s of
// ghz at 20k calls/s is a 20 MB report: the log rotated the begin marker away, and the job
// failed with "no transfer in the job's log" though the tool and the wrapper had run to their
// end. So a job's task sets its own log driver and options (jobLogDriver, jobLogOpts), which
// dockerd does not merge with its defaults past the keys given, and the tar is compressed
// (ghz's per-call JSON shrinks about tenfold) when the image has gzip. Base64 lines are 76 characters: Docker splits log lines longer than 16 KiB, which could
// otherwise corrupt a long line of a tool's own output (a JSON result on one line), and the
// tool's bytes come back exactly, without the log driver's view of lines at all. The cost is a
// third more bytes through the log and a tar and base64 after the measured window has closed.
// The same path runs on one node, so the single-node tests exercise it.

const (
	transferBegin = "protobench-transfer-begin"
	transferEnd   = "protobench-transfer-end"
)

// wrapperScript is the `sh -c` script around a tool; "$@" is the tool's program and arguments.
// It needs sh, tar and base64 in the tool's image (every protobench image is Debian-based).
func wrapperScript(rawDir string) string {
	return `m=/tmp/.protobench-transfer.$$
mkdir -p "$m" || exit 125
date +%s.%N >"$m/started"
"$@" >"$m/stdout" 2>"$m/stderr"
code=$?
date +%s.%N >"$m/ended"
echo "$code" >"$m/exit"
ulimit -n >"$m/nofile"
pack() { tar -cf - -C "$m" stdout stderr exit nofile started ended -C / '` + strings.TrimPrefix(path.Clean(rawDir), "/") + `'; }
if command -v gzip >/dev/null 2>&1; then
echo ` + transferBegin + ` gzip
pack | gzip -1 | base64
else
echo ` + transferBegin + `
pack | base64
fi
echo ` + transferEnd + `
exit "$code"`
}

// jobLogDriver and jobLogOpts are a job task's log: json-file, which `docker service logs`
// reads on every node, in one file large enough for any transfer (json-file wants a positive
// max-size; the file goes with the task's container when the job's service is removed).
const jobLogDriver = "json-file"

var jobLogOpts = map[string]string{"max-size": "8g", "max-file": "1"}

// Job is a run-once tool.
type Job struct {
	Spec ServiceSpec // Entrypoint and Args are the tool's program and its arguments
	// RawDir is where the tool reads its inputs and writes its files ("/raw").
	RawDir string
	Inputs map[string][]byte // files put at RawDir/<name> before the tool starts
}

// JobResult is what a job's tool left.
type JobResult struct {
	Stdout, Stderr []byte
	ExitCode       int
	Files          map[string][]byte // the files the tool wrote under RawDir (inputs excluded), by name relative to it
	Nofile         int               // the task's open-files limit (ulimit -n)
	// Started and Ended are when the tool itself started and ended, by the node's clock: a
	// job's service also takes time to be scheduled, and to hand its output back.
	Started, Ended time.Time
	Task           Task
}

// WrapJob returns the service that runs j's tool inside the transfer wrapper.
func WrapJob(j Job) (ServiceSpec, error) {
	if j.RawDir == "" || !path.IsAbs(j.RawDir) || strings.ContainsAny(j.RawDir, "'\n") || path.Clean(j.RawDir) == "/" {
		return ServiceSpec{}, fmt.Errorf("job %s: RawDir %q: want an absolute folder other than /", j.Spec.Name, j.RawDir)
	}
	spec := j.Spec
	cmd := append(append([]string{}, spec.Entrypoint...), spec.Args...)
	if len(cmd) == 0 {
		return ServiceSpec{}, fmt.Errorf("job %s: no program to run", spec.Name)
	}
	// A one-task replicated service that is never restarted runs exactly like a replicated-job,
	// but Docker 20.10 orphans a job's task and container when the job service is removed
	// (moby/moby#42789, #44312; fixed in Moby 24): the containers stayed on the nodes, and
	// with them the overlay network could not be removed. A replicated service's task and
	// container go with it.
	spec.Mode = ModeReplicated
	spec.RestartNone = true
	spec.Entrypoint = []string{"/bin/sh"}
	spec.Args = append([]string{"-c", wrapperScript(j.RawDir), "protobench-transfer"}, cmd...)
	spec.Mounts = append(append([]Mount{}, spec.Mounts...), Mount{Target: path.Clean(j.RawDir)})
	spec.LogDriver, spec.LogOpts = jobLogDriver, jobLogOpts
	return spec, nil
}

// InputMount puts config, which holds input name, at its place in RawDir, owned by the job's
// user (spec is the wrapped job, WrapJob's).
func (j Job) InputMount(spec ServiceSpec, name, config string) ConfigMount {
	uid, gid, _ := strings.Cut(spec.User, ":")
	return ConfigMount{Config: config, Target: path.Join(j.RawDir, name), UID: uid, GID: gid}
}

// RunJob runs j to its end on the swarm and returns what its tool printed, its exit status and
// the files it wrote. err is set when the tool's result could not be had (the task was rejected,
// ctx ended, the transfer is missing); the job's service and configs are removed in every case.
func (c *Client) RunJob(ctx context.Context, j Job) (JobResult, error) {
	res := JobResult{ExitCode: -1}
	spec, err := WrapJob(j)
	if err != nil {
		return res, err
	}
	var configs []string
	defer func() {
		cctx := context.WithoutCancel(ctx)
		_ = c.RemoveService(cctx, spec.Name)
		_ = c.RemoveConfigs(cctx, configs...)
	}()
	for name, data := range j.Inputs {
		cfg, err := c.CreateConfig(ctx, "in-"+name, data)
		if err != nil {
			return res, err
		}
		configs = append(configs, cfg)
		spec.Configs = append(spec.Configs, j.InputMount(spec, name, cfg))
	}
	if _, err := c.CreateService(ctx, spec); err != nil {
		return res, err
	}
	task, err := c.WaitTask(ctx, spec.Name, Task.Terminal)
	res.Task = task
	if err != nil {
		return res, err
	}
	if task.State != "complete" && task.State != "failed" {
		// Rejected (no such image on the node, a mount source missing) or shut down: the tool
		// never ran to an end.
		return res, fmt.Errorf("job %s: task %s %s: %s", spec.Name, shortID(task.ID), task.State, taskReason(task))
	}
	stdout, stderr, err := c.Logs(ctx, spec.Name)
	if err != nil {
		return res, err
	}
	if err := unpackTransfer(stdout, j.RawDir, j.Inputs, &res); err != nil {
		return res, fmt.Errorf("job %s (task %s, exit %d): %w; the wrapper's stderr: %s", spec.Name, shortID(task.ID), task.ExitCode, err, lastLines(stderr, 3))
	}
	return res, nil
}

// Transfer caps. The largest legitimate output is ghz's JSON report on stdout: it keeps per-call
// details for at most 1,000,000 calls at about 200 bytes each, so about 200 MB (see
// internal/tool/ghz). Every other output is far smaller: k6's summary and our generator's
// results and histograms are kilobytes to a few megabytes, and a stderr is a few lines. So one
// entry may hold 256 MiB and the whole transfer 512 MiB, unpacked; the log that carries it may
// be 768 MiB (a plain transfer's base64 is a third larger, and each 76-character line gains a
// newline). Anything above these is not a tool's output, and stops the step with an error
// instead of filling the manager's memory or disk.
const (
	MaxTransferFile  = 256 << 20
	MaxTransferTotal = 512 << 20
	MaxTransferLog   = 768 << 20
)

// transferLimits are the caps unpackTransfer applies; tests shrink them.
type transferLimits struct{ file, total int64 }

var defaultTransferLimits = transferLimits{file: MaxTransferFile, total: MaxTransferTotal}

// unpackTransfer reads the marked base64 tar out of a job's log and fills res. rawDir is the
// job's RawDir: the tool's files are the tar's entries under it, and each must name a file
// inside it (filepath.IsLocal), since the engine writes them into the results' raw/ folder.
func unpackTransfer(log []byte, rawDir string, inputs map[string][]byte, res *JobResult) error {
	return unpackTransferLimited(log, rawDir, inputs, res, defaultTransferLimits)
}

func unpackTransferLimited(log []byte, rawDir string, inputs map[string][]byte, res *JobResult, lim transferLimits) error {
	archive, err := decodeTransfer(log)
	if err != nil {
		return err
	}
	rawPrefix := strings.TrimPrefix(path.Clean(rawDir), "/") + "/"
	tr := tar.NewReader(archive)
	files := map[string][]byte{}
	var total int64
	var sawExit bool
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("transfer: %w", err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if h.Size > lim.file {
			return fmt.Errorf("transfer: %s is %d bytes, over the %d bytes one file may hold; nothing was kept", h.Name, h.Size, lim.file)
		}
		if total += h.Size; total > lim.total {
			return fmt.Errorf("transfer: the files add up to more than %d bytes (at %s); nothing was kept", lim.total, h.Name)
		}
		// The header's size bounds what tar.Reader returns; the limit guards that, too.
		b, err := io.ReadAll(io.LimitReader(tr, lim.file+1))
		if err != nil {
			return fmt.Errorf("transfer: %s: %w", h.Name, err)
		}
		if int64(len(b)) > lim.file {
			return fmt.Errorf("transfer: %s holds more than %d bytes; nothing was kept", h.Name, lim.file)
		}
		rel, isRaw := strings.CutPrefix(h.Name, rawPrefix)
		if !isRaw {
			if sawExit, err = readStatusEntry(h.Name, b, res, sawExit); err != nil {
				return err
			}
			continue
		}
		// A name the engine would write outside raw/ (../x, /etc/x, or raw/ itself) is refused,
		// not cleaned into something else.
		if !filepath.IsLocal(rel) || path.Clean(rel) != strings.TrimSuffix(rel, "/") {
			return fmt.Errorf("transfer: file name %q is not a plain name inside %s; nothing was kept", rel, rawDir)
		}
		if _, isInput := inputs[rel]; isInput {
			continue
		}
		files[rel] = b
	}
	if !sawExit {
		return errors.New("transfer: no exit status")
	}
	res.Files = files
	return nil
}

// decodeTransfer finds the transfer between its markers in a job's log and returns its tar.
func decodeTransfer(log []byte) (io.Reader, error) {
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	var b64 strings.Builder
	state := 0 // 0 before, 1 inside, 2 after
	gzipped := false
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		switch {
		case state == 0 && (line == transferBegin || line == transferBegin+" gzip"):
			state, gzipped = 1, line != transferBegin
		case state == 1 && line == transferEnd:
			state = 2
		case state == 1:
			b64.WriteString(strings.TrimSpace(line))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	switch state {
	case 0:
		if looksLikeBase64(log) {
			return nil, errors.New("the job's log starts inside a transfer: the log driver dropped its beginning (rotation)")
		}
		return nil, errors.New("no transfer in the job's log (the wrapper did not run to its end)")
	case 1:
		return nil, errors.New("the transfer in the job's log is cut short")
	}
	data, err := base64.StdEncoding.DecodeString(b64.String())
	if err != nil {
		return nil, fmt.Errorf("transfer: %w", err)
	}
	var archive io.Reader = bytes.NewReader(data)
	if gzipped {
		zr, err := gzip.NewReader(archive)
		if err != nil {
			return nil, fmt.Errorf("transfer: %w", err)
		}
		archive = zr
	}
	return archive, nil
}

// readStatusEntry reads one of the wrapper's own entries (stdout, stderr, exit, nofile,
// started, ended) into res; any other name outside RawDir is refused. It returns whether the
// exit status has been seen.
func readStatusEntry(name string, b []byte, res *JobResult, sawExit bool) (bool, error) {
	switch name {
	case "stdout":
		res.Stdout = b
	case "stderr":
		res.Stderr = b
	case "exit":
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return sawExit, fmt.Errorf("transfer: exit status %q", b)
		}
		res.ExitCode, sawExit = n, true
	case "nofile":
		res.Nofile, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	case "started", "ended":
		// seconds.nanoseconds, read apart: a float64 would lose the nanoseconds.
		secS, nsS, _ := strings.Cut(strings.TrimSpace(string(b)), ".")
		sec, err1 := strconv.ParseInt(secS, 10, 64)
		ns, err2 := strconv.ParseInt(nsS, 10, 64)
		if err1 != nil || err2 != nil || len(nsS) != 9 {
			return sawExit, nil // a date without %N: the caller's own clock then stands
		}
		if name == "started" {
			res.Started = time.Unix(sec, ns)
		} else {
			res.Ended = time.Unix(sec, ns)
		}
	default:
		return sawExit, fmt.Errorf("transfer: entry %q is neither the wrapper's nor under the job's RawDir; nothing was kept", name)
	}
	return sawExit, nil
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	s := strings.TrimSpace(strings.Join(lines, " | "))
	if s == "" {
		return "(none)"
	}
	return s
}

// looksLikeBase64 says whether a log's first line is a full line of the transfer's base64, as
// it is when rotation dropped the begin marker.
func looksLikeBase64(log []byte) bool {
	first, _, _ := bytes.Cut(log, []byte("\n"))
	first = bytes.TrimRight(first, "\r")
	if len(first) != 76 {
		return false
	}
	_, err := base64.StdEncoding.DecodeString(string(first))
	return err == nil
}
