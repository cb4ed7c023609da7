//go:build race

package loadcmd

// raceEnabled: the race detector slows the in-process server several times over, so tests that
// need a fast server to keep up with a fixed rate cannot hold under it.
const raceEnabled = true
