package engine

import (
	"context"
	"fmt"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/swarm/nodeinfo"
	"strings"
)

// Annotate adds where a run ran to its record, and resets for the next run.
func (s *Swarm) Annotate(rec *record.Record) {
	s.mu.Lock()
	last := s.last
	s.last = runPlacement{}
	s.mu.Unlock()
	rec.Engine = NameSwarm
	if s.place.single {
		rec.Placement = "single-node"
		rec.AddFlag(record.FlagSharedCores)
		rec.Notes = appendNote(rec.Notes, "single-node swarm: server and load tool share the node's cores (swarm has no cpuset; only the CPU quotas separate them)")
	} else {
		rec.Placement = fmt.Sprintf("server=%s client=%s", last.server, strings.Join(last.clients, ","))
		if last.server != "" && contains(last.clients, last.server) {
			rec.AddFlag(record.FlagSharedCores)
		}
		rec.Notes = appendNote(rec.Notes, "swarm has no cpuset: the CPU quotas (cpus) are the only caps")
	}
	for _, n := range last.notes {
		rec.Notes = appendNote(rec.Notes, n)
	}
	for i, p := range rec.ClientParts {
		if p.Part >= 1 && p.Part <= len(last.partNodes) {
			rec.ClientParts[i].Node = last.partNodes[p.Part-1]
		}
	}
	rec.ServerGOMAXPROCSSet = last.gomaxprocs
}

func appendNote(notes []string, n string) []string {
	if contains(notes, n) {
		return notes
	}
	return append(notes, n)
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// SwarmInfo is run.json's account of the swarm a run used (the swarm engine's
// Description.Detail).
type SwarmInfo struct {
	nodeinfo.Swarm
	Placement string `json:"placement"` // single-node, or the nodes of each role
	// TaskNofile is the open-files limit a tool's task had (the compose file's nofile ulimit,
	// which `docker service create --ulimit` passes on; the daemon's default where a CLI lacks
	// that flag).
	TaskNofile int      `json:"task_nofile,omitempty"`
	Notes      []string `json:"notes,omitempty"`
}

// Describe fills run.json's swarm section. The nodes' kernel and CPU model come from
// node-exporter through Prometheus; when that fails, the rest is still recorded.
func (s *Swarm) Describe(ctx context.Context) Description {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CallTimeout)
	defer cancel()
	sw, err := nodeinfo.Collect(ctx, nodeinfo.Options{Docker: s.calls.docker, PrometheusURL: s.promURL, Network: s.sw.NetworkName()})
	si := &SwarmInfo{Swarm: sw, Placement: s.place.describe()}
	if err != nil {
		si.Notes = append(si.Notes, "node details incomplete: "+err.Error())
	}
	s.mu.Lock()
	si.TaskNofile = s.nofile
	s.mu.Unlock()
	si.Notes = append(si.Notes, "swarm services have no cpuset: client and server are separated by CPU quotas only, and by nodes when they are labelled apart")
	if si.TaskNofile > 0 && si.TaskNofile < 16384 {
		si.Notes = append(si.Notes, fmt.Sprintf("tool tasks could open only %d files: fewer than the 10,000 connections of the capacity test need", si.TaskNofile))
	}
	return Description{Detail: si}
}
