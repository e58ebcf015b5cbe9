package main

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
)

func pcs(name string, wt copsev1alpha1.WorkloadType, phase copsev1alpha1.PodCliqueSetPhase, restarts int32, failedReason string) copsev1alpha1.PodCliqueSet {
	p := copsev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Name: name}}
	p.Spec.WorkloadType = wt
	p.Status.Phase = phase
	p.Status.RestartCount = restarts
	if failedReason != "" {
		p.Status.Conditions = []metav1.Condition{{Type: copsev1alpha1.ConditionTypeFailed, Status: "True", Reason: failedReason}}
	}
	return p
}

func pod(pcsName string, phase corev1.PodPhase) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{labels.PartOfKey: pcsName}},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

func TestRowsAndTable(t *testing.T) {
	sets := []copsev1alpha1.PodCliqueSet{
		pcs("serve", copsev1alpha1.WorkloadTypeInference, copsev1alpha1.PodCliqueSetPhaseRunning, 0, ""),
		pcs("ok", copsev1alpha1.WorkloadTypeTraining, copsev1alpha1.PodCliqueSetPhaseSucceeded, 1, ""),
		pcs("broken", copsev1alpha1.WorkloadTypeTraining, copsev1alpha1.PodCliqueSetPhaseFailed, 2, copsev1alpha1.ReasonMaxRestartsExceeded),
	}
	pods := []corev1.Pod{
		pod("serve", corev1.PodRunning), pod("serve", corev1.PodPending),
		pod("ok", corev1.PodSucceeded), pod("ok", corev1.PodSucceeded),
		pod("broken", corev1.PodFailed),
	}
	rows := rowsOf(sets, pods)
	if rows[0].name != "broken" || rows[1].name != "ok" || rows[2].name != "serve" {
		t.Fatalf("order: %+v", rows)
	}
	if rows[2].running != 1 || rows[2].pending != 1 || rows[1].succeeded != 2 || rows[0].failed != 1 {
		t.Errorf("pod counts: %+v", rows)
	}
	out := tableString(rows)
	for _, want := range []string{"WORKLOAD", "broken", "MaxRestartsExceeded", "Succeeded", "Inference"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if !trainingDone(sets) {
		t.Errorf("both Training workloads are terminal")
	}
	sets[1].Status.Phase = copsev1alpha1.PodCliqueSetPhaseRunning
	if trainingDone(sets) {
		t.Errorf("a Running Training workload is not done")
	}
}
