package results

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/stats"
)

// na is what a missing number prints as.
const na = "n/a"

// fmtNum prints a number for people: thousands separated and no decimals from 1,000 up, and
// three significant digits below without trailing zeros, so 12150 is "12,150", 8.234 is "8.23"
// and 90 is "90".
func fmtNum(x float64) string {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return na
	case math.Abs(x) >= 1000:
		return thousands(int64(math.Round(x)))
	}
	s := sigDigits(x, 3)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// sigDigits formats x with n significant digits, keeping trailing zeros.
func sigDigits(x float64, n int) string {
	if x == 0 {
		return "0"
	}
	digits := n - 1 - int(math.Floor(math.Log10(math.Abs(x))))
	return strconv.FormatFloat(x, 'f', max(digits, 0), 64)
}

func thousands(n int64) string {
	sign := ""
	if n < 0 {
		sign, n = "-", -n
	}
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return sign + b.String()
}

// fmtCI prints an interval as "lo–hi".
func fmtCI(iv stats.Interval) string {
	if !iv.OK {
		return na
	}
	return fmtNum(iv.Lo) + "–" + fmtNum(iv.Hi)
}

// fmtWithCI prints "median (lo–hi)".
func fmtWithCI(s stats.Summary) string {
	if s.N == 0 {
		return na
	}
	if !s.CI.OK {
		return fmtNum(s.Median)
	}
	return fmt.Sprintf("%s (%s)", fmtNum(s.Median), fmtCI(s.CI))
}

// fmtRatio prints a ratio with three significant digits: "1.89×", "0.500×", "0.00988×".
func fmtRatio(r float64) string {
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return na
	}
	return sigDigits(r, 3) + "×"
}

func fmtRatioCI(r float64, iv stats.Interval) string {
	if !iv.OK {
		return fmtRatio(r)
	}
	return fmt.Sprintf("%s (%s–%s)", fmtRatio(r), sigDigits(iv.Lo, 3), sigDigits(iv.Hi, 3))
}

// fmtRatioLabelled prints a ratio with its interval and what the interval is:
// "2.25× (1.90–2.66; paired t on logs, 95.0 % at n=5 pairs)"; "1.9× (no interval: n=1)".
func fmtRatioLabelled(r float64, iv stats.Interval) string {
	if !iv.OK {
		if math.IsNaN(r) {
			return na
		}
		return fmt.Sprintf("%s (no interval: n=%d)", fmtRatio(r), iv.N)
	}
	return fmt.Sprintf("%s (%s–%s; %s)", fmtRatio(r), sigDigits(iv.Lo, 3), sigDigits(iv.Hi, 3), iv.Label())
}

// RatioText is a ratio with its interval and the interval's method, coverage and n, as
// summary.md prints it, for the other reports.
func RatioText(r float64, iv stats.Interval) string { return fmtRatioLabelled(r, iv) }

// IntervalLabel says what a group's median intervals are ("[min,max], 75.0 % at n=3"), or
// why there is none.
func IntervalLabel(s stats.Summary) string {
	if s.CI.OK {
		return s.CI.Label()
	}
	if s.N == 0 {
		return na
	}
	return fmt.Sprintf("none at n=%d", s.N)
}

// FlagCounts prints flag counts out of a number of runs: "errors 2/10, noisy 10/10".
func FlagCounts(flags []FlagCount, runs int) string {
	parts := make([]string, len(flags))
	for i, f := range flags {
		parts[i] = fmt.Sprintf("%s %d/%d", f.Flag, f.Count, runs)
	}
	return strings.Join(parts, ", ")
}

func fmtPercent(x float64) string {
	if math.IsNaN(x) {
		return na
	}
	return strconv.FormatFloat(x*100, 'f', 1, 64) + " %"
}

func fmtMiB(bytes float64) string {
	if math.IsNaN(bytes) {
		return na
	}
	return fmtNum(bytes / (1 << 20))
}

// fmtFlags prints flags with their count when only some repeats carry them: "errors 2/5".
func fmtFlags(g *Group) string {
	if len(g.Flags) == 0 {
		return ""
	}
	parts := make([]string, len(g.Flags))
	for i, f := range g.Flags {
		parts[i] = f.Flag
		if f.Count < g.Runs {
			parts[i] = fmt.Sprintf("%s %d/%d", f.Flag, f.Count, g.Runs)
		}
	}
	return strings.Join(parts, ", ")
}

// workloadName describes a group's workload in a few words: "GetUser 100×1" or
// "Echo 1KiB open 5,000/s".
func workloadName(g *Group) string {
	s := fmt.Sprintf("%s %d×%d", g.Method, g.Connections, g.Concurrency)
	if g.PayloadBytes > 0 {
		s += " " + scenario.FormatSize(int64(g.PayloadBytes))
	}
	if g.Model == scenario.ModelOpen {
		s += " open " + fmtNum(g.Rate) + "/s"
	} else {
		// A closed loop's latency is in-flight / throughput: say so wherever it shows.
		s += " closed loop"
	}
	return s
}

// fmtFigure prints a value with its unit the way the article wrote it.
func fmtFigure(v float64, unit string) string {
	if math.IsNaN(v) {
		return na
	}
	if unit == "%" {
		return fmtNum(v) + " %"
	}
	return fmtNum(v) + " " + unit
}

// mdEscape keeps free text from breaking a Markdown table.
func mdEscape(s string) string {
	return strings.NewReplacer("|", "\\|", "\n", " ").Replace(s)
}
