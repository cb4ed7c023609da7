package prom

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// RangeSeries is one series of a range-query result with its number of points.
type RangeSeries struct {
	Labels map[string]string
	Points int
}

// QueryError is Prometheus refusing or failing a query; Type is its errorType (bad_data for a
// query that does not parse, execution, timeout, ...).
type QueryError struct {
	Expr, Type, Message string
}

func (e *QueryError) Error() string {
	return fmt.Sprintf("prometheus query %q: %s: %s", e.Expr, e.Type, e.Message)
}

// QueryRange evaluates expr at every step from start to end (/api/v1/query_range), as Grafana
// does for a panel, and returns the series that had at least one point.
func (c *Client) QueryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]RangeSeries, error) {
	v := url.Values{
		"query": {expr},
		"start": {strconv.FormatFloat(float64(start.UnixNano())/1e9, 'f', 3, 64)},
		"end":   {strconv.FormatFloat(float64(end.UnixNano())/1e9, 'f', 3, 64)},
		"step":  {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL+"/api/v1/query_range", nil)
	if err != nil {
		return nil, err
	}
	req.URL.RawQuery = v.Encode()
	resp, err := c.do(req)
	if err != nil {
		return nil, fmt.Errorf("prometheus query_range %q: %w", expr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("prometheus query_range %q: %w", expr, err)
	}
	var r apiResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("prometheus query_range %q: HTTP %d, undecodable body: %w", expr, resp.StatusCode, err)
	}
	if r.Status != "success" {
		return nil, &QueryError{Expr: expr, Type: r.ErrorType, Message: r.Error}
	}
	if r.Data.ResultType != "matrix" {
		return nil, fmt.Errorf("prometheus query_range %q: result type %q, want matrix", expr, r.Data.ResultType)
	}
	var series []json.RawMessage
	if err := json.Unmarshal(r.Data.Result, &series); err != nil {
		return nil, fmt.Errorf("prometheus query_range %q: %w", expr, err)
	}
	out := make([]RangeSeries, 0, len(series))
	for _, raw := range series {
		var s struct {
			Metric map[string]string `json:"metric"`
			Values [][2]any          `json:"values"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("prometheus query_range %q: %w", expr, err)
		}
		if len(s.Values) > 0 {
			out = append(out, RangeSeries{Labels: s.Metric, Points: len(s.Values)})
		}
	}
	return out, nil
}
