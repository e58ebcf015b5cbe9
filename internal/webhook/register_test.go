package webhook

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook/webhooktest"
)

// These tests send AdmissionReviews through the registered handlers as the
// API server would, to cover what the pure rule tests cannot: decoding with
// the webhook's scheme, the JSON patch, and the status returned on denial.

// newMux registers the webhooks, with the default limits, with a fake API
// reader holding objs.
func newMux(t *testing.T, objs ...client.Object) http.Handler {
	t.Helper()
	return newMuxWithLimits(t, webhooktest.DefaultLimits, objs...)
}

func newMuxWithLimits(t *testing.T, limits configv1alpha1.LimitsConfiguration, objs ...client.Object) http.Handler {
	t.Helper()
	server := ctrlwebhook.NewServer(ctrlwebhook.Options{})
	if err := Register(server, webhooktest.Reader(t, objs...), limits, Features{TrainJob: true, TopologyAware: true}); err != nil {
		t.Fatalf("Register: %v", err)
	}
	return server.WebhookMux()
}

const minimalPodCliqueSet = `{
  "apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet",
  "metadata": {"name": "llm", "namespace": "ml"},
  "spec": {"replicas": 1, "template": {"cliques": [
    {"name": "worker", "spec": {"roleName": "worker", "replicas": 3,
      "podSpec": {"containers": [{"name": "main", "image": "example.com/llm:1"}]}}}]}}}`

func review(t *testing.T, mux http.Handler, path string, operation admissionv1.Operation, object, oldObject string) *admissionv1.AdmissionResponse {
	t.Helper()
	return reviewRequest(t, mux, path, &admissionv1.AdmissionRequest{
		UID:       "3f1c1c1e-0000-4000-8000-000000000001",
		Operation: operation,
		Object:    runtime.RawExtension{Raw: []byte(object)},
	}, oldObject)
}

func reviewRequest(t *testing.T, mux http.Handler, path string, admissionRequest *admissionv1.AdmissionRequest, oldObject string) *admissionv1.AdmissionResponse {
	t.Helper()
	request := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  admissionRequest,
	}
	if oldObject != "" {
		request.Request.OldObject = runtime.RawExtension{Raw: []byte(oldObject)}
	}
	body, err := json.Marshal(request)
	if err != nil {
		t.Fatal(err)
	}
	httpRequest := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	httpRequest.Header.Set("Content-Type", "application/json")
	recorder := httptest.NewRecorder()
	mux.ServeHTTP(recorder, httpRequest)
	if recorder.Code != http.StatusOK {
		t.Fatalf("POST %s: status %d: %s", path, recorder.Code, recorder.Body)
	}
	var response admissionv1.AdmissionReview
	if err := json.Unmarshal(recorder.Body.Bytes(), &response); err != nil {
		t.Fatalf("decoding the AdmissionReview from %s: %v", path, err)
	}
	if response.Response == nil || response.Response.UID != request.Request.UID {
		t.Fatalf("response from %s does not answer the request: %+v", path, response.Response)
	}
	return response.Response
}

func TestEveryEndpointIsServed(t *testing.T) {
	mux := newMux(t)
	for _, endpoint := range Endpoints() {
		review(t, mux, endpoint.Path, admissionv1.Delete, "{}", "{}")
	}
}

func TestDefaultingWebhookPatchesDefaults(t *testing.T) {
	response := review(t, newMux(t), MutatePodCliqueSetPath, admissionv1.Create, minimalPodCliqueSet, "")
	if !response.Allowed {
		t.Fatalf("defaulting denied the request: %+v", response.Result)
	}
	var patch []struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}
	if err := json.Unmarshal(response.Patch, &patch); err != nil {
		t.Fatalf("decoding the patch %s: %v", response.Patch, err)
	}
	want := map[string]any{
		"/spec/template/terminationDelay":                     "4h0m0s",
		"/spec/template/cliques/0/spec/minAvailable":          float64(3),
		"/spec/workloadType":                                  "Inference",
		"/spec/template/cliques/0/spec/podSpec/restartPolicy": "Always",
	}
	got := map[string]any{}
	for _, op := range patch {
		if op.Op == "remove" {
			t.Errorf("the patch removes %s; defaulting must only add", op.Path)
		}
		got[op.Path] = op.Value
	}
	for path, value := range want {
		if got[path] != value {
			t.Errorf("patch sets %s to %v, want %v (patch: %s)", path, got[path], value, response.Patch)
		}
	}
}

func TestValidatingWebhookDeniesWithFieldAndRule(t *testing.T) {
	invalid := strings.Replace(minimalPodCliqueSet, `"replicas": 3,`, `"replicas": 3, "minAvailable": 5,`, 1)
	response := review(t, newMux(t), ValidatePodCliqueSetPath, admissionv1.Create, invalid, "")
	if response.Allowed {
		t.Fatal("a PodCliqueSet with minAvailable above replicas was allowed")
	}
	want := `PodCliqueSet.grove.io "llm" is invalid: spec.template.cliques[0].spec.minAvailable: Invalid value: 5: ` +
		`must not be greater than spec.template.cliques[0].spec.replicas (3)`
	if response.Result == nil || response.Result.Message != want || response.Result.Code != http.StatusUnprocessableEntity ||
		response.Result.Reason != metav1.StatusReasonInvalid {
		t.Errorf("result = %+v, want code 422, reason Invalid, message %q", response.Result, want)
	}
}

func TestValidatingWebhookChecksUpdates(t *testing.T) {
	renamed := strings.Replace(minimalPodCliqueSet, `"roleName": "worker"`, `"roleName": "trainer"`, 1)
	response := review(t, newMux(t), ValidatePodCliqueSetPath, admissionv1.Update, renamed, minimalPodCliqueSet)
	if response.Allowed || !strings.Contains(response.Result.Message, `spec.template.cliques[0].spec.roleName: Invalid value: "trainer": field is immutable`) {
		t.Errorf("changing roleName: allowed=%v, result %+v", response.Allowed, response.Result)
	}
}

func TestPodCliqueAndScalingGroupWebhooks(t *testing.T) {
	mux := newMux(t)
	tests := []struct {
		path, object, wantDenial string
	}{
		{
			path:   ValidatePodCliquePath,
			object: `{"apiVersion": "grove.io/v1alpha1", "kind": "PodClique", "metadata": {"name": "llm-0-worker"}, "spec": {"roleName": "worker", "replicas": 2, "minAvailable": 2, "podSpec": {"containers": []}}}`,
		},
		{
			path:       ValidatePodCliquePath,
			object:     `{"apiVersion": "grove.io/v1alpha1", "kind": "PodClique", "metadata": {"name": "llm-0-worker"}, "spec": {"roleName": "worker", "replicas": 2, "minAvailable": 3, "podSpec": {"containers": []}}}`,
			wantDenial: `PodClique.grove.io "llm-0-worker" is invalid: spec.minAvailable: Invalid value: 3: must not be greater than spec.replicas (2)`,
		},
		{
			path:   ValidatePodCliqueScalingGroupPath,
			object: `{"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueScalingGroup", "metadata": {"name": "llm-0-decode"}, "spec": {"replicas": 2, "minAvailable": 1, "cliqueNames": ["worker"]}}`,
		},
		{
			path:       ValidatePodCliqueScalingGroupPath,
			object:     `{"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueScalingGroup", "metadata": {"name": "llm-0-decode"}, "spec": {"replicas": 0, "minAvailable": 1, "cliqueNames": ["worker"]}}`,
			wantDenial: `PodCliqueScalingGroup.grove.io "llm-0-decode" is invalid: spec.replicas: Invalid value: 0: must be at least 1`,
		},
	}
	for _, tc := range tests {
		response := review(t, mux, tc.path, admissionv1.Create, tc.object, "")
		switch {
		case tc.wantDenial == "" && !response.Allowed:
			t.Errorf("%s denied %s: %+v", tc.path, tc.object, response.Result)
		case tc.wantDenial != "" && (response.Allowed || response.Result.Message != tc.wantDenial):
			t.Errorf("%s: allowed=%v, result %+v, want denial %q", tc.path, response.Allowed, response.Result, tc.wantDenial)
		}
	}
}
