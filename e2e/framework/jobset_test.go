package framework

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// A webhook component shaped like JobSet's: a Service and one configuration
// of each kind whose webhooks call that Service.
const (
	componentService = `apiVersion: v1
kind: Service
metadata:
  name: hooks
  namespace: system
spec:
  ports:
  - port: 443
`
	componentMutating = `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: mutating-hooks
  annotations:
    dropped: "yes"
webhooks:
- name: mthing.example.com
  admissionReviewVersions: ["v1"]
  sideEffects: None
  failurePolicy: Fail
  clientConfig:
    service: {name: hooks, namespace: system, path: /mutate-thing}
- name: mpod.example.com
  admissionReviewVersions: ["v1"]
  sideEffects: None
  objectSelector:
    matchExpressions:
    - {key: example.com/owner, operator: Exists}
  clientConfig:
    service: {name: hooks, namespace: system, path: /mutate-pod}
`
	componentValidating = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: validating-hooks
webhooks:
- name: vthing.example.com
  admissionReviewVersions: ["v1"]
  sideEffects: None
  clientConfig:
    service: {name: hooks, namespace: system, path: /validate-thing}
`
)

func TestComponentWebhookConfigurations(t *testing.T) {
	const base = "https://127.0.0.1:9443"
	ca := []byte("test CA")
	tests := []struct {
		name      string
		rendered  string
		wantError string
	}{
		{name: "a Service and one configuration of each kind", rendered: strings.Join([]string{componentService, componentMutating, componentValidating}, "---\n")},
		{name: "no validating configuration", rendered: componentService + "---\n" + componentMutating,
			wantError: "lacks a MutatingWebhookConfiguration or a ValidatingWebhookConfiguration"},
		{name: "two mutating configurations", rendered: strings.Join([]string{componentMutating, componentMutating, componentValidating}, "---\n"),
			wantError: "more than one MutatingWebhookConfiguration"},
		{name: "a webhook called by URL", rendered: componentMutating + "---\n" +
			strings.Replace(componentValidating, "service: {name: hooks, namespace: system, path: /validate-thing}", "url: https://elsewhere/validate", 1),
			wantError: "JobSet's webhook vthing.example.com: clientConfig.service.path is not set"},
		{name: "not YAML", rendered: "kind: [", wantError: "decode JobSet's webhook component"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mutating, validating, err := componentWebhookConfigurations([]byte(tt.rendered), "JobSet", jobSetNamePrefix, base, ca)
			if tt.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantError) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if mutating.Name != "jobset-mutating-hooks" || validating.Name != "jobset-validating-hooks" {
				t.Errorf("names = %q, %q; want JobSet's prefix on the component's names", mutating.Name, validating.Name)
			}
			if len(mutating.Annotations) != 0 {
				t.Errorf("annotations = %v; want none kept", mutating.Annotations)
			}
			want := map[string]string{
				"mthing.example.com": base + "/mutate-thing",
				"mpod.example.com":   base + "/mutate-pod",
				"vthing.example.com": base + "/validate-thing",
			}
			got := map[string]admissionregistrationv1.WebhookClientConfig{}
			for _, w := range mutating.Webhooks {
				got[w.Name] = w.ClientConfig
			}
			for _, w := range validating.Webhooks {
				got[w.Name] = w.ClientConfig
			}
			if len(got) != len(want) {
				t.Fatalf("webhooks = %v, want %v", got, want)
			}
			for name, url := range want {
				config := got[name]
				if config.Service != nil || ptr.Deref(config.URL, "") != url || string(config.CABundle) != string(ca) {
					t.Errorf("%s: clientConfig = {service %v, url %v, caBundle %q}; want url %s and the test CA only",
						name, config.Service, ptr.Deref(config.URL, "<nil>"), config.CABundle, url)
				}
			}
			wantSelector := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "example.com/owner", Operator: metav1.LabelSelectorOpExists},
			}}
			if s := mutating.Webhooks[1].ObjectSelector; s == nil || s.String() != wantSelector.String() {
				t.Errorf("objectSelector = %v, want the component's %v", s, wantSelector)
			}
			if p := mutating.Webhooks[0].FailurePolicy; p == nil || *p != admissionregistrationv1.Fail {
				t.Errorf("failurePolicy = %v, want the component's Fail", p)
			}
		})
	}
}
