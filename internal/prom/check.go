package prom

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Grafana cannot be built on every machine protobench runs on, but its dashboards' queries can
// still be tested: internal/dashboards lists them with the variables filled in, and Check runs
// each one. A parse error is a bug in the dashboard; an empty result means a metric or label the
// dashboard expects is not being collected.

// Query is one expression to check, with a name that says where it comes from
// (for dashboards: "<dashboard uid> / <panel title> / <refId>").
type Query struct {
	Name string
	Expr string
}

// Kind classifies a Problem.
type Kind string

// The kinds of problem Check reports.
const (
	// KindParse: Prometheus rejected the expression (errorType bad_data), a bug in the query.
	KindParse Kind = "parse"
	// KindEmpty: the query ran but returned no series; the metric or a label is not collected, or
	// nothing ran in the window.
	KindEmpty Kind = "empty"
	// KindError: the query failed for another reason (execution error, timeout, Prometheus
	// unreachable, unreadable response).
	KindError Kind = "error"
)

// Problem is one query that did not return data.
type Problem struct {
	Query   Query
	Kind    Kind
	Message string
}

// String is "<kind>: <name>: <message>" followed by the expression, for logs and test failures.
func (p Problem) String() string {
	return fmt.Sprintf("%s: %s: %s\n\t%s", p.Kind, p.Query.Name, p.Message, p.Query.Expr)
}

// Filter returns the problems of the given kinds.
func Filter(problems []Problem, kinds ...Kind) []Problem {
	var kept []Problem
	for _, p := range problems {
		for _, k := range kinds {
			if p.Kind == k {
				kept = append(kept, p)
				break
			}
		}
	}
	return kept
}

// Check runs every query as an instant query at Prometheus' current time. See CheckAt.
func (c *Client) Check(ctx context.Context, queries []Query) []Problem {
	return c.CheckAt(ctx, time.Time{}, queries)
}

// CheckAt runs every query as an instant query evaluated at `at` (Prometheus' "now" when at is
// zero) and returns one Problem per query that failed to parse, failed to run or returned no
// series, in the order of queries. Evaluating at a past instant lets a finished run's step window
// be checked after the fact. When Prometheus cannot be reached at all, the remaining queries are
// reported as errors without being sent.
func (c *Client) CheckAt(ctx context.Context, at time.Time, queries []Query) []Problem {
	var problems []Problem
	var unreachable error
	for _, q := range queries {
		if unreachable == nil {
			unreachable = ctx.Err()
		}
		if unreachable != nil {
			problems = append(problems, Problem{Query: q, Kind: KindError, Message: "not run: " + unreachable.Error()})
			continue
		}
		kind, msg := c.classify(ctx, at, q.Expr)
		if kind == KindError && msg.unreachable {
			unreachable = errors.New(msg.text)
		}
		if kind != "" {
			problems = append(problems, Problem{Query: q, Kind: kind, Message: msg.text})
		}
	}
	return problems
}

type classified struct {
	text        string
	unreachable bool
}

// classify runs one query and says what kind of problem it has ("" for none).
func (c *Client) classify(ctx context.Context, at time.Time, expr string) (Kind, classified) {
	resultType, result, err := c.instant(ctx, expr, at)
	var refused *QueryError
	var down *unreachableError
	switch {
	case errors.As(err, &refused) && refused.Type == "bad_data":
		return KindParse, classified{text: refused.Message}
	case refused != nil:
		return KindError, classified{text: refused.Type + ": " + refused.Message}
	case errors.As(err, &down):
		return KindError, classified{text: fmt.Sprintf("query %s: %v", c.BaseURL, err), unreachable: true}
	case err != nil:
		return KindError, classified{text: err.Error()}
	}
	empty, err := emptyResult(resultType, result)
	if err != nil {
		return KindError, classified{text: err.Error()}
	}
	if empty {
		return KindEmpty, classified{text: "no series"}
	}
	return "", classified{}
}

// emptyResult reports whether a vector or matrix result has no series. Scalars and strings always
// carry a value.
func emptyResult(resultType string, result json.RawMessage) (bool, error) {
	switch resultType {
	case "vector", "matrix":
		var series []json.RawMessage
		if err := json.Unmarshal(result, &series); err != nil {
			return false, fmt.Errorf("unreadable %s result: %w", resultType, err)
		}
		return len(series) == 0, nil
	case "scalar", "string":
		return false, nil
	default:
		return false, errors.New("unknown result type " + strconv.Quote(resultType))
	}
}
