package servercount

import "fmt"

// Check is what the count-mismatch rule sets side by side for one run.
type Check struct {
	// ToolOK is the tool's successful requests over what ServerOK covers.
	ToolOK, ServerOK int64
	// InFlight is the most requests the tool can have had in flight at once: a request in
	// flight at an edge of the window may be counted by one side and not the other.
	InFlight int64
	// OneWay says ServerOK covers more than the tool's count does (a warm-up inside the tool's
	// run that it reports no count of): then only a tool counting more successes than the
	// server answered OK can be caught.
	OneWay bool
}

// Mismatch applies the rule: the tool's successes may differ from the server's OK answers by
// at most the requests in flight (in one direction only when OneWay). why says by how much
// they differ, in words, when they do.
func Mismatch(c Check) (mismatch bool, why string) {
	d := c.ToolOK - c.ServerOK
	switch {
	case d > c.InFlight:
		return true, fmt.Sprintf("the tool counted %d successes, the server answered %d OK: %d more than the %d that can be in flight", c.ToolOK, c.ServerOK, d, c.InFlight)
	case !c.OneWay && -d > c.InFlight:
		return true, fmt.Sprintf("the tool counted %d successes, the server answered %d OK: %d fewer, beyond the %d that can be in flight", c.ToolOK, c.ServerOK, -d, c.InFlight)
	}
	return false, ""
}
