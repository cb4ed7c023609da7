// Package promcheck executes PromQL expressions against a real Prometheus and reports the ones that
// do not parse, fail, or return no series.
//
// Grafana cannot be built on every machine protobench runs on, but its dashboards' queries can still
// be tested: internal/dashboards lists them with the variables filled in, and Check runs each one
// through Prometheus' HTTP API (/api/v1/query). A parse error is a bug in the dashboard; an empty
// result means a metric or label the dashboard expects is not being collected.
package promcheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

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
func Check(ctx context.Context, promURL string, queries []Query) []Problem {
	return CheckAt(ctx, promURL, time.Time{}, queries)
}

// CheckAt runs every query as an instant query evaluated at `at` (Prometheus' "now" when at is
// zero) and returns one Problem per query that failed to parse, failed to run or returned no
// series, in the order of queries. Evaluating at a past instant lets a finished run's step window be
// checked after the fact. When Prometheus cannot be reached at all, the remaining queries are
// reported as errors without being sent.
func CheckAt(ctx context.Context, promURL string, at time.Time, queries []Query) []Problem {
	endpoint := strings.TrimRight(promURL, "/") + "/api/v1/query"
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
		kind, msg, transportErr := run(ctx, endpoint, at, q.Expr)
		if transportErr != nil {
			unreachable = transportErr
			problems = append(problems, Problem{Query: q, Kind: KindError, Message: transportErr.Error()})
			continue
		}
		if kind != "" {
			problems = append(problems, Problem{Query: q, Kind: kind, Message: msg})
		}
	}
	return problems
}

// apiResponse is the envelope of every Prometheus HTTP API answer.
type apiResponse struct {
	Status    string `json:"status"`
	ErrorType string `json:"errorType"`
	Error     string `json:"error"`
	Data      struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	} `json:"data"`
}

// run executes one instant query. It returns the problem kind ("" when the query returned
// series) with a message, or a transport error when Prometheus could not be asked at all.
func run(ctx context.Context, endpoint string, at time.Time, expr string) (Kind, string, error) {
	form := url.Values{"query": {expr}}
	if !at.IsZero() {
		form.Set("time", strconv.FormatFloat(float64(at.UnixNano())/1e9, 'f', 3, 64))
	}
	// POST keeps long expressions out of the URL, which proxies and servers may truncate.
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return "", "", fmt.Errorf("promcheck: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", "", fmt.Errorf("promcheck: query %s: %w", endpoint, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return KindError, "reading response: " + err.Error(), nil
	}
	var r apiResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return KindError, fmt.Sprintf("HTTP %d, not a Prometheus API response: %.200s", resp.StatusCode, body), nil
	}
	if r.Status != "success" {
		if r.ErrorType == "bad_data" {
			return KindParse, r.Error, nil
		}
		return KindError, r.ErrorType + ": " + r.Error, nil
	}
	empty, err := emptyResult(r.Data.ResultType, r.Data.Result)
	if err != nil {
		return KindError, err.Error(), nil
	}
	if empty {
		return KindEmpty, "no series", nil
	}
	return "", "", nil
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
