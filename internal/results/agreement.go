package results

// AgreementRow compares a cross-check tool with the reference tool on the same workload.
type AgreementRow struct {
	Target, Workload string
	Reference, Tool  *Group
	Throughput, P99  float64 // tool / reference, medians
}

// agreement pairs groups that ran the same workload on the same target with different tools.
func agreement(groups []*Group) []AgreementRow {
	type workload struct {
		target, method, model string
		conn, conc, payload   int
		rate                  float64
	}
	var keys []workload
	byKey := map[workload][]*Group{}
	for _, g := range groups {
		if g.Throughput.N == 0 {
			continue
		}
		k := workload{g.Target, g.Method, g.Model, g.Connections, g.Concurrency, g.PayloadBytes, g.Rate}
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		dup := false
		for _, other := range byKey[k] {
			dup = dup || other.Tool == g.Tool
		}
		if !dup {
			byKey[k] = append(byKey[k], g)
		}
	}
	var rows []AgreementRow
	for _, k := range keys {
		gs := byKey[k]
		if len(gs) < 2 {
			continue
		}
		ref := gs[0]
		for _, g := range gs {
			if g.Tool == PrimaryTool {
				ref = g
			}
		}
		for _, g := range gs {
			if g == ref {
				continue
			}
			rows = append(rows, AgreementRow{
				Target: k.target, Workload: workloadName(g), Reference: ref, Tool: g,
				Throughput: g.Throughput.Median / ref.Throughput.Median,
				P99:        g.P99.Median / ref.P99.Median,
			})
		}
	}
	return rows
}
