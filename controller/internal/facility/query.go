package facility

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// maxResponseBytes bounds one answer. A facility signal is a handful of
// series; an answer this large means a query that matches far more than
// meant, and it must not cost the controller its memory.
const maxResponseBytes = 4 << 20

// errNoData is an instant query with an empty result: the metric does not
// exist, or Prometheus marked its series stale because the exporter stopped
// answering.
var errNoData = errors.New("no data: the query returned an empty vector")

// sample is one series of an instant-query result.
type sample struct {
	labels map[string]string
	value  float64
}

// series names a sample in messages the way PromQL prints it, so an
// operator can paste it into a query.
func (s sample) series() string {
	name := s.labels["__name__"]
	keys := make([]string, 0, len(s.labels))
	for k := range s.labels {
		if k != "__name__" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%q", k, s.labels[k])
	}
	return name + "{" + strings.Join(parts, ", ") + "}"
}

// The envelope of every Prometheus HTTP API answer.
type apiResponse struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
}

type queryData struct {
	ResultType string          `json:"resultType"`
	Result     json.RawMessage `json:"result"`
}

type vectorEntry struct {
	Metric map[string]string `json:"metric"`
	Value  *sampleValue      `json:"value"`
}

// sampleValue is the API's [unix time, "value"] pair; the value is a
// string so that NaN and ±Inf survive JSON.
type sampleValue float64

func (s *sampleValue) UnmarshalJSON(b []byte) error {
	var pair []json.RawMessage
	if err := json.Unmarshal(b, &pair); err != nil || len(pair) != 2 {
		return fmt.Errorf("sample %s: want [time, \"value\"]", clip(b))
	}
	var ts float64
	if err := json.Unmarshal(pair[0], &ts); err != nil {
		return fmt.Errorf("sample %s: time is not a number", clip(b))
	}
	var str string
	if err := json.Unmarshal(pair[1], &str); err != nil {
		return fmt.Errorf("sample %s: value is not a string", clip(b))
	}
	v, err := strconv.ParseFloat(str, 64)
	// "1e999" parses as +Inf with ErrRange: a number, left for the
	// signal's check to refuse like any infinity.
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return fmt.Errorf("sample %s: value %q is not a number", clip(b), str)
	}
	*s = sampleValue(v)
	return nil
}

// decodeResponse reads the body of an instant query. It accepts a vector
// (the result of a metric name or an aggregation) and a scalar (the result
// of scalar(...) or a literal), and refuses matrices and strings, which
// cannot stand for one current value. An empty vector is errNoData.
func decodeResponse(body []byte) ([]sample, error) {
	var r apiResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("not a Prometheus API answer: %v", err)
	}
	switch r.Status {
	case "success":
	case "error":
		return nil, fmt.Errorf("query refused: %s: %s", r.ErrorType, r.Error)
	default:
		return nil, fmt.Errorf("not a Prometheus API answer: status %q", clip([]byte(r.Status)))
	}
	var d queryData
	if err := json.Unmarshal(r.Data, &d); err != nil {
		return nil, fmt.Errorf("not a query result: %v", err)
	}
	switch d.ResultType {
	case "vector":
		var entries []vectorEntry
		if err := json.Unmarshal(d.Result, &entries); err != nil {
			return nil, fmt.Errorf("vector result: %v", err)
		}
		if len(entries) == 0 {
			return nil, errNoData
		}
		out := make([]sample, len(entries))
		for i, e := range entries {
			out[i] = sample{labels: e.Metric}
			if e.Value == nil {
				// Native histograms come as "histogram", not "value".
				return nil, fmt.Errorf("series %s has no float value", out[i].series())
			}
			out[i].value = float64(*e.Value)
		}
		return out, nil
	case "scalar":
		var v sampleValue
		if err := json.Unmarshal(d.Result, &v); err != nil {
			return nil, fmt.Errorf("scalar result: %v", err)
		}
		return []sample{{value: float64(v)}}, nil
	default:
		return nil, fmt.Errorf("result type %q, want a vector: the expression must give instant values (no range selector like [5m])", clip([]byte(d.ResultType)))
	}
}

// instantQuery asks Prometheus for the current value of expr. Transport
// failures are told apart from answers, because "unreachable" and "did not
// answer in time" send an operator to different places.
func instantQuery(ctx context.Context, client *http.Client, endpoint string, expr string, timeout time.Duration) ([]sample, error) {
	qctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	params := url.Values{
		"query": {expr},
		// Prometheus stops evaluating when the caller stops waiting.
		"timeout": {strconv.FormatFloat(timeout.Seconds(), 'f', -1, 64)},
	}
	req, err := http.NewRequestWithContext(qctx, http.MethodGet, endpoint+"?"+params.Encode(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, transportError(ctx, err, timeout)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, transportError(ctx, err, timeout)
	}
	if len(body) > maxResponseBytes {
		return nil, fmt.Errorf("answer larger than %d MiB: the query matches far too many series", maxResponseBytes>>20)
	}
	if resp.StatusCode/100 != 2 {
		return nil, httpError(resp, body)
	}
	return decodeResponse(body)
}

func transportError(parent context.Context, err error, timeout time.Duration) error {
	switch {
	case parent.Err() != nil:
		return fmt.Errorf("poll cancelled: %w", parent.Err())
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("no answer within %s", timeout)
	default:
		return fmt.Errorf("server unreachable: %w", err)
	}
}

// httpError keeps Prometheus' own explanation when the body carries one
// (bad_data on 400, execution errors on 422, timeouts on 503), and a short
// piece of the body otherwise (a proxy's error page).
func httpError(resp *http.Response, body []byte) error {
	var r apiResponse
	if json.Unmarshal(body, &r) == nil && r.Status == "error" {
		return fmt.Errorf("HTTP %d: %s: %s", resp.StatusCode, r.ErrorType, r.Error)
	}
	text := strings.TrimSpace(string(body))
	if text == "" {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return fmt.Errorf("HTTP %d: %s", resp.StatusCode, clip([]byte(text)))
}

// clip shortens raw input quoted in a message.
func clip(b []byte) string {
	const max = 120
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}
