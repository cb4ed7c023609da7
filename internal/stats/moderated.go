package stats

import (
	"math"
	"sort"
)

// MethodModerated names the interval LogTests gives each row.
const MethodModerated = "t on log values"

// TwoSample is one row of a comparison: the baseline's values A and the other side's B. Extra
// is a variance on the log scale that the difference carries besides A's and B's own spread
// (the between-run component an A/A calibration measured, when a side is a single run).
type TwoSample struct {
	A, B  []float64
	Extra float64
}

// Test is one row's result: the change B/A on the log scale, its interval and p-value, and the
// p-value adjusted for the number of rows tested (Benjamini–Hochberg).
type Test struct {
	Ratio    float64 // exp(mean log B − mean log A)
	CI       Interval
	T, DF    float64
	SE       float64 // standard error of the log ratio
	P        float64 // two-sided, for this row alone
	Adjusted float64 // after Benjamini–Hochberg across the tested rows
	OK       bool    // false when a side has fewer than 2 positive values
}

// Prior is a spread measured apart from the rows tested: DF degrees of freedom' worth of the
// log-scale variance Var (an A/A calibration's between-run variance). DF 0 is none.
type Prior struct {
	DF  float64 `json:"df"`
	Var float64 `json:"var"`
}

// LogTests tests each row for a change between A and B with a two-sample t on the log values,
// each row on its own pooled variance, joined with prior when it has degrees of freedom (a
// spread measured on other runs, never one fitted from these rows).
//
// Why not a prior fitted from the rows themselves (Smyth's moderated t, as an earlier version
// did): rows whose spreads really differ (a p99 row at CV 8 % beside a throughput row at 3 %)
// get the common spread, the noisy rows' tests become too sure, and in A/A simulations 6–7 % of
// comparisons made a false call where BH promises 5 % (moderated_test.go). A row's own t is
// exact for log-normal values, so BH's promise holds; what it costs in power, the minimum
// detectable effect printed beside each row says.
func LogTests(rows []TwoSample, level float64, prior Prior) []Test {
	tests := make([]Test, len(rows))
	quantile := map[float64]float64{} // by df: TQuantile is a bisection, and rows share their df
	var ps []float64
	var idx []int
	for i, r := range rows {
		t := &tests[i]
		la, okA := logs(r.A)
		lb, okB := logs(r.B)
		t.P, t.Adjusted = math.NaN(), math.NaN()
		if !okA || !okB || len(la) < 2 || len(lb) < 2 {
			t.Ratio = math.NaN()
			if okA && okB && len(la) > 0 && len(lb) > 0 {
				t.Ratio = math.Exp(Mean(lb) - Mean(la))
			}
			continue
		}
		d := float64(len(la) + len(lb) - 2)
		s2 := (variance(la)*float64(len(la)-1) + variance(lb)*float64(len(lb)-1)) / d
		df := d
		if prior.DF > 0 {
			s2 = (prior.DF*prior.Var + d*s2) / (prior.DF + d)
			df = prior.DF + d
		}
		diff := Mean(lb) - Mean(la)
		se := math.Sqrt(s2*(1/float64(len(la))+1/float64(len(lb))) + r.Extra)
		t.OK, t.Ratio, t.DF, t.SE = true, math.Exp(diff), df, se
		switch {
		case se > 0:
			t.T = diff / se
			t.P = 2 * TCDF(-math.Abs(t.T), df)
		case diff == 0:
			t.P = 1
		default:
			t.T, t.P = math.Copysign(math.Inf(1), diff), 0
		}
		half := 0.0
		if se > 0 {
			q, ok := quantile[df]
			if !ok {
				q = TQuantile(1-(1-level)/2, df)
				quantile[df] = q
			}
			half = q * se
		}
		t.CI = Interval{Lo: math.Exp(diff - half), Hi: math.Exp(diff + half), OK: true, Method: MethodModerated,
			Coverage: level, N: len(lb), N2: len(la)}
		ps, idx = append(ps, t.P), append(idx, i)
	}
	for j, a := range BenjaminiHochberg(ps) {
		tests[idx[j]].Adjusted = a
	}
	return tests
}

// Power is the chance that a two-sided t test at level alpha, with standard error se on df
// degrees of freedom (log scale), finds a true change of effect (a ratio such as 1.05).
func Power(effect, se, df, alpha float64) float64 {
	if !(se > 0) || !(effect > 0) || !(df > 0) {
		return math.NaN()
	}
	return PowerAt(math.Abs(math.Log(effect))/se, TQuantile(1-alpha/2, df), df)
}

// PowerAt is the chance |T'| exceeds crit for a noncentral t with noncentrality delta on df
// degrees of freedom: the tails integrated over the chi-square of the variance estimate
// (Simpson's rule), so that it holds at the few degrees of freedom a handful of repeats gives.
// T' = (Z + δ)/s with s = sqrt(V/df), V ~ chi-square(df): P = E[Φ(δ − c·s) + Φ(−δ − c·s)].
func PowerAt(delta, crit, df float64) float64 {
	if math.IsInf(df, 1) || df > 1e6 {
		return normCDF(delta-crit) + normCDF(-delta-crit)
	}
	lg, _ := math.Lgamma(df / 2)
	hi := df + 12*math.Sqrt(2*df) + 30
	const steps = 400
	h := hi / steps
	sum := 0.0
	for i := 1; i <= steps; i++ { // the density is 0 at v = 0 for df > 2, finite and tiny below
		v := float64(i) * h
		f := math.Exp((df/2-1)*math.Log(v)-v/2-(df/2)*math.Ln2-lg) * (normCDF(delta-crit*math.Sqrt(v/df)) + normCDF(-delta-crit*math.Sqrt(v/df)))
		switch {
		case i == steps:
			sum += f
		case i%2 == 1:
			sum += 4 * f
		default:
			sum += 2 * f
		}
	}
	return sum * h / 3
}

func normCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// MDE is the minimum detectable effect: the smallest change (as a ratio above 1) that a two-sided
// test at level alpha finds with the given power, for standard error se on df degrees of
// freedom (log scale): exp(MDEFactor·se).
func MDE(se, df, alpha, power float64) float64 {
	if !(se > 0) || !(df > 0) {
		return math.NaN()
	}
	return math.Exp(MDEFactor(df, alpha, power) * se)
}

// MDEFactor is the noncentrality a test at level alpha on df degrees of freedom finds with the
// given power (found by bisection): the MDE in standard errors, the same for every row of a df.
func MDEFactor(df, alpha, power float64) float64 {
	crit := TQuantile(1-alpha/2, df)
	lo, hi := 0.0, 1.0
	for PowerAt(hi, crit, df) < power {
		hi *= 2
		if hi > 1e6 {
			return math.Inf(1)
		}
	}
	for i := 0; i < 40; i++ {
		mid := (lo + hi) / 2
		if PowerAt(mid, crit, df) < power {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
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

// MethodClopperPearson names the binomial interval of a rate.
const MethodClopperPearson = "Clopper–Pearson"

// ClopperPearson is the exact binomial interval of a rate of k in n: its coverage is at least
// level for every true rate.
func ClopperPearson(k, n int, level float64) Interval {
	if n <= 0 || k < 0 || k > n {
		return Interval{}
	}
	a := (1 - level) / 2
	lo, hi := 0.0, 1.0
	if k > 0 {
		// P(X ≥ k | p) = I_p(k, n−k+1) = a
		lo = invBeta(float64(k), float64(n-k+1), a)
	}
	if k < n {
		// P(X ≤ k | p) = 1 − I_p(k+1, n−k) = a
		hi = invBeta(float64(k+1), float64(n-k), 1-a)
	}
	return Interval{Lo: lo, Hi: hi, OK: true, Method: MethodClopperPearson, Coverage: level, N: n}
}

// invBeta solves I_x(a, b) = p for x by bisection.
func invBeta(a, b, p float64) float64 {
	lo, hi := 0.0, 1.0
	for i := 0; i < 100; i++ {
		mid := (lo + hi) / 2
		if regIncBeta(a, b, mid) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}
