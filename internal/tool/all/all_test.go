package all

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/images"
	"github.com/protobench/protobench/internal/targets"
	"github.com/protobench/protobench/internal/tool"
)

// TestEveryToolRegistered guards the import list above: a tool missing there is a tool no
// scenario can name.
func TestEveryToolRegistered(t *testing.T) {
	want := []string{"ghz", "h2load", "k6", "protobench", "wrk", "wrk2"}
	if got := tool.Names(); !slices.Equal(got, want) {
		t.Errorf("tool.Names() = %v, want %v", got, want)
	}
}

// TestLiveMetricsOf: the generator's live metrics are scraped, k6 pushes its own, the other
// tools and a name no tool has have none.
func TestLiveMetricsOf(t *testing.T) {
	for name, want := range map[string]string{"protobench": tool.LiveScrape, "k6": tool.LiveRemoteWrite,
		"ghz": "", "wrk": "", "no-such-tool": ""} {
		if got := tool.LiveMetricsOf(name); got != want {
			t.Errorf("LiveMetricsOf(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestCapabilitiesAreCoherent checks each declaration on its own terms: known protocols, models,
// HTTP modes only for HTTP, and an image the image catalog builds.
func TestCapabilitiesAreCoherent(t *testing.T) {
	for _, name := range tool.Names() {
		a, _ := tool.Lookup(name)
		c := a.Capabilities()
		t.Run(name, func(t *testing.T) {
			if len(c.Protocols) == 0 || len(c.Models) == 0 {
				t.Errorf("declares no protocol or no model: %+v", c)
			}
			for _, p := range c.Protocols {
				if !slices.Contains(targets.Protocols, p) {
					t.Errorf("protocol %q is not one of %v", p, targets.Protocols)
				}
			}
			for _, m := range c.Models {
				if m != "closed" && m != "open" {
					t.Errorf("model %q", m)
				}
			}
			for _, m := range c.Methods {
				if !slices.Contains(targets.AllMethods(), m) {
					t.Errorf("method %q is not in the contract", m)
				}
			}
			if c.Speaks(targets.HTTP) != (len(c.HTTP) > 0) {
				t.Errorf("speaks HTTP %v but declares HTTP modes %v", c.Speaks(targets.HTTP), c.HTTP)
			}
			if !slices.Contains(images.Names(), c.Image) {
				t.Errorf("image %q is not in the image catalog %v", c.Image, images.Names())
			}
			if name != "protobench" && c.Limits == "" {
				t.Error("no Limits to explain a refused step")
			}
			if c.Program == "" {
				t.Error("no Program: the runner would start the service's default entrypoint")
			}
		})
	}
}

// TestCapabilitiesMatchCheck holds the declarations to what each adapter's Check really
// accepts, against every reference target: a scenario accepted on the strength of the
// declaration must not fail at run time, and one refused must be one Check would refuse.
func TestCapabilitiesMatchCheck(t *testing.T) {
	for _, name := range tool.Names() {
		a, _ := tool.Lookup(name)
		c := a.Capabilities()
		for _, target := range targets.All() {
			for _, model := range []string{"closed", "open"} {
				versions, encodings := []string{""}, []string{""}
				if target.IsHTTP() {
					versions, encodings = target.HTTPVersions, target.Encodings
				}
				for _, version := range versions {
					for _, encoding := range encodings {
						inv := tool.Invocation{
							Target: target.Name, Address: target.Address(), Scheme: target.Protocol,
							Method: contract.MethodGetUser, Pattern: target.PatternFor(contract.MethodGetUser),
							Model: model, Connections: 2, Concurrency: 2, HTTPVersion: version, Encoding: encoding,
							Duration: 10 * time.Second, RawDir: "/raw", RawPrefix: "check",
						}
						if model == "open" {
							inv.RatePerSec = 1000
						}
						declared := c.Speaks(target.Protocol) && c.Runs(model) && c.Sends(inv.Method) &&
							(!target.IsHTTP() || c.SendsHTTP(version, encoding))
						err := a.Check(inv)
						t.Run(fmt.Sprintf("%s/%s/%s/%s-%s", name, target.Name, model, version, encoding), func(t *testing.T) {
							if declared && err != nil {
								t.Errorf("declared but Check refuses: %v", err)
							}
							if !declared && err == nil {
								t.Error("Check accepts what the capabilities do not declare")
							}
						})
					}
				}
			}
		}
	}
}
