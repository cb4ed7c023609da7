//go:build !race

package loadcmd

const raceEnabled = false
