package compare

import (
	"fmt"
	"sort"

	"github.com/protobench/protobench/internal/report"
	"github.com/protobench/protobench/internal/scenario"
)

// settings lists what a folder's figures depend on besides the code under test: quick mode, the
// repeats, warm-ups and durations, caps, images and host. Two folders that differ in any of
// these measured different things.
func settings(f *report.Folder) map[string]string {
	s := map[string]string{"quick mode": fmt.Sprint(f.Run.Quick)}
	h := f.Run.Host
	s["host CPU"] = fmt.Sprintf("%s, %d cores", h.CPUModel, h.Cores)
	s["host kernel"] = h.Kernel
	s["docker"] = h.DockerVersion
	s["cpu layout"] = fmt.Sprintf("server %s, client %s, observability %s", f.Run.Layout.ServerCPUSet, f.Run.Layout.ClientCPUSet, f.Run.Layout.ObservabilityCPUSet)
	for _, im := range f.Run.Images {
		id := im.ID
		if len(id) > 19 {
			id = id[:19]
		}
		s["image "+im.Name] = id
	}
	if f.Plan != nil {
		for _, r := range f.Plan.Runs {
			s["repeats of "+r.Step] = fmt.Sprint(r.Repeats)
			s["warm-up + duration of "+r.Step] = fmt.Sprintf("%s + %s", r.Warmup, r.Duration)
			s[fmt.Sprintf("caps of %s on %s", r.Step, r.Target)] = caps(r.Caps)
		}
	}
	return s
}

func caps(c scenario.Caps) string {
	return fmt.Sprintf("server %g cpus %d MiB, client %g cpus %d MiB", c.ServerCPUs, c.ServerMemoryBytes>>20, c.ClientCPUs, c.ClientMemoryBytes>>20)
}

// settingsDiff lists each setting whose value differs between the baseline and another folder,
// as "repeats of getuser: A 5, B 3".
func settingsDiff(folders []*report.Folder) []string {
	base := settings(folders[0])
	var out []string
	for i, f := range folders[1:] {
		other := settings(f)
		keys := map[string]bool{}
		for k := range base {
			keys[k] = true
		}
		for k := range other {
			keys[k] = true
		}
		var names []string
		for k := range keys {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			a, okA := base[k]
			b, okB := other[k]
			if !okA || !okB {
				// A step or image only one folder has is not compared, not a difference.
				continue
			}
			if a != b {
				out = append(out, fmt.Sprintf("%s: A %s, %s %s", k, a, letter(i+1), b))
			}
		}
	}
	return out
}
