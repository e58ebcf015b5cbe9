package bench

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/copse-dev/copse/e2e/framework"
)

// RequestCounts is the operator's rest_client_requests_total, summed over
// hosts: method -> status code -> requests. controller-runtime registers
// client-go's request metric with the labels code, method and host only; it
// has no path, so requests cannot be told apart by resource here (the API
// server's metrics can: APIServerCost).
type RequestCounts map[string]map[string]float64

// writeMethods are the HTTP methods that change state.
var writeMethods = []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// operatorRequestCounts extracts rest_client_requests_total from a scrape of
// the operator's metrics.
func operatorRequestCounts(m framework.Metrics) (RequestCounts, error) {
	const name = "rest_client_requests_total"
	samples := m.Samples(name, nil)
	if len(samples) == 0 {
		return nil, fmt.Errorf("no %s samples in the operator's metrics", name)
	}
	counts := RequestCounts{}
	for _, s := range samples {
		method, code := s.Labels["method"], s.Labels["code"]
		if counts[method] == nil {
			counts[method] = map[string]float64{}
		}
		counts[method][code] += s.Value
	}
	return counts, nil
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

// ReconcileCost is what one controller of the operator did during a run,
// from controller-runtime's metrics.
type ReconcileCost struct {
	// Reconciles is controller_runtime_reconcile_total, any result.
	Reconciles float64 `json:"reconciles"`
	// Seconds is the time spent in Reconcile in all
	// (controller_runtime_reconcile_time_seconds), wall time, not CPU.
	Seconds float64 `json:"seconds"`
}

// reconcileCosts is, per controller, the difference of two scrapes of the
// operator's metrics.
func reconcileCosts(before, after framework.Metrics) map[string]ReconcileCost {
	const total, duration = "controller_runtime_reconcile_total", "controller_runtime_reconcile_time_seconds"
	out := map[string]ReconcileCost{}
	counts := subtract(after.SumBy(total, nil, "controller"), before.SumBy(total, nil, "controller"))
	for controller, n := range counts {
		match := map[string]string{"controller": controller}
		out[controller] = ReconcileCost{Reconciles: n, Seconds: after.HistogramSum(duration, match) - before.HistogramSum(duration, match)}
	}
	return out
}

// reconcileErrors is controller-runtime's controller_runtime_reconcile_errors_total
// of the operator, summed over its controllers.
func reconcileErrors(m framework.Metrics) float64 {
	return m.Sum("controller_runtime_reconcile_errors_total", nil)
}

// APIServerCost is what the API server's own metrics counted during one
// run. apiserver_request_total counts every client's requests; copse is the
// only client that writes grove.io objects, so those figures are its own.
type APIServerCost struct {
	// Requests is every request the API server answered, from any client.
	Requests float64 `json:"requests"`
	// GroveConflicts counts requests on grove.io objects answered 409
	// (optimistic-lock conflicts), by resource[/subresource].
	GroveConflicts map[string]float64 `json:"groveConflicts,omitempty"`
	// StatusWrites counts status write requests (PATCH, PUT or APPLY on the
	// status subresource, any outcome) on grove.io objects, by resource.
	StatusWrites map[string]float64 `json:"statusWrites,omitempty"`
	// ByFlowSchema counts the requests API Priority and Fairness dispatched,
	// by FlowSchema, which tells the clients apart (copse-operator,
	// kube-scheduler, kube-controller-manager, exempt for system:masters
	// such as kwok and this benchmark, ...).
	ByFlowSchema map[string]float64 `json:"byFlowSchema,omitempty"`
}

// apiServerCost is the difference of two scrapes of the API server's
// metrics.
func apiServerCost(before, after framework.Metrics) *APIServerCost {
	const requests = "apiserver_request_total"
	cost := &APIServerCost{
		Requests:       after.Sum(requests, nil) - before.Sum(requests, nil),
		GroveConflicts: map[string]float64{},
		StatusWrites:   map[string]float64{},
		ByFlowSchema:   subtract(after.SumBy("apiserver_flowcontrol_dispatched_requests_total", nil, "flow_schema"), before.SumBy("apiserver_flowcontrol_dispatched_requests_total", nil, "flow_schema")),
	}
	grove := map[string]string{"group": "grove.io"}
	for key, v := range subtract(after.SumBy(requests, grove, "code", "resource", "subresource", "verb"), before.SumBy(requests, grove, "code", "resource", "subresource", "verb")) {
		parts := strings.Split(key, "/") // code, resource, subresource, verb
		code, resource, subresource, verb := parts[0], parts[1], parts[2], parts[3]
		if code == "409" {
			name := resource
			if subresource != "" {
				name += "/" + subresource
			}
			cost.GroveConflicts[name] += v
		}
		if subresource == "status" && (verb == "PATCH" || verb == "PUT" || verb == "APPLY") {
			cost.StatusWrites[resource] += v
		}
	}
	return cost
}

// Conflicts is the grove.io requests answered 409.
func (c *APIServerCost) Conflicts() float64 {
	var sum float64
	for _, v := range c.GroveConflicts {
		sum += v
	}
	return sum
}

// subtract returns a - b per key, leaving out keys that did not change.
func subtract(a, b map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range a {
		if d := v - b[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}
