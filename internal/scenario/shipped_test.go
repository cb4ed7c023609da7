package scenario

import (
	"github.com/protobench/protobench/internal/targets"

	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

const (
	shippedDir = "../../scenarios"
	seedsDir   = "../../../shared/seeds"
)

var seedName = regexp.MustCompile(`^[0-9]{3}_[0-9a-f]{16}\.txt$`)

// TestShippedScenarios is the CI gate behind "every shipped scenario passes --dry-run": each
// file parses, is named after its file, plans on a 2-core host in full and quick mode, and
// prints. It also holds the time budgets the issues promise.
func TestShippedScenarios(t *testing.T) {
	entries, err := List(shippedDir, 2)
	if err != nil {
		t.Fatal(err)
	}
	budgets := map[string]time.Duration{
		// The smoke scenario: every server and tool once in cleartext and once over TLS.
		"smoke":        3 * time.Minute,
		"grpc-vs-rest": 30 * time.Minute,
	}
	names := map[string]bool{}
	for _, e := range entries {
		t.Run(e.Name, func(t *testing.T) {
			if e.Err != nil {
				t.Fatalf("%v", e.Err)
			}
			names[e.Name] = true
			sc, err := Load(e.Path)
			if err != nil {
				t.Fatal(err)
			}
			if want := strings.TrimSuffix(filepath.Base(e.Path), ".yaml"); sc.Name != want {
				t.Errorf("name %q, file %s: a scenario must be named after its file", sc.Name, e.Path)
			}
			if sc.Source != "" && !seedName.MatchString(sc.Source) {
				t.Errorf("source %q is not a seed file name like 003_4bb7b5b759b6729f.txt", sc.Source)
			}
			// The seeds live beside the repository on the build machines; check them when present.
			if _, err := os.Stat(seedsDir); err == nil && sc.Source != "" {
				if _, err := os.Stat(filepath.Join(seedsDir, sc.Source)); err != nil {
					t.Errorf("source %s: %v", sc.Source, err)
				}
			}
			for _, quick := range []bool{false, true} {
				plan, err := sc.Plan(PlanOptions{Cores: 2, Quick: quick})
				if err != nil {
					t.Fatalf("quick=%v: %v", quick, err)
				}
				var buf bytes.Buffer
				if err := plan.Print(&buf); err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(buf.String(), "total") {
					t.Errorf("dry-run output lacks the total line:\n%s", buf.String())
				}
				ids := map[string]bool{}
				for _, r := range plan.Runs {
					if ids[r.ID] {
						t.Errorf("run ID %s twice", r.ID)
					}
					ids[r.ID] = true
					if quick && r.Warmup+r.Duration > QuickBudget {
						t.Errorf("quick run %s lasts %s", r.ID, r.Warmup+r.Duration)
					}
				}
				if b, ok := budgets[sc.Name]; ok && plan.TotalDuration > b {
					t.Errorf("quick=%v: estimated %s, budget %s", quick, plan.TotalDuration, b)
				}
				if testing.Verbose() && !quick {
					t.Logf("\n%s", buf.String())
				}
			}
			if sc.Published != nil {
				for _, f := range sc.Published.Figures {
					if f.Metric != "" && sc.Published.CoresFor(f) == 0 && PerCore(f.Metric) {
						t.Logf("figure %s: no published core count, per-core comparison will be n/a", f.Name)
					}
				}
			}
		})
	}
	for _, want := range []string{"smoke", "grpc-vs-rest", "grpc-echo-max", "python-grpc", "zeromq-pipeline", "netrpc-scaling", "all-protocols", "connect-vs-grpc"} {
		if !names[want] {
			t.Errorf("scenario %s is not shipped (or does not load)", want)
		}
	}
}

// TestSmokeCoversEverything holds smoke to its promise: every server and every tool at least once.
func TestSmokeCoversEverything(t *testing.T) {
	sc, err := Find("smoke", shippedDir)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := sc.Plan(PlanOptions{Cores: 2})
	if err != nil {
		t.Fatal(err)
	}
	ran, tools := map[string]bool{}, map[string]bool{}
	for _, r := range plan.Runs {
		ran[r.Target], tools[r.Tool] = true, true
	}
	for _, want := range targets.Names() {
		if !ran[want] {
			t.Errorf("smoke never runs target %s", want)
		}
	}
	for _, want := range Tools {
		// wrk2's image needs GitHub, which the machines that run the smoke in CI cannot reach;
		// its adapter and configuration are tested against golden output instead.
		if c, _ := capabilities(want); !tools[want] && c.ImageVariant == "" {
			t.Errorf("smoke never runs tool %s", want)
		}
	}
}
