package record

// Flags about where a run ran and at what clock: the CPU layout (cputopo) and the clock and
// power of its cores during the window (hostclock).
const (
	// FlagSMTShared marks a run whose server and load tool shared a physical core (SMT
	// siblings, or one CPU): the host had no two cores for them, or --force-layout kept an
	// override that put them there.
	FlagSMTShared = "smt-shared"
	// FlagMixedCores marks a run whose server and load tool sat on cores of different kinds
	// (performance and efficiency) or NUMA nodes: the host had no two of one kind on one node.
	FlagMixedCores = "mixed-cores"
	// FlagClockDrop marks a run during which the server's or the tool's cores ran more than
	// ClockDropFraction below the highest clock the run saw on them (thermal throttling, a
	// power-saving governor, a laptop going on battery).
	FlagClockDrop = "clock-drop"
)

// ClockDropFraction is the drop of a side's lowest clock in a window below the highest the run
// saw on that side's cores from which the run is flagged clock-drop. Turbo wanders by a few
// percent with load; a tenth is beyond that, and about the spread the noisy flag calls noise.
const ClockDropFraction = 0.10

// Clock is the clock of the server's and the tool's cores over the run's window, the governor
// and the power source. A figure the host does not expose is nil, and Note says why: absent,
// never zero.
type Clock struct {
	Server *Frequency `json:"server_mhz,omitempty"`
	Client *Frequency `json:"client_mhz,omitempty"`
	// Governor is the cpufreq governor of the server's cores (performance, powersave,
	// schedutil, …), "" where the host has no cpufreq.
	Governor string `json:"governor,omitempty"`
	// Power is "mains" or "battery", "" where the host has no power supply in sysfs.
	Power string `json:"power,omitempty"`
	// Source is where the frequencies came from (node-exporter, sysfs); Note lists what was
	// not available and why.
	Source string `json:"source,omitempty"`
	Note   string `json:"note,omitempty"`
}

// Frequency is a side's core clock over the window, in MHz: the lowest, mean and highest
// sample over its cores.
type Frequency struct {
	Min  float64 `json:"min"`
	Mean float64 `json:"mean"`
	Max  float64 `json:"max"`
}
