package bench

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// RequestCounts is the operator's rest_client_requests_total, summed over
// hosts: method -> status code -> requests. controller-runtime registers
// client-go's request metric with the labels code, method and host only; it
// has no path, so requests cannot be told apart by resource here.
type RequestCounts map[string]map[string]float64

// writeMethods are the HTTP methods that change state.
var writeMethods = []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// ScrapeRequestCounts reads the request counter from a Prometheus text
// endpoint.
func ScrapeRequestCounts(ctx context.Context, url string) (RequestCounts, error) {
	if url == "" {
		return nil, fmt.Errorf("scrape metrics: the operator serves no metrics")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", url, resp.Status)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	return parseRequestCounts(string(body))
}

// parseRequestCounts extracts rest_client_requests_total samples from the
// Prometheus text format.
func parseRequestCounts(text string) (RequestCounts, error) {
	const name = "rest_client_requests_total"
	counts := RequestCounts{}
	found := false
	for line := range strings.SplitSeq(text, "\n") {
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		end := strings.LastIndexByte(line, '}')
		if end < 0 {
			return nil, fmt.Errorf("malformed sample %q", line)
		}
		labels := parseLabels(line[len(name)+1 : end])
		fields := strings.Fields(line[end+1:])
		if len(fields) == 0 {
			return nil, fmt.Errorf("sample without value %q", line)
		}
		value, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("sample %q: %w", line, err)
		}
		method, code := labels["method"], labels["code"]
		if counts[method] == nil {
			counts[method] = map[string]float64{}
		}
		counts[method][code] += value
		found = true
	}
	if !found {
		return nil, fmt.Errorf("no %s samples in the metrics", name)
	}
	return counts, nil
}

// parseLabels parses `a="x",b="y"` (values without escaped quotes, which
// methods, codes and host:port never have).
func parseLabels(s string) map[string]string {
	out := map[string]string{}
	for s != "" {
		key, rest, ok := strings.Cut(s, `="`)
		if !ok {
			break
		}
		value, rest, _ := strings.Cut(rest, `"`)
		out[strings.TrimSpace(key)] = value
		s = strings.TrimPrefix(rest, ",")
	}
	return out
}

// Sub returns c - before, per method and code.
func (c RequestCounts) Sub(before RequestCounts) RequestCounts {
	out := RequestCounts{}
	for method, codes := range c {
		for code, v := range codes {
			if d := v - before[method][code]; d != 0 {
				if out[method] == nil {
					out[method] = map[string]float64{}
				}
				out[method][code] = d
			}
		}
	}
	return out
}

// Method is the number of requests with method, any code.
func (c RequestCounts) Method(method string) float64 {
	var sum float64
	for _, v := range c[method] {
		sum += v
	}
	return sum
}

// Writes is the number of POST, PUT, PATCH and DELETE requests.
func (c RequestCounts) Writes() float64 {
	var sum float64
	for _, m := range writeMethods {
		sum += c.Method(m)
	}
	return sum
}

// Conflicts is the number of requests answered 409 (optimistic-lock
// conflicts and AlreadyExists), any method.
func (c RequestCounts) Conflicts() float64 {
	var sum float64
	for _, codes := range c {
		sum += codes["409"]
	}
	return sum
}

// ByMethod flattens the counts to method -> requests, for the report.
func (c RequestCounts) ByMethod() map[string]float64 {
	out := map[string]float64{}
	for _, m := range slices.Sorted(maps.Keys(c)) {
		out[m] = c.Method(m)
	}
	return out
}
