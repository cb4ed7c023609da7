package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/protobench/protobench/internal/compose"
)

// cleanupDeadline bounds the whole teardown, graceful and forced parts together: a hung daemon
// must not keep the user waiting at Ctrl-C.
const cleanupDeadline = 30 * time.Second

// hurriedRemoveTimeout bounds the forced removal after a second signal.
const hurriedRemoveTimeout = 5 * time.Second

// forceReserve is the part of cleanupDeadline kept for the forced removal: a graceful down that
// runs out of time must leave the forced one time to work, or it would fail at once.
const forceReserve = 10 * time.Second

// remover is what teardown needs from the compose client.
type remover interface {
	Down(ctx context.Context) error
	ForceRemove(ctx context.Context) error
	ProjectContainers(ctx context.Context) ([]string, error)
}

// teardown removes every container of our compose project. It is armed before `up`, so a stack
// that only half started is removed too, and it remembers the containers it has seen so that,
// when docker stops answering, it can say exactly what it left behind.
type teardown struct {
	c       remover
	project string
	docker  string
	log     io.Writer

	// budget bounds the whole teardown and reserve is the part of it kept for the forced
	// removal (cleanupDeadline and forceReserve; tests shorten them).
	budget, reserve time.Duration

	// hint, when set, replaces the compose wording of what is left and how to remove it (a
	// swarm run leaves services, a network and configs).
	hint string

	mu    sync.Mutex
	seen  map[string]string // container ID -> what it is
	armed bool
}

func newTeardown(c remover, project, docker string, log io.Writer) *teardown {
	return &teardown{c: c, project: project, docker: docker, log: log, seen: map[string]string{},
		budget: cleanupDeadline, reserve: forceReserve}
}

func (t *teardown) arm() {
	t.mu.Lock()
	t.armed = true
	t.mu.Unlock()
}

// Arm and Note are the engine's view of the teardown (engine.Tracker).
func (t *teardown) Arm()                 { t.arm() }
func (t *teardown) Note(id, what string) { t.note(id, what) }

// note records a container the run started.
func (t *teardown) note(id, what string) {
	if t == nil || id == "" {
		return
	}
	t.mu.Lock()
	t.seen[id] = what
	t.mu.Unlock()
}

// run removes the project's containers: `compose down` first, unless hurry is already done (a
// second signal), then `docker rm -f` by the project label. It returns false, after printing what
// is left and how to remove it, when it could not finish within cleanupDeadline.
func (t *teardown) run(hurry context.Context) bool {
	t.mu.Lock()
	armed := t.armed
	t.mu.Unlock()
	if !armed {
		return true
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(hurry), t.budget)
	defer cancel()
	var lastErr error
	if hurry.Err() == nil {
		graceful, stop := context.WithTimeout(ctx, t.budget-t.reserve)
		go func() {
			select {
			case <-hurry.Done():
				stop()
			case <-graceful.Done():
			}
		}()
		lastErr = t.c.Down(graceful)
		stop()
		if lastErr == nil {
			return true
		}
		if hurry.Err() == nil && ctx.Err() == nil {
			fmt.Fprintf(t.log, "protobench: warning: compose down: %v; removing the containers by label\n", lastErr)
		}
	}
	force := ctx
	if hurry.Err() != nil {
		var cancelForce context.CancelFunc
		force, cancelForce = context.WithTimeout(ctx, hurriedRemoveTimeout)
		defer cancelForce()
	}
	if err := t.c.ForceRemove(force); err == nil {
		return true
	} else {
		lastErr = err
	}
	if force.Err() != nil {
		// The command line of a killed docker call says less than this.
		lastErr = errors.New("docker did not answer in time")
	}
	t.leftBehind(lastErr)
	return false
}

// leftBehind prints what the cleanup could not remove and the command that removes it.
func (t *teardown) leftBehind(cause error) {
	t.mu.Lock()
	var items []string
	for id, what := range t.seen {
		items = append(items, fmt.Sprintf("  %.12s  %s", id, what))
	}
	t.mu.Unlock()
	sort.Strings(items)
	reason := "docker did not answer"
	if cause != nil {
		reason = firstLineOf(cause.Error())
	}
	if t.hint != "" {
		fmt.Fprintf(t.log, "protobench: cleanup stopped after at most %s (%s); left behind: %s\n", cleanupDeadline, reason, t.hint)
		return
	}
	fmt.Fprintf(t.log, "protobench: cleanup stopped after at most %s (%s); left behind: the containers of compose project %q",
		cleanupDeadline, reason, t.project)
	if len(items) > 0 {
		fmt.Fprintf(t.log, ", among them:\n%s\n", strings.Join(items, "\n"))
	} else {
		fmt.Fprintln(t.log, ".")
	}
	fmt.Fprintf(t.log, "protobench: and its network %s_default. Remove them with:\n  %s\n",
		t.project, compose.CleanupHint(t.docker, t.project))
}

func firstLineOf(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
