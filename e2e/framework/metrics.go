package framework

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
)

// metricsScrapeTimeout bounds one scrape.
const metricsScrapeTimeout = 30 * time.Second

// Metrics is one scrape of a Prometheus text endpoint: the metric families
// by name.
type Metrics map[string]*dto.MetricFamily

// ParseMetrics parses the Prometheus text format.
func ParseMetrics(r io.Reader) (Metrics, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	return families, nil
}

// ScrapeMetrics reads a plain-HTTP metrics endpoint, such as the operator's
// (Operator.MetricsURL).
func ScrapeMetrics(ctx context.Context, url string) (Metrics, error) {
	if url == "" {
		return nil, fmt.Errorf("scrape metrics: no metrics endpoint")
	}
	ctx, cancel := context.WithTimeout(ctx, metricsScrapeTimeout)
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
	m, err := ParseMetrics(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	return m, nil
}

// ScrapeAPIServerMetrics reads the API server's /metrics through cs (the
// admin client may; most identities may not).
func ScrapeAPIServerMetrics(ctx context.Context, cs kubernetes.Interface) (Metrics, error) {
	ctx, cancel := context.WithTimeout(ctx, metricsScrapeTimeout)
	defer cancel()
	stream, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").Stream(ctx)
	if err != nil {
		return nil, fmt.Errorf("scrape the API server's /metrics: %w", err)
	}
	defer func() { _ = stream.Close() }()
	m, err := ParseMetrics(stream)
	if err != nil {
		return nil, fmt.Errorf("scrape the API server's /metrics: %w", err)
	}
	return m, nil
}

// Sample is one series of a counter, gauge or untyped metric.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Samples returns the series of name whose labels include every pair of
// match (a value "" matches only an absent or empty label). Histograms and
// summaries contribute their sample count.
func (m Metrics) Samples(name string, match map[string]string) []Sample {
	family := m[name]
	if family == nil {
		return nil
	}
	var out []Sample
	for _, metric := range family.GetMetric() {
		labels := map[string]string{}
		for _, pair := range metric.GetLabel() {
			labels[pair.GetName()] = pair.GetValue()
		}
		if !matches(labels, match) {
			continue
		}
		var v float64
		switch {
		case metric.Counter != nil:
			v = metric.GetCounter().GetValue()
		case metric.Gauge != nil:
			v = metric.GetGauge().GetValue()
		case metric.Untyped != nil:
			v = metric.GetUntyped().GetValue()
		case metric.Histogram != nil:
			v = float64(metric.GetHistogram().GetSampleCount())
		case metric.Summary != nil:
			v = float64(metric.GetSummary().GetSampleCount())
		}
		out = append(out, Sample{Labels: labels, Value: v})
	}
	return out
}

func matches(labels, match map[string]string) bool {
	for k, want := range match {
		if labels[k] != want {
			return false
		}
	}
	return true
}

// Sum adds the values of the series of name that match.
func (m Metrics) Sum(name string, match map[string]string) float64 {
	var sum float64
	for _, s := range m.Samples(name, match) {
		sum += s.Value
	}
	return sum
}

// SumBy adds the values of the series of name that match, grouped by the
// values of the given labels (joined with "/").
func (m Metrics) SumBy(name string, match map[string]string, labels ...string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range m.Samples(name, match) {
		key := make([]string, len(labels))
		for i, l := range labels {
			key[i] = s.Labels[l]
		}
		out[strings.Join(key, "/")] += s.Value
	}
	return out
}

// HistogramSum is the sum of the observations of the histograms of name
// that match (e.g. total seconds waited).
func (m Metrics) HistogramSum(name string, match map[string]string) float64 {
	family := m[name]
	if family == nil {
		return 0
	}
	var sum float64
	for _, metric := range family.GetMetric() {
		labels := map[string]string{}
		for _, pair := range metric.GetLabel() {
			labels[pair.GetName()] = pair.GetValue()
		}
		if metric.Histogram != nil && matches(labels, match) {
			sum += metric.GetHistogram().GetSampleSum()
		}
	}
	return sum
}

// Names lists the metric names of the scrape, sorted.
func (m Metrics) Names() []string { return slices.Sorted(maps.Keys(m)) }
