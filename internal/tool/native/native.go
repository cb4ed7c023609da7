// Package native says how the load tools run on a host, outside their images: how to get each
// program, which paths its command line names in the image and where the checkout holds them,
// and how to give it one thread per core it is pinned to. bench-generators runs the tools so,
// and so do the tool packages' golden captures; a scenario's run never does, so the tools'
// Capabilities carry none of it.
//
// It imports no tool package, so that those packages' own tests can use it through tooltest;
// native_test holds its paths to the tools' constants.
package native

import (
	"path/filepath"
	"strconv"
	"strings"
)

// Tool is how one tool runs outside its image.
type Tool struct {
	// Install says how to get the program on a host, for a message when it is missing.
	Install string
	// Paths maps each file or folder installed in the tool's image that its command line names
	// to the checkout's copy, relative to the checkout's root.
	Paths map[string]string
	// ThreadsFlag is the flag that sets the tool's event-loop threads; empty for a tool that
	// has none.
	ThreadsFlag string
}

// wrkScript is report.lua, in the wrk image and in the checkout; wrk and wrk2 both run it.
var wrkScript = map[string]string{"/usr/share/protobench/wrk/report.lua": "internal/tool/wrk/report.lua"}

// tools are the tools by their adapters' names. protobench's generator is not one: it runs the
// protobench binary, which needs neither an install nor a file of the image.
var tools = map[string]Tool{
	"ghz": {
		Install: "go install github.com/bojand/ghz/cmd/ghz@v0.120.0",
		Paths:   map[string]string{"/usr/share/protobench/proto": "proto"},
	},
	"h2load": {Install: "apt-get install nghttp2-client", ThreadsFlag: "-t"},
	"k6": {
		Install: "go install go.k6.io/k6@v1.8.1",
		Paths:   map[string]string{"/usr/share/protobench/k6": "internal/tool/k6/scripts", "/usr/share/protobench/proto": "proto"},
	},
	"wrk":  {Install: "apt-get install wrk", Paths: wrkScript, ThreadsFlag: "-t"},
	"wrk2": {Install: "build github.com/giltene/wrk2 (images/wrk2/Dockerfile shows how)", Paths: wrkScript, ThreadsFlag: "-t"},
}

// Lookup is how the named tool runs outside its image: the zero Tool for one that needs
// nothing (protobench's generator) or is unknown.
func Lookup(name string) Tool { return tools[name] }

// HostArgs is args with the image's paths replaced by the checkout's copies under checkout.
func (t Tool) HostArgs(args []string, checkout string) []string {
	out := make([]string, len(args))
	for i, arg := range args {
		for image, rel := range t.Paths {
			arg = strings.Replace(arg, image, filepath.Join(checkout, rel), 1)
		}
		out[i] = arg
	}
	return out
}

// WithThreads is args with the tool's thread count set to n, for a tool pinned to n cores: its
// adapter picks a count for the cores a scenario's client may get, which a pinned tool would
// share among more event loops than it has cores. args as they are for a tool with no
// ThreadsFlag.
func (t Tool) WithThreads(args []string, n int) []string {
	out := append([]string(nil), args...)
	if t.ThreadsFlag == "" {
		return out
	}
	for i := 0; i+1 < len(out); i++ {
		if out[i] == t.ThreadsFlag {
			out[i+1] = strconv.Itoa(n)
			break
		}
	}
	return out
}
