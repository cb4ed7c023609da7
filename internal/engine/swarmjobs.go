package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/swarm"
	"github.com/protobench/protobench/internal/tool"
)

// Run runs a tool as a run-once job (swarm.RunJob) on a client node, or, when several client nodes share a
// step that can be split, one job per client node with its part of the load; the parts' files
// are merged into the step's. The jobs' outputs are written into raw/ as a compose run's are.
func (s *Swarm) Run(ctx context.Context, o OneOff) ([]byte, []byte, int, error) {
	env := s.calls.with(o.Env)
	var stdout, stderr []byte
	code := -1
	limit := o.Limit
	if o.Parts != nil {
		limit += sharedStartLead // a split's parts wait for their shared start (toolJobs)
	}
	err := s.calls.bounded(ctx, limit, func(ctx context.Context) error {
		jobs, merge, notes, err := s.toolJobs(ctx, o, env)
		if err != nil {
			return err
		}
		for _, j := range jobs {
			s.calls.note(j.Spec.Name, "load tool "+o.Service)
		}
		res := make([]swarm.JobResult, len(jobs))
		errs := make([]error, len(jobs))
		var wg sync.WaitGroup
		for k := range jobs {
			wg.Add(1)
			go func(k int) {
				defer wg.Done()
				res[k], errs[k] = s.sw.RunJob(ctx, jobs[k])
			}(k)
		}
		wg.Wait()
		var files map[string][]byte
		var hosts []string
		stdout, stderr, code, files, hosts = s.gather(res, o.Window)
		var partNodes []string
		if merge != nil {
			// Job k ran part k+1: toolJobs keeps Split's order.
			for _, r := range res {
				partNodes = append(partNodes, s.place.hostname(r.Task.NodeID))
			}
		}
		if err := errors.Join(errs...); err != nil {
			code = -1
			return err
		}
		if merge != nil {
			merged, err := merge(files)
			if err != nil {
				notes = append(notes, "merging the parts failed: "+err.Error())
			}
			for name, b := range merged {
				files[name] = b
			}
		}
		for name, b := range files {
			if err := results.WriteFileAtomic(filepath.Join(s.rawDir, name), b); err != nil {
				return fmt.Errorf("keep %s's %s: %w", o.Service, name, err)
			}
		}
		sort.Strings(hosts)
		s.mu.Lock()
		s.last.clients = hosts
		s.last.partNodes = partNodes
		s.last.notes = append(s.last.notes, notes...)
		s.mu.Unlock()
		return nil
	})
	return stdout, stderr, code, err
}

// gather joins the jobs' results: their output (each part under a heading when there are
// several), the first non-zero exit code, their files by base name, the nodes they ran on, and
// into window, when set, the span from the first job's start to the last one's end.
func (s *Swarm) gather(res []swarm.JobResult, window *[2]time.Time) (stdout, stderr []byte, code int, files map[string][]byte, hosts []string) {
	files = map[string][]byte{}
	for k, r := range res {
		if len(res) > 1 {
			head := fmt.Sprintf("=== part %d of %d on %s ===\n", k+1, len(res), s.place.hostname(r.Task.NodeID))
			stdout = append(append(stdout, head...), r.Stdout...)
			stderr = append(append(stderr, head...), r.Stderr...)
		} else {
			stdout, stderr = r.Stdout, r.Stderr
		}
		if r.ExitCode != 0 && code == 0 {
			code = r.ExitCode
		}
		if r.Task.NodeID != "" {
			hosts = append(hosts, s.place.hostname(r.Task.NodeID))
		}
		for name, b := range r.Files {
			files[filepath.Base(name)] = b
		}
		if window != nil && !r.Started.IsZero() && !r.Ended.IsZero() {
			if window[0].IsZero() || r.Started.Before(window[0]) {
				window[0] = r.Started
			}
			if r.Ended.After(window[1]) {
				window[1] = r.Ended
			}
		}
		if r.Nofile > 0 {
			s.mu.Lock()
			s.nofile = r.Nofile
			s.mu.Unlock()
		}
	}
	return stdout, stderr, code, files, hosts
}

// toolJobs are the run-once jobs of a tool's run: one on a client node, or, when several client
// nodes share a step that can be split, one per client node with its part of the load, whose
// files merge joins. notes say where the load ran when it could not be split.
func (s *Swarm) toolJobs(ctx context.Context, o OneOff, env map[string]string) ([]swarm.Job, func(map[string][]byte) (map[string][]byte, error), []string, error) {
	cs, err := s.c.ServiceSpec(ctx, o.Service, env)
	if err != nil {
		return nil, nil, nil, err
	}
	inputs := map[string][]byte{}
	for _, name := range o.Inputs {
		b, err := os.ReadFile(filepath.Join(s.rawDir, filepath.Base(name)))
		if err != nil {
			return nil, nil, nil, fmt.Errorf("input %s: %w", name, err)
		}
		inputs[filepath.Base(name)] = b
	}
	clients := s.place.clients
	argv := [][]string{o.Args}
	var merge func(map[string][]byte) (map[string][]byte, error)
	var notes []string
	switch {
	case s.place.single:
		clients = []swarm.Node{s.place.self}
	case len(clients) > 1 && o.Parts != nil:
		parts, m, perr := o.Parts(len(clients), time.Now().Add(sharedStartLead))
		if perr != nil {
			notes = append(notes, fmt.Sprintf("ran on one of %d client nodes: %v", len(clients), perr))
			clients = clients[:1]
		} else {
			argv, merge = parts, m
			notes = append(notes, fmt.Sprintf("load split among %d client nodes, histograms merged", len(clients)))
		}
	case len(clients) > 1:
		notes = append(notes, fmt.Sprintf("ran on one of %d client nodes: %s cannot split its load", len(clients), o.Service))
		clients = clients[:1]
	}
	jobs := make([]swarm.Job, len(argv))
	for k := range argv {
		s.mu.Lock()
		s.seq++
		seq := s.seq
		s.mu.Unlock()
		f := s.from(o.Service, env)
		f.Name = fmt.Sprintf("%s-%d", o.Name, seq)
		f.Role = s.place.constraint(swarm.RoleClient)
		f.Scrape, f.ScrapePort = toolScrape(o)
		spec := swarm.Translate(cs, f)
		if len(argv) > 1 {
			spec.Constraints = append(spec.Constraints, "node.id=="+clients[k].ID)
		}
		if o.Entrypoint != "" {
			spec.Entrypoint = []string{o.Entrypoint}
		}
		spec.Args = argv[k]
		spec.NoHealthcheck = true
		s.tls.tool(&spec)
		s.promToolEnv(&spec)
		jobs[k] = swarm.Job{Spec: spec, RawDir: rawMountPath, Inputs: inputs}
	}
	return jobs, merge, notes, nil
}

// scrapedToolPort is where a tool whose live metrics Prometheus scrapes serves them in its
// container: the generator's --metrics-listen (protobenchtool.MetricsListen), and the port the
// compose stack's loadgen job scrapes (compose/prometheus/prometheus.yml).
const scrapedToolPort = 9102

// toolScrape is how a tool job is labelled for Prometheus' service discovery: the scrape job
// (prometheus-swarm.yml's loadgen) and port when the tool declares its live metrics scraped,
// nothing otherwise (remote write, or none). The tool's declaration decides, never its service.
func toolScrape(o OneOff) (job string, port int) {
	if o.LiveMetrics != tool.LiveScrape {
		return "", 0
	}
	return "loadgen", scrapedToolPort
}
