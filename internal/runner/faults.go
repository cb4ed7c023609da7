package runner

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/protobench/protobench/internal/engine"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/scenario"
)

// timedOut tells a tool run that hit its own limit from one the caller cancelled.
func timedOut(ctx context.Context, err error) bool {
	return ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded)
}

// diagnoseServer inspects the run's server container after the run: an OOM kill, an exit or a
// restart becomes the record's error (before any other) and FlagServerFault; the measured
// figures stay. The server's log goes to raw/ in every case.
func (s *stepRunner) diagnoseServer(ctx context.Context, rec *record.Record, r scenario.Run, srv serverRef) {
	ctx = context.WithoutCancel(ctx)
	if logs, err := s.eng.Logs(ctx, srv.id); err == nil || len(logs) > 0 {
		name := filepath.Join("raw", r.ID+".server."+srv.service+".log")
		if err := results.WriteFileAtomic(filepath.Join(s.resultDir, name), logs); err != nil {
			s.log("warning: keeping the server log: %v", err)
		} else {
			rec.RawFiles = append(rec.RawFiles, name)
		}
	}
	st, err := s.eng.Inspect(ctx, srv.id)
	if err != nil {
		s.log("warning: inspecting %s after %s: %v", srv.service, r.ID, err)
		return
	}
	fault := serverFault(st, srv.service)
	if fault == "" {
		return
	}
	if rec.Error != "" {
		fault += "; " + rec.Error
	}
	rec.Error = fault
	rec.AddFlag(FlagServerFault)
}

// serverFault describes what went wrong with a server container, or "" when nothing did.
func serverFault(st engine.ContainerState, service string) string {
	switch {
	case st.OOMKilled:
		if st.MemoryLimit > 0 {
			return fmt.Sprintf("server %s OOM-killed at its %s cap", service, formatMiB(st.MemoryLimit))
		}
		return fmt.Sprintf("server %s OOM-killed", service)
	case st.Status == "exited" || st.Status == "dead":
		return fmt.Sprintf("server %s exited with code %d during the run", service, st.ExitCode)
	case st.RestartCount > 0:
		return fmt.Sprintf("server %s restarted %d times during the run", service, st.RestartCount)
	}
	return ""
}

func formatMiB(b int64) string {
	if b%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", b>>20)
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}
