package runner

import (
	"github.com/protobench/protobench/internal/tool"
	"github.com/protobench/protobench/internal/tool/protobenchtool"
)

// splitter is how a step's load is shared by several client nodes (OneOff.Parts), for the one
// tool whose results merge without loss: protobench's own generator (tool.Split divides the
// rate and connections, protobenchtool.MergedFiles merges the histograms). Other tools run on
// one client node, and the record says so.
func splitter(a tool.Adapter, inv tool.Invocation) func(int) ([][]string, func(map[string][]byte) (map[string][]byte, error), error) {
	if a.Name() != (protobenchtool.Adapter{}).Name() {
		return nil
	}
	return func(n int) ([][]string, func(map[string][]byte) (map[string][]byte, error), error) {
		if err := tool.CheckSplit(inv, n); err != nil {
			return nil, nil, err
		}
		parts := tool.Split(inv, n)
		args := make([][]string, len(parts))
		for k, p := range parts {
			args[k] = a.Args(p)
		}
		merge := func(files map[string][]byte) (map[string][]byte, error) {
			return protobenchtool.MergedFiles(inv, n, tool.Raw{Files: files})
		}
		return args, merge, nil
	}
}
