package runner

import (
	"time"

	"github.com/protobench/protobench/internal/tool"
)

// splitter is how a step's load is shared by several client nodes (OneOff.Parts), for a tool
// that declares its results merge without loss (tool.Capabilities.Parts: protobench's own
// generator merges full histograms): tool.Split divides the rate and connections, every part
// is given the engine's shared start (so that the parts measure one window), and the tool's
// MergedFiles joins the parts' files. Other tools run on one client node, and the record says
// so.
func splitter(a tool.Adapter, inv tool.Invocation) func(int, time.Time) ([][]string, func(map[string][]byte) (map[string][]byte, error), error) {
	merger := a.Capabilities().Parts
	if merger == nil {
		return nil
	}
	return func(n int, start time.Time) ([][]string, func(map[string][]byte) (map[string][]byte, error), error) {
		if err := tool.CheckSplit(inv, n); err != nil {
			return nil, nil, err
		}
		parts := tool.Split(inv, n)
		args := make([][]string, len(parts))
		for k, p := range parts {
			p.StartAt = start
			args[k] = a.Args(p)
		}
		merge := func(files map[string][]byte) (map[string][]byte, error) {
			return merger.MergedFiles(inv, n, tool.Raw{Files: files})
		}
		return args, merge, nil
	}
}
