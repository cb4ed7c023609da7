// Package prom is protobench's one client for the Prometheus HTTP query API: the runner reads a
// step's server CPU, memory and throttling from cAdvisor series with it after the step has ended,
// and Check runs a list of expressions (the dashboards' queries) and reports those that do not
// parse, fail or return no series.
package prom

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

// Client queries one Prometheus server.
type Client struct {
	BaseURL string // e.g. http://127.0.0.1:9090
	HTTP    *http.Client
	health  *health // nil: every query waits out its own timeout (a Client not made by New)
}

// New returns a client for baseURL with a short timeout: queries over one step are cheap.
func New(baseURL string) *Client {
	return &Client{BaseURL: baseURL, HTTP: &http.Client{Timeout: 10 * time.Second}, health: &health{}}
}

// Sample is one series of an instant-vector result.
type Sample struct {
	Labels map[string]string
	Value  float64
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

// unreachableError wraps a failure to ask Prometheus at all, as opposed to an answer that says no.
type unreachableError struct{ err error }

func (e *unreachableError) Error() string { return e.err.Error() }
func (e *unreachableError) Unwrap() error { return e.err }

// instant runs one instant query at time at (zero: Prometheus' now) and returns the result's type
// and raw JSON. POST keeps long expressions out of the URL, which proxies may truncate.
func (c *Client) instant(ctx context.Context, expr string, at time.Time) (string, json.RawMessage, error) {
	form := url.Values{"query": {expr}}
	if !at.IsZero() {
		form.Set("time", strconv.FormatFloat(float64(at.UnixNano())/1e9, 'f', 3, 64))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.BaseURL, "/")+"/api/v1/query", strings.NewReader(form.Encode()))
	if err != nil {
		return "", nil, &unreachableError{err}
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.do(req)
	if err != nil {
		var u *unreachableError
		if errors.As(err, &u) {
			return "", nil, err
		}
		return "", nil, &unreachableError{err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return "", nil, fmt.Errorf("reading the response: %w", err)
	}
	var r apiResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return "", nil, fmt.Errorf("HTTP %d, not a Prometheus API response: %.200s", resp.StatusCode, body)
	}
	if r.Status != "success" {
		return "", nil, &QueryError{Expr: expr, Type: r.ErrorType, Message: r.Error}
	}
	return r.Data.ResultType, r.Data.Result, nil
}

// Query evaluates expr at time at (zero means now) and returns the instant vector (or the scalar
// as one sample).
func (c *Client) Query(ctx context.Context, expr string, at time.Time) ([]Sample, error) {
	resultType, result, err := c.instant(ctx, expr, at)
	var qe *QueryError
	if errors.As(err, &qe) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("prometheus query %q: %w", expr, err)
	}
	switch resultType {
	case "vector":
		var series []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		}
		if err := json.Unmarshal(result, &series); err != nil {
			return nil, fmt.Errorf("prometheus query %q: %w", expr, err)
		}
		out := make([]Sample, 0, len(series))
		for _, s := range series {
			f, err := sampleValue(s.Value[1])
			if err != nil {
				return nil, fmt.Errorf("prometheus query %q: %w", expr, err)
			}
			out = append(out, Sample{Labels: s.Metric, Value: f})
		}
		return out, nil
	case "scalar":
		var s [2]any
		if err := json.Unmarshal(result, &s); err != nil {
			return nil, fmt.Errorf("prometheus query %q: %w", expr, err)
		}
		f, err := sampleValue(s[1])
		return []Sample{{Value: f}}, err
	default:
		return nil, fmt.Errorf("prometheus query %q: unsupported result type %q", expr, resultType)
	}
}

// Scalar evaluates expr and returns the single value, and false when the result is empty.
func (c *Client) Scalar(ctx context.Context, expr string, at time.Time) (float64, bool, error) {
	s, err := c.Query(ctx, expr, at)
	if err != nil || len(s) == 0 {
		return 0, false, err
	}
	return s[0].Value, true, nil
}

func sampleValue(v any) (float64, error) {
	str, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("sample value %v is not a string", v)
	}
	return strconv.ParseFloat(str, 64)
}

// Ready waits until Prometheus answers its readiness endpoint or ctx ends.
func (c *Client) Ready(ctx context.Context) error {
	for {
		if c.readyOnce(ctx) == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("prometheus at %s not ready: %w", c.BaseURL, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// readyOnce asks the readiness endpoint once: nil when Prometheus says it is ready.
func (c *Client) readyOnce(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.BaseURL+"/-/ready", nil)
	if err != nil {
		return err
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil
}

// WaitUntil evaluates expr every interval until its single value satisfies done, or ctx ends.
func (c *Client) WaitUntil(ctx context.Context, expr string, interval time.Duration, done func(float64) bool) error {
	for {
		v, ok, err := c.Scalar(ctx, expr, time.Time{})
		if err == nil && ok && done(v) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

// Point is one stored sample.
type Point struct {
	T time.Time
	V float64
}

// Series is one series of raw samples.
type Series struct {
	Labels map[string]string
	Points []Point
}

// Samples returns the raw samples that selector's series stored in [start, end], with the
// timestamps they were stored with. An instant query of a range selector returns them unchanged:
// no rate, no extrapolation.
func (c *Client) Samples(ctx context.Context, selector string, start, end time.Time) ([]Series, error) {
	ms := end.Sub(start).Milliseconds()
	if ms < 1 {
		ms = 1
	}
	expr := fmt.Sprintf("%s[%dms]", selector, ms)
	resultType, result, err := c.instant(ctx, expr, end)
	var qe *QueryError
	if errors.As(err, &qe) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("prometheus query %q: %w", expr, err)
	}
	if resultType != "matrix" {
		return nil, fmt.Errorf("prometheus query %q: result type %q, want matrix", expr, resultType)
	}
	var raw []struct {
		Metric map[string]string `json:"metric"`
		Values [][2]any          `json:"values"`
	}
	if err := json.Unmarshal(result, &raw); err != nil {
		return nil, fmt.Errorf("prometheus query %q: %w", expr, err)
	}
	out := make([]Series, 0, len(raw))
	for _, s := range raw {
		ser := Series{Labels: s.Metric, Points: make([]Point, 0, len(s.Values))}
		for _, v := range s.Values {
			ts, ok := v[0].(float64)
			if !ok {
				return nil, fmt.Errorf("prometheus query %q: timestamp %v is not a number", expr, v[0])
			}
			f, err := sampleValue(v[1])
			if err != nil {
				return nil, fmt.Errorf("prometheus query %q: %w", expr, err)
			}
			ser.Points = append(ser.Points, Point{T: time.Unix(0, int64(ts*1e9)), V: f})
		}
		out = append(out, ser)
	}
	return out, nil
}
