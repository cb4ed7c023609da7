package images

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"time"
)

// progressInterval is how often a long build says what it is doing: a cold build of ghz or k6
// takes minutes, and a silent terminal for that long looks like a hang.
const progressInterval = 10 * time.Second

// buildStep matches the step lines of both builders: the legacy builder's "Step 3/12 : RUN ..."
// and BuildKit's "#7 [builder 3/6] RUN ...".
var buildStep = regexp.MustCompile(`^(?:Step (\d+/\d+) : (.*)|#\d+ \[(?:[^\]]* )?(\d+/\d+)\] (.*))$`)

// progress remembers the last build step seen in a command's output.
type progress struct {
	mu      sync.Mutex
	partial []byte
	step    string
}

func (p *progress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.partial = append(p.partial, b...)
	for {
		i := bytes.IndexByte(p.partial, '\n')
		if i < 0 {
			break
		}
		line := strings.TrimSpace(string(p.partial[:i]))
		p.partial = p.partial[i+1:]
		if m := buildStep.FindStringSubmatch(line); m != nil {
			n, what := m[1], m[2]
			if n == "" {
				n, what = m[3], m[4]
			}
			if len(what) > 60 {
				what = what[:57] + "..."
			}
			p.step = "step " + n + " (" + what + ")"
		}
	}
	// A build that prints one enormous line must not grow the buffer without bound.
	if len(p.partial) > 64<<10 {
		p.partial = p.partial[:0]
	}
	return len(b), nil
}

func (p *progress) current() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.step
}

// reportProgress prints "images: <what>: step 3/12 (RUN ...), 1m10s" to log every
// progressInterval until stop is closed.
func reportProgress(log io.Writer, what string, p *progress, stop <-chan struct{}) {
	start := time.Now()
	t := time.NewTicker(progressInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			step := p.current()
			if step == "" {
				step = "starting"
			}
			fmt.Fprintf(log, "images: %s: %s, %s elapsed\n", what, step, now.Sub(start).Round(time.Second))
		}
	}
}

// commandSubject names what a command is making, for progress lines: the tag of a build or an
// import, else the command itself.
func commandSubject(name string, args []string) string {
	for i, a := range args {
		if (a == "-t" || a == "--tag") && i+1 < len(args) {
			return args[i+1]
		}
	}
	if len(args) > 0 && args[0] == "import" && len(args) > 1 {
		return args[len(args)-1]
	}
	s := name
	if len(args) > 0 {
		s += " " + args[0]
	}
	return s
}
