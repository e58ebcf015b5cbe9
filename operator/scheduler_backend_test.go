package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
)

func schedulingV1beta1(resources ...string) *metav1.APIResourceList {
	list := &metav1.APIResourceList{GroupVersion: "scheduling.k8s.io/v1beta1"}
	for _, name := range resources {
		list.APIResources = append(list.APIResources, metav1.APIResource{Name: name, Namespaced: true})
	}
	return list
}

func TestResolveSchedulerBackend(t *testing.T) {
	unreachable := errors.New("connection refused")
	tests := []struct {
		name      string
		requested configv1alpha1.SchedulerBackend
		served    []*metav1.APIResourceList
		// discoveryErr makes every discovery call fail.
		discoveryErr error
		want         configv1alpha1.SchedulerBackend
		wantReason   string
		wantErr      string
	}{
		{
			name:         "none is taken as configured without asking the API server",
			requested:    configv1alpha1.SchedulerBackendNone,
			discoveryErr: unreachable,
			want:         configv1alpha1.SchedulerBackendNone,
			wantReason:   "configured",
		},
		{
			name:       "auto picks workload when workloads and podgroups are served",
			requested:  configv1alpha1.SchedulerBackendAuto,
			served:     []*metav1.APIResourceList{schedulingV1beta1("priorityclasses", "workloads", "podgroups", "podgroups/status")},
			want:       configv1alpha1.SchedulerBackendWorkload,
			wantReason: "detected: the API server serves scheduling.k8s.io/v1beta1 workloads and podgroups",
		},
		{
			name:       "auto picks none when the group version is not served",
			requested:  configv1alpha1.SchedulerBackendAuto,
			served:     []*metav1.APIResourceList{{GroupVersion: "scheduling.k8s.io/v1"}},
			want:       configv1alpha1.SchedulerBackendNone,
			wantReason: "detected: the API server does not serve scheduling.k8s.io/v1beta1 workloads and podgroups",
		},
		{
			name:       "auto picks none when only some resources are served",
			requested:  configv1alpha1.SchedulerBackendAuto,
			served:     []*metav1.APIResourceList{schedulingV1beta1("priorityclasses", "workloads")},
			want:       configv1alpha1.SchedulerBackendNone,
			wantReason: "detected: the API server does not serve scheduling.k8s.io/v1beta1 podgroups",
		},
		{
			name:       "forced workload that is served",
			requested:  configv1alpha1.SchedulerBackendWorkload,
			served:     []*metav1.APIResourceList{schedulingV1beta1("workloads", "podgroups")},
			want:       configv1alpha1.SchedulerBackendWorkload,
			wantReason: "configured; scheduling.k8s.io/v1beta1 is served",
		},
		{
			name:      "forced workload that is not served is an error",
			requested: configv1alpha1.SchedulerBackendWorkload,
			served:    []*metav1.APIResourceList{schedulingV1beta1("workloads")},
			wantErr:   `scheduler backend "workload" needs the API server to serve scheduling.k8s.io/v1beta1 workloads and podgroups, but it does not serve podgroups`,
		},
		{
			name:         "auto does not guess when discovery fails",
			requested:    configv1alpha1.SchedulerBackendAuto,
			discoveryErr: unreachable,
			wantErr:      "discovering the resources of scheduling.k8s.io/v1beta1: connection refused",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			discovery := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: tc.served}}
			if tc.discoveryErr != nil {
				discovery.AddReactor("*", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, tc.discoveryErr
				})
			}
			got, err := resolveSchedulerBackend(context.Background(), discovery, tc.requested)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if got.Backend != tc.want || got.Reason != tc.wantReason {
				t.Errorf("got backend %q (%s), want %q (%s)", got.Backend, got.Reason, tc.want, tc.wantReason)
			}
		})
	}
}
