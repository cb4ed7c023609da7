package stats

import (
	"math"
	"sort"
)

// MethodModerated names the interval ModeratedLogTests gives each row.
const MethodModerated = "moderated t on log values"

// TwoSample is one row of a comparison: the baseline's repeats A and the other side's B.
type TwoSample struct{ A, B []float64 }

// Test is one row's result: the change B/A on the log scale, its interval and p-value, and the
// p-value adjusted for the number of rows tested (Benjamini–Hochberg).
type Test struct {
	Ratio    float64 // exp(mean log B − mean log A)
	CI       Interval
	T, DF    float64
	P        float64 // two-sided, for this row alone
	Adjusted float64 // after Benjamini–Hochberg across the tested rows
	OK       bool    // false when a side has fewer than 2 positive values
}

// Prior is what the rows say together about the spread of a row: d0 degrees of freedom' worth
// of the variance s0². DF is 0 when the rows' variances differ too much to pool (or there are
// too few rows to tell), +Inf when they agree completely.
type Prior struct {
	DF, Var float64
	Rows    int // rows it was estimated from
}

// ModeratedLogTests tests each row for a change between A and B with Smyth's moderated t
// (empirical Bayes, as limma does for gene arrays): each row's pooled variance of the log values
// is shrunk toward the variance typical of all rows, by as much as the rows' variances agree.
// Five repeats a side give a row only 8 degrees of freedom of its own; borrowing from the other
// rows of the same two folders is what lets a 10 % change at 5 % CV be found, while a row whose
// spread really is larger keeps most of its own. The p-values are then adjusted by
// Benjamini–Hochberg across the tested rows, so that among the rows called changed, the expected
// share of false calls stays at the level asked for.
func ModeratedLogTests(rows []TwoSample, level float64) ([]Test, Prior) {
	type rowStat struct {
		diff, s2, d, scale float64
	}
	tests := make([]Test, len(rows))
	st := make([]rowStat, len(rows))
	var s2s, ds []float64
	for i, r := range rows {
		la, okA := logs(r.A)
		lb, okB := logs(r.B)
		if !okA || !okB || len(la) < 2 || len(lb) < 2 {
			if okA && okB && len(la) > 0 && len(lb) > 0 {
				tests[i].Ratio = math.Exp(Mean(lb) - Mean(la))
			} else {
				tests[i].Ratio = math.NaN()
			}
			tests[i].P, tests[i].Adjusted = math.NaN(), math.NaN()
			continue
		}
		d := float64(len(la) + len(lb) - 2)
		s2 := (variance(la)*float64(len(la)-1) + variance(lb)*float64(len(lb)-1)) / d
		st[i] = rowStat{diff: Mean(lb) - Mean(la), s2: s2, d: d, scale: 1/float64(len(la)) + 1/float64(len(lb))}
		tests[i].OK = true
		tests[i].CI.N, tests[i].CI.N2 = len(lb), len(la)
		if s2 > 0 {
			s2s, ds = append(s2s, s2), append(ds, d)
		}
	}
	prior := fitPrior(s2s, ds)
	var ps []float64
	var idx []int
	for i := range rows {
		if !tests[i].OK {
			continue
		}
		r := st[i]
		var post, df float64
		switch {
		case math.IsInf(prior.DF, 1):
			post, df = prior.Var, math.Inf(1)
		default:
			post = (prior.DF*prior.Var + r.d*r.s2) / (prior.DF + r.d)
			df = prior.DF + r.d
		}
		se := math.Sqrt(post * r.scale)
		t := &tests[i]
		t.Ratio, t.DF = math.Exp(r.diff), df
		switch {
		case se > 0:
			t.T = r.diff / se
			t.P = 2 * TCDF(-math.Abs(t.T), df)
		case r.diff == 0:
			t.P = 1
		default:
			t.T, t.P = math.Copysign(math.Inf(1), r.diff), 0
		}
		half := 0.0
		if se > 0 {
			half = TQuantile(1-(1-level)/2, df) * se
		}
		t.CI = Interval{Lo: math.Exp(r.diff - half), Hi: math.Exp(r.diff + half), OK: true, Method: MethodModerated,
			Coverage: level, N: t.CI.N, N2: t.CI.N2}
		ps, idx = append(ps, t.P), append(idx, i)
	}
	for j, a := range BenjaminiHochberg(ps) {
		tests[idx[j]].Adjusted = a
	}
	return tests, prior
}

// fitPrior estimates d0 and s0² from the rows' variances s² (each on d degrees of freedom) by
// the method of moments on log s², as Smyth (2004) does: log s² has mean log s0² + ψ(d/2) −
// log(d/2) and variance ψ'(d/2) + ψ'(d0/2). Fewer than 3 rows give no prior (DF 0).
func fitPrior(s2s, ds []float64) Prior {
	g := len(s2s)
	if g < 3 {
		return Prior{Rows: g}
	}
	e := make([]float64, g)
	triMean := 0.0
	for i := range s2s {
		e[i] = math.Log(s2s[i]) - digamma(ds[i]/2) + math.Log(ds[i]/2)
		triMean += trigamma(ds[i]/2) / float64(g)
	}
	emean := Mean(e)
	evar := variance(e) - triMean
	if evar <= 0 {
		return Prior{DF: math.Inf(1), Var: math.Exp(emean), Rows: g}
	}
	d0 := 2 * trigammaInverse(evar)
	return Prior{DF: d0, Var: math.Exp(emean + digamma(d0/2) - math.Log(d0/2)), Rows: g}
}

// BenjaminiHochberg adjusts p-values for the number tested: a row is a discovery at false
// discovery rate q when its adjusted value is at most q. NaN stays NaN and is not counted.
func BenjaminiHochberg(ps []float64) []float64 {
	out := make([]float64, len(ps))
	var order []int
	for i, p := range ps {
		out[i] = math.NaN()
		if !math.IsNaN(p) {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return ps[order[a]] < ps[order[b]] })
	m := float64(len(order))
	running := 1.0
	for j := len(order) - 1; j >= 0; j-- {
		i := order[j]
		running = math.Min(running, ps[i]*m/float64(j+1))
		out[i] = running
	}
	return out
}
