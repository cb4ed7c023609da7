package runner

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/engine"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/servercount"
	"github.com/protobench/protobench/internal/targets"
	"github.com/protobench/protobench/internal/tool"
)

// serverCount is a run's reading of its server's own request counter, taken right before the
// tool starts and completed right after it exits (servercount says why those instants).
type serverCount struct {
	url         string
	before, run servercount.Counts
	// warmup is the tool's own warm-up inside its run (0 for a tool warmed up apart).
	warmup time.Duration
	// notChecked says why the run is not checked; empty when it is.
	notChecked string
}

// startServerCount reads the server's counter before the tool starts: the server is still,
// its warm-up container (for a tool without a warm-up of its own) having exited.
func (s *stepRunner) startServerCount(ctx context.Context, ep endpoint, r scenario.Run, inv tool.Invocation) *serverCount {
	c := &serverCount{warmup: inv.Warmup}
	t, ours := targets.Lookup(r.Target)
	reach, reachable := s.eng.(engine.ServerReacher)
	switch {
	case r.Custom != nil || !ours:
		c.notChecked = "not checked: a custom target exports no " + servercount.Metric
	case r.Method == contract.MethodEchoStream || !requestReply(t, r.Pattern):
		c.notChecked = "not checked: the server counts a stream or a one-way pattern's messages, not requests"
	case !reachable:
		c.notChecked = "not checked: the runner cannot reach the server's /metrics on this engine"
	}
	if c.notChecked != "" {
		return c
	}
	ip, err := reach.ServiceAddress(ctx, ep.Service)
	if err != nil {
		c.notChecked = fmt.Sprintf("not checked: the server's address: %v", err)
		return c
	}
	c.url = "http://" + ip + ":" + strconv.Itoa(t.MetricsPort) + "/metrics"
	if c.before, err = servercount.Read(ctx, c.url); err != nil {
		c.notChecked = fmt.Sprintf("not checked: %v", err)
	}
	return c
}

// requestReply says whether a target's pattern answers each request: one that carries the
// unary methods does (ZeroMQ's dealer and req); push (Echo only) and sub (Publish) do not.
func requestReply(t targets.Target, pattern string) bool {
	if pattern == "" {
		return true
	}
	for _, p := range t.Patterns {
		if p.Name == pattern {
			return slices.Contains(p.Methods, contract.MethodGetUser)
		}
	}
	return false
}

// read takes the counter again once the tool has exited.
func (c *serverCount) read(ctx context.Context) {
	if c.notChecked != "" {
		return
	}
	after, err := servercount.Read(ctx, c.url)
	if err != nil {
		c.notChecked = fmt.Sprintf("not checked: %v", err)
		return
	}
	c.run = after.Sub(c.before)
}

// apply stores the server's own count in the record, once the tool's output is in it, and
// applies the count-mismatch rule.
func (c *serverCount) apply(rec *record.Record) {
	if c.notChecked != "" {
		rec.ServerCount = c.notChecked
		return
	}
	applyServerCount(rec, c.run, c.warmup)
}

// applyServerCount stores what the server answered during the tool's whole run (run), less the
// tool's own warm-up where the tool has one and reports it, and flags count-mismatch.
func applyServerCount(rec *record.Record, run servercount.Counts, ownWarmup time.Duration) {
	inFlight := int64(rec.Connections) * int64(max(rec.Concurrency, 1))
	if rec.InFlight > 0 {
		inFlight = max(inFlight, int64(rec.InFlight))
	}
	check := servercount.Check{ToolOK: rec.Successes(), ServerOK: run.OK, InFlight: inFlight}
	rec.ServerOK, rec.ServerErrors = run.OK, run.Errors
	rec.ServerCount = "exact: read from the server's /metrics before and after the tool"
	switch {
	case ownWarmup <= 0:
	case rec.WarmupRequests > 0:
		// The server's count is set against the tool's whole run; the record keeps the
		// measured window's part.
		warmOK := rec.WarmupRequests - rec.WarmupErrors
		check.ToolOK += warmOK
		rec.ServerOK, rec.ServerErrors = max(run.OK-warmOK, 0), max(run.Errors-rec.WarmupErrors, 0)
		rec.ServerCount += fmt.Sprintf(", less the tool's own warm-up (%d requests, as it reports them)", rec.WarmupRequests)
	default:
		check.OneWay = true
		rec.ServerCount += ", its own warm-up included (the tool reports no count of it): checked one way only, a tool counting more successes than the server answered"
	}
	if bad, why := servercount.Mismatch(check); bad {
		rec.AddFlag(record.FlagCountMismatch)
		rec.ServerCount += "; count-mismatch: " + why
	}
}
