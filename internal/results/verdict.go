package results

import (
	"fmt"
	"math"

	"github.com/protobench/protobench/internal/stats"
)

// This file decides what a published figure's row says of the article's value beside ours. A
// verdict (consistent, ours higher, ours lower) comes only from an interval whose real coverage
// reaches CILevel and whose method an A/A test has checked (verdict_test.go,
// TestPublishedVerdictAA): where the article's value is the truth, such a verdict calls ours
// higher or lower at most 5 % of the time. Below that the row says there is no verdict, and why.

// Verdict is how a published value stands against ours and our interval.
type Verdict int

const (
	VerdictNoValue    Verdict = iota // nothing of ours to set beside it
	VerdictNoInterval                // fewer than 2 repeats (or pairs): no interval
	VerdictWithheld                  // an interval too weak to judge by (see verdictGrade)
	VerdictConsistent                // the published value lies inside our interval
	VerdictHigher                    // it lies below our interval: ours is higher
	VerdictLower                     // it lies above our interval: ours is lower
)

// Called says whether v calls ours higher or lower: the false alarm an A/A test counts.
func (v Verdict) Called() bool { return v == VerdictHigher || v == VerdictLower }

// aaTested are the interval methods whose verdicts TestPublishedVerdictAA checks: the median's
// order statistics, the gain's paired t on logs, and the gain's Welch fallback when its
// variants share fewer than 2 repeats.
var aaTested = map[string]bool{stats.MethodOrderStats: true, stats.MethodPairedLog: true, stats.MethodWelchLog: true}

// verdictGrade says whether an interval may give a verdict: its real coverage reaches CILevel
// (an order-statistic interval of the median does from n = 6; a t interval claims CILevel at
// any n ≥ 2) and its method has an A/A test.
func verdictGrade(ci stats.Interval, need float64) bool {
	return ci.OK && ci.Coverage >= need-1e-9 && aaTested[ci.Method]
}

// Judge sets a published value beside ours (the median of our repeats, or a gain) and the
// interval around ours.
func Judge(ours, published float64, ci stats.Interval) Verdict {
	return JudgeAt(ours, published, ci, CILevel)
}

// JudgeAt is Judge with the coverage a verdict needs (above CILevel where ours was picked as
// the largest of several).
func JudgeAt(ours, published float64, ci stats.Interval, need float64) Verdict {
	switch {
	case math.IsNaN(ours):
		return VerdictNoValue
	case !ci.OK:
		return VerdictNoInterval
	case !verdictGrade(ci, need):
		return VerdictWithheld
	case ci.Contains(published):
		return VerdictConsistent
	case published < ci.Lo:
		return VerdictHigher
	}
	return VerdictLower
}

// VerdictText says Judge's verdict in words, with the interval's label, for what ours is ("median"
// or "gain"): "ours lower: the published value is outside our interval of the median
// ([x(2),x(9)], 97.9 % at n=10)", or "no verdict: our interval of the median ([min,max], 75.0 %
// at n=3) covers less than the 95 % a verdict needs; the published value lies outside it".
func VerdictText(ours, published float64, ci stats.Interval, what string) string {
	return VerdictTextAt(ours, published, ci, what, CILevel)
}

// VerdictTextAt is VerdictText with the coverage a verdict needs.
func VerdictTextAt(ours, published float64, ci stats.Interval, what string, need float64) string {
	of := "our interval of the " + what + " (" + ci.Label() + ")"
	switch JudgeAt(ours, published, ci, need) {
	case VerdictNoValue:
		return "no value of ours"
	case VerdictNoInterval:
		if ours < published {
			return "no verdict: one repeat, no interval (ours is lower)"
		}
		return "no verdict: one repeat, no interval (ours is higher)"
	case VerdictWithheld:
		where := "outside"
		if ci.Contains(published) {
			where = "inside"
		}
		why := fmt.Sprintf("covers less than the %.4g %% a verdict needs", 100*need)
		if !aaTested[ci.Method] {
			why = "has no A/A test of its false alarms"
		}
		return "no verdict: " + of + " " + why + "; the published value lies " + where + " it"
	case VerdictConsistent:
		return "consistent: the published value is inside " + of
	case VerdictHigher:
		return "ours higher: the published value is outside " + of
	}
	return "ours lower: the published value is outside " + of
}
