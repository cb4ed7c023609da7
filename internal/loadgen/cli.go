package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Exit codes of Command.
const (
	ExitOK    = 0
	ExitFail  = 1 // the run failed or ended early: target unreachable or lost, no request done
	ExitUsage = 2 // bad flags or target URL
)

// Command runs `protobench load` (drivers must be registered: see package loadcmd, which imports
// them all). It returns the process exit code.
func Command(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, f, err := ParseArgs(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		if !isFlagPkgError(err) {
			fmt.Fprintf(stderr, "protobench load: %v\n", err)
		}
		return ExitUsage
	}

	report := stdout
	if f.Out == "-" {
		report = stderr
	}
	opts := RunOptions{StartAt: f.StartAt}
	if f.Progress == "on" || (f.Progress == "auto" && isTerminal(stderr)) {
		opts.Progress = func(p Progress) { fmt.Fprintf(stderr, "\r\033[K%s", FormatProgress(p)) }
	}
	var ms *MetricsServer
	if f.MetricsListen != "" {
		opts.Live = NewLiveMetrics(cfg.TargetName, cfg.Method, cfg.Open(), cfg.Labels)
		ms, err = ServeMetrics(f.MetricsListen, opts.Live)
		if err != nil {
			fmt.Fprintf(stderr, "protobench load: --metrics-listen %s: %v\n", f.MetricsListen, err)
			return ExitFail
		}
		defer ms.Close()
	}

	res, runErr := Run(ctx, cfg, opts)
	if opts.Progress != nil {
		fmt.Fprint(stderr, "\r\033[K")
	}
	var ue *UsageError
	if errors.As(runErr, &ue) {
		fmt.Fprintf(stderr, "protobench load: %v\n", ue)
		return ExitUsage
	}
	res.Args = append([]string{"load"}, args...)
	if res.Requests > 0 || runErr == nil {
		WriteText(report, res) // a run that never started has nothing to report but its error
	}
	if f.Out != "" {
		if err := writeJSON(f.Out, stdout, res); err != nil {
			fmt.Fprintf(stderr, "protobench load: --out %s: %v\n", f.Out, err)
			return ExitFail
		}
	}
	if f.Timeseries != "" {
		if err := writeJSON(f.Timeseries, stdout, res.Timeseries()); err != nil {
			fmt.Fprintf(stderr, "protobench load: --timeseries %s: %v\n", f.Timeseries, err)
			return ExitFail
		}
	}
	if ms != nil && f.MetricsLinger > 0 {
		select {
		case <-time.After(f.MetricsLinger):
		case <-ctx.Done():
		}
	}
	if runErr != nil {
		fmt.Fprintf(stderr, "protobench load: %v\n", runErr)
		return ExitFail
	}
	return ExitOK
}

// isFlagPkgError tells the flag package's own parse errors (already printed with the usage by
// the FlagSet) from ours.
func isFlagPkgError(err error) bool {
	s := err.Error()
	return strings.HasPrefix(s, "flag provided but not defined") || strings.HasPrefix(s, "invalid value") ||
		strings.HasPrefix(s, "invalid boolean") || strings.HasPrefix(s, "bad flag syntax") || strings.HasPrefix(s, "flag needs an argument")
}

func writeJSON(path string, stdout io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if path == "-" {
		_, err = stdout.Write(b)
		return err
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func isTerminal(w io.Writer) bool {
	if f, ok := w.(*os.File); ok {
		st, err := f.Stat()
		return err == nil && st.Mode()&os.ModeCharDevice != 0
	}
	return false
}
