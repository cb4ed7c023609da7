package compare

import (
	"github.com/protobench/protobench/internal/parity"
	"github.com/protobench/protobench/internal/record"
)

// unequalWork is a row's "unequal-work: <what differs>" where the baseline's runs of the step,
// target and tool did other work than the other folder's (internal/parity): a change between
// them would measure that difference, not the code. "" where they did the same work.
func (c *Comparison) unequalWork(base, other []int, k key) string {
	return parity.Unequal(c.recordsOf(base, k), c.recordsOf(other, k))
}

// recordsOf is the records of the step, target and tool in every folder of one side.
func (c *Comparison) recordsOf(folders []int, k key) []record.Record {
	var out []record.Record
	for _, fi := range folders {
		for _, r := range c.Folders[fi].Records {
			if r.Step == k.step && r.Target == k.target && r.Tool == k.tool {
				out = append(out, r)
			}
		}
	}
	return out
}
