// Package engine runs a scenario's containers: the long-lived observability stack (Stack) and
// each run's fresh server and load tool (Runs). Compose (this machine), ComposeFast (the same
// with each run's containers through the docker CLI), Swarm (a Docker Swarm), and DryCompose and
// DrySwarm (print what those would do) are each a type of their own implementing both, and say
// what they can do as data (Capabilities) rather than by their name.
package engine

import (
	"context"
	"time"

	"github.com/protobench/protobench/internal/images"
	"github.com/protobench/protobench/internal/record"
)

// Names of the engines, as --engine takes them and records and run.json carry them.
const (
	NameCompose = "compose"
	NameSwarm   = "swarm"
)

// Engine is what the runner needs from whatever runs the containers: the long-lived stack and
// each run's own containers. The two halves are separate interfaces so that the code that runs
// one step (the runner's stepRunner) holds only the per-run half.
type Engine interface {
	Stack
	Runs
}

// Stack is the long-lived side of an engine: what it can do, the images, the observability
// stack from its start to its teardown, and whether the daemon still answers.
type Stack interface {
	// Capabilities is what the engine can do; it does not change during a run.
	Capabilities() Capabilities
	// Prepare makes the images of set available where the engine runs containers; it may
	// rewrite the image references in imageEnv (a swarm's other nodes pull from a registry).
	Prepare(ctx context.Context, set images.Set, imageEnv map[string]string) error
	// Up starts long-lived services. env is the run-wide compose environment (image refs, the
	// raw folder, the observability cpuset); later calls add their own on top of it.
	Up(ctx context.Context, env map[string]string, services ...string) error
	// Locate finds Prometheus (and Grafana, "" when it does not run) as the host reaches them.
	Locate(ctx context.Context) (prometheus, grafana string, err error)
	// PlaceStack moves the running containers of services onto cpuset; only an engine whose
	// Capabilities say PinsCores is asked to.
	PlaceStack(ctx context.Context, services []string, cpuset string) error
	// Describe is the engine's part of run.json, read at the end of a run.
	Describe(ctx context.Context) Description
	// Lost says why the daemon is considered gone, or nil while it answers.
	Lost() error

	// Down removes the long-lived services gracefully; ForceRemove removes everything of the
	// project at once; ProjectContainers lists what is there. The runner's teardown calls them.
	Down(ctx context.Context) error
	ForceRemove(ctx context.Context) error
	ProjectContainers(ctx context.Context) ([]string, error)
}

// Runs is the per-run side of an engine: a run's fresh server, its one-off tool containers, the
// server's state and log after the run, and what the engine knows of where the run ran.
type Runs interface {
	// Recreate starts a fresh container of service with extra environment for the compose file.
	Recreate(ctx context.Context, service string, env map[string]string) error
	WaitHealthy(ctx context.Context, service string, timeout time.Duration) error
	// ContainerID is the ID of service's current container.
	ContainerID(ctx context.Context, service string) (string, error)
	// Run runs a one-off container and returns its output and exit code.
	Run(ctx context.Context, spec OneOff) (stdout, stderr []byte, exitCode int, err error)
	Remove(ctx context.Context, service string) error
	// Inspect and Logs read a container after its run, to diagnose a server that died.
	Inspect(ctx context.Context, id string) (ContainerState, error)
	Logs(ctx context.Context, id string) ([]byte, error)
	// Annotate adds what the engine knows of the run just finished to its record (which engine,
	// where it ran), and forgets it for the next run.
	Annotate(rec *record.Record)
}

// ContainerState is what an engine knows of a container after it ran: enough to tell an
// out-of-memory kill or a crash from a clean stop.
type ContainerState struct {
	ID           string
	Status       string // running, exited, dead, ...
	OOMKilled    bool
	ExitCode     int
	RestartCount int
	MemoryLimit  int64 // bytes; 0 when uncapped
}

// Capabilities are what an engine can do, as data the runner reads instead of the engine's name.
type Capabilities struct {
	// Name is what records and run.json say ran the containers (NameCompose or NameSwarm).
	Name string
	// PinsCores says containers get the layout's cpusets, so the observability stack can be
	// moved between cores while a run goes on (PlaceStack).
	PinsCores bool
	// HostCores says the layout's cpusets are cores of this host, so that the host's speed
	// index and per-core time describe the server's and the tools' cores.
	HostCores bool
	// ClientNodes is how many nodes the load tools run on.
	ClientNodes int
	// Grafana says the engine can run Grafana beside the observability stack.
	Grafana bool
	// CleanupHint, when set, says what a teardown that could not finish leaves behind and how
	// to remove it, in place of the compose wording.
	CleanupHint string
}

// Description is an engine's part of run.json.
type Description struct {
	// Detail is the engine's own account of where the run ran, marshalled to JSON as it is
	// (the swarm engine's nodes, network and placement); nil when the engine has none.
	Detail any
}

// OneOff is a run-once tool container.
type OneOff struct {
	Service    string
	Name       string // container name, fixed so Prometheus can find live metrics by it
	Entrypoint string // empty: the image's own
	Env        map[string]string
	Args       []string
	// Limit bounds the whole run: warm-up + duration + a margin. A tool still running then
	// (hung, paused) is stopped and its container removed.
	Limit time.Duration
	// Inputs are the files under raw/ the tool reads (tool.Adapter.InputFiles), by base name:
	// an engine whose tools cannot mount raw/ (swarm) hands them over itself.
	Inputs []string
	// Parts, when set, divides the tool's load among n generators (several client nodes of a
	// swarm): each part's arguments, every part given start as its shared start (the engine
	// picks it late enough for every part's task to be up), and merge, which turns the parts'
	// files (by base name) into the files one generator would have written. nil: the tool's
	// load cannot be split.
	Parts func(n int, start time.Time) (args [][]string, merge func(files map[string][]byte) (map[string][]byte, error), err error)
	// LiveMetrics is how the tool's own metrics reach Prometheus during the run
	// (tool.Capabilities.LiveMetrics): an engine that must point Prometheus at the tool (swarm's
	// service discovery) does so for tool.LiveScrape.
	LiveMetrics string
	// Window, when set, receives when the tool itself started and ended, from an engine whose
	// Run takes noticeably longer than the tool (a swarm job is scheduled, then hands its
	// output back); left zero, the caller's clock around Run stands.
	Window *[2]time.Time
}

// Tracker is told about the containers an engine starts, so that a teardown that cannot finish
// can say exactly what it left behind. nil tracks nothing.
type Tracker interface {
	// Arm says containers are about to exist: from now on the teardown has work to do.
	Arm()
	// Note records a container (or service) the run started, and what it is.
	Note(id, what string)
}

// Time limits of the docker and compose calls a run makes. A healthy daemon answers each in
// well under a tenth of these.
const (
	CallTimeout        = 30 * time.Second // inspect, ps, logs, port
	upTimeout          = 3 * time.Minute  // the observability stack: networks, volumes, containers
	recreateTimeout    = 2 * time.Minute  // a server container
	removeTimeout      = 60 * time.Second // a server's stop grace is 15 s
	daemonCheckTimeout = 10 * time.Second
)

// rawMountPath is where tools find raw/ in their containers.
const rawMountPath = "/raw"

// Each engine implements the whole interface: one type per engine and variant, chosen by its
// constructor (NewCompose picks Compose or ComposeFast; the runner picks a dry run's type).
var (
	_ Engine = (*Compose)(nil)
	_ Engine = (*ComposeFast)(nil)
	_ Engine = (*Swarm)(nil)
	_ Engine = (*DryCompose)(nil)
	_ Engine = (*DrySwarm)(nil)
)
