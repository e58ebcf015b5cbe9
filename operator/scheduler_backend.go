package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
)

// workloadSchedulingResources are the resources of scheduling.k8s.io/v1beta1
// that the "workload" backend creates; both must be served for it to work.
var workloadSchedulingResources = []string{"workloads", "podgroups"}

// groupVersionResourceLister is the part of the discovery client that
// backend detection needs.
type groupVersionResourceLister interface {
	ServerResourcesForGroupVersionWithContext(ctx context.Context, groupVersion string) (*metav1.APIResourceList, error)
}

// schedulerBackendDecision is the backend the operator will use, and why.
type schedulerBackendDecision struct {
	Backend configv1alpha1.SchedulerBackend
	Reason  string
}

// resolveSchedulerBackend turns the configured backend into the one the
// operator runs with. "auto" becomes "workload" when the API server serves
// the workload scheduling API and "none" otherwise; a forced "workload" that
// is not served is an error, as every gang would otherwise be left pending.
// An unreachable API server is an error too, rather than a silent "none" that
// would stick until the next restart.
func resolveSchedulerBackend(ctx context.Context, discovery groupVersionResourceLister,
	requested configv1alpha1.SchedulerBackend) (schedulerBackendDecision, error) {
	if requested == configv1alpha1.SchedulerBackendNone {
		return schedulerBackendDecision{Backend: requested, Reason: "configured"}, nil
	}

	missing, err := missingWorkloadSchedulingResources(ctx, discovery)
	if err != nil {
		return schedulerBackendDecision{}, err
	}
	groupVersion := schedulingv1beta1.SchemeGroupVersion.String()
	served := len(missing) == 0

	switch {
	case requested == configv1alpha1.SchedulerBackendWorkload && !served:
		return schedulerBackendDecision{}, fmt.Errorf(
			"scheduler backend %q needs the API server to serve %s %s, but it does not serve %s "+
				"(enable that API version and its feature gates, or choose scheduler backend %q or %q)",
			requested, groupVersion, strings.Join(workloadSchedulingResources, " and "), strings.Join(missing, " and "),
			configv1alpha1.SchedulerBackendAuto, configv1alpha1.SchedulerBackendNone)
	case requested == configv1alpha1.SchedulerBackendWorkload:
		return schedulerBackendDecision{Backend: requested, Reason: "configured; " + groupVersion + " is served"}, nil
	case served:
		return schedulerBackendDecision{
			Backend: configv1alpha1.SchedulerBackendWorkload,
			Reason:  fmt.Sprintf("detected: the API server serves %s %s", groupVersion, strings.Join(workloadSchedulingResources, " and ")),
		}, nil
	default:
		return schedulerBackendDecision{
			Backend: configv1alpha1.SchedulerBackendNone,
			Reason:  fmt.Sprintf("detected: the API server does not serve %s %s", groupVersion, strings.Join(missing, " and ")),
		}, nil
	}
}

// missingWorkloadSchedulingResources lists the workload scheduling resources
// the API server does not serve.
func missingWorkloadSchedulingResources(ctx context.Context, discovery groupVersionResourceLister) ([]string, error) {
	groupVersion := schedulingv1beta1.SchemeGroupVersion.String()
	resources, err := discovery.ServerResourcesForGroupVersionWithContext(ctx, groupVersion)
	if apierrors.IsNotFound(err) {
		return workloadSchedulingResources, nil
	}
	if err != nil {
		return nil, fmt.Errorf("discovering the resources of %s: %w", groupVersion, err)
	}
	var missing []string
	for _, want := range workloadSchedulingResources {
		if !slices.ContainsFunc(resources.APIResources, func(r metav1.APIResource) bool { return r.Name == want }) {
			missing = append(missing, want)
		}
	}
	return missing, nil
}
