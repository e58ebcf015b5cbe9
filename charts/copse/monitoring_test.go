package copse_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/copse-dev/copse/e2e/cluster"
	copsemetrics "github.com/copse-dev/copse/internal/metrics"
)

// The Prometheus Operator's kinds the monitoring templates need served.
const (
	serviceMonitorKind = "monitoring.coreos.com/v1/ServiceMonitor"
	prometheusRuleKind = "monitoring.coreos.com/v1/PrometheusRule"
)

// promtool returns the pinned promtool, building it into the tool cache
// when it is not there yet. There is no skipping: the alert rules are
// tested by Prometheus' own rule engine or not at all.
func promtool(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	path, err := cluster.EnsureToolBinary(ctx, "promtool", os.Stderr)
	if err != nil {
		t.Fatalf("the pinned promtool is needed to test the alert rules and could not be built: %v", err)
	}
	return path
}

// TestAlertRules checks the rule file with `promtool check rules` and runs
// its unit tests (files/alerts_test.yaml) with `promtool test rules`.
func TestAlertRules(t *testing.T) {
	bin := promtool(t)
	files := filepath.Join(chartDir(t), "files")
	for _, args := range [][]string{{"check", "rules", "alerts.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.Command(bin, args...)
		cmd.Dir = files
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestMonitoringObjects: the PrometheusRule holds exactly the rule file's
// groups, the dashboard ConfigMap the dashboard, each only when asked and
// (the PrometheusRule) when the cluster serves the kind.
func TestMonitoringObjects(t *testing.T) {
	values := map[string]any{"metrics": map[string]any{
		"prometheusRule": map[string]any{"enabled": true, "labels": map[string]any{"release": "kube-prometheus"}},
		"dashboard":      map[string]any{"enabled": true, "namespace": "monitoring"},
	}}
	docs := template(t, values, prometheusRuleKind)

	rule, ok := docs["PrometheusRule/copse-system/copse-operator"]
	if !ok {
		t.Fatalf("no PrometheusRule rendered; documents: %v", sortedKeys(docs))
	}
	if got := rule["metadata"].(map[string]any)["labels"].(map[string]any)["release"]; got != "kube-prometheus" {
		t.Errorf("PrometheusRule label release = %v", got)
	}
	data, err := os.ReadFile(filepath.Join(chartDir(t), "files", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var file map[string]any
	if err := yaml.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	if got := rule["spec"].(map[string]any)["groups"]; !reflect.DeepEqual(got, file["groups"]) {
		t.Errorf("the PrometheusRule's groups differ from files/alerts.yaml:\n%v\n%v", got, file["groups"])
	}

	cm := &corev1.ConfigMap{}
	get(t, docs, "ConfigMap/monitoring/copse-operator-dashboard", cm)
	if cm.Labels["grafana_dashboard"] != "1" {
		t.Errorf("dashboard ConfigMap labels %v: Grafana's sidecar selects grafana_dashboard=1", cm.Labels)
	}
	dashboard, err := os.ReadFile(filepath.Join(chartDir(t), "files", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(cm.Data["copse.json"]) != strings.TrimSpace(string(dashboard)) {
		t.Error("the ConfigMap's copse.json differs from files/dashboard.json")
	}

	if _, ok := template(t, values)["PrometheusRule/copse-system/copse-operator"]; ok {
		t.Error("a PrometheusRule is rendered on a cluster that does not serve the kind")
	}
	plain := template(t, nil, prometheusRuleKind)
	for _, key := range []string{"PrometheusRule/copse-system/copse-operator", "ConfigMap/copse-system/copse-operator-dashboard"} {
		if _, ok := plain[key]; ok {
			t.Errorf("%s is rendered by default", key)
		}
	}
}

// metricName finds the metric names in a PromQL expression; fqName the
// name in a metric's description.
var (
	metricName = regexp.MustCompile(`\b(copse_[a-z_]+)`)
	fqName     = regexp.MustCompile(`fqName: "([^"]+)"`)
)

// TestDashboardAndAlertsNameOnlyCopseMetricsThatExist fails when a copse
// metric the dashboard or an alert uses is renamed or removed. (The e2e
// metrics spec checks every name, controller-runtime's included, against a
// scrape of the running operator.)
func TestDashboardAndAlertsNameOnlyCopseMetricsThatExist(t *testing.T) {
	known := map[string]bool{}
	for _, c := range copsemetrics.Collectors() {
		ch := make(chan *prometheus.Desc, 32)
		c.Describe(ch)
		close(ch)
		for d := range ch {
			name := fqName.FindStringSubmatch(d.String())[1]
			known[name] = true
		}
	}
	if len(known) == 0 {
		t.Fatal("internal/metrics describes no metric")
	}
	var exprs []string
	data, err := os.ReadFile(filepath.Join(chartDir(t), "files", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dashboard struct {
		Panels []struct {
			Targets []struct{ Expr string } `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dashboard); err != nil {
		t.Fatalf("files/dashboard.json: %v", err)
	}
	for _, p := range dashboard.Panels {
		for _, target := range p.Targets {
			exprs = append(exprs, target.Expr)
		}
	}
	rules, err := os.ReadFile(filepath.Join(chartDir(t), "files", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Rules []struct{ Expr string } `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(rules, &file); err != nil {
		t.Fatal(err)
	}
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
		}
	}
	used := map[string]bool{}
	for _, e := range exprs {
		for _, m := range metricName.FindAllString(e, -1) {
			base := m
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if trimmed, ok := strings.CutSuffix(m, suffix); ok && known[trimmed] {
					base = trimmed
				}
			}
			used[base] = true
			if !known[base] {
				t.Errorf("%q names %s, which internal/metrics does not have", e, m)
			}
		}
	}
	for name := range known {
		if !used[name] {
			t.Errorf("metric %s is on no dashboard panel and in no alert", name)
		}
	}
	if len(exprs) < 10 || !slices.ContainsFunc(exprs, func(e string) bool { return strings.Contains(e, "controller_runtime_") }) {
		t.Errorf("expected the dashboard's and the alerts' expressions, got %d", len(exprs))
	}
}
