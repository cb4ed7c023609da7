package runner

import (
	"fmt"
	"time"

	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/scenario"
)

// processStart is when this process started, near enough: the first answer's wait counts from
// it (images, stack, the headline's runs), which is what a new user waits.
var processStart = time.Now()

// answerIfHeadlineDone prints the answer once run i, the last of the headline step's runs, has
// finished (the plan runs that step first): the ratio with its interval, how long the explaining
// steps will take, and that Ctrl-C now leaves a complete folder of what ran. It prints once.
func (s *session) answerIfHeadlineDone(i int) {
	h := s.plan.Headline
	if s.answered || h == "" || s.plan.Runs[i].BaseStep != h {
		return
	}
	rest := s.plan.Runs[i+1:]
	for _, r := range rest {
		if r.BaseStep == h {
			return
		}
	}
	s.answered = true
	line := results.AnswerLine(s.plan, s.recs)
	if line == "" {
		return
	}
	w := s.opts.Stdout
	fmt.Fprintf(w, "\nprotobench: %s\n", line)
	fmt.Fprintf(w, "protobench: the first answer came %s after the command started\n", time.Since(processStart).Round(time.Second))
	if len(rest) == 0 {
		return
	}
	fmt.Fprintf(w, "protobench: the explaining steps (%d runs) take about %s more; Ctrl-C now stops them and leaves a complete folder of what ran (results.json, summary.md, report.html) in %s\n\n",
		len(rest), remaining(rest).Round(time.Second), s.dir)
}

// remaining is the planned time of runs.
func remaining(runs []scenario.Run) time.Duration {
	var d time.Duration
	for _, r := range runs {
		d += scenario.StartOverhead + r.Warmup + r.Duration + r.Cooldown
	}
	return d
}
