package trainjob

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
)

func TestStampRuntimePatches(t *testing.T) {
	earlier := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := metav1.NewTime(time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC))
	patch := func(manager string, nodeSelector string, when *metav1.Time) trainerv1alpha1.RuntimePatch {
		return trainerv1alpha1.RuntimePatch{Manager: manager, Time: when, TrainingRuntimeSpec: &trainerv1alpha1.TrainingRuntimeSpecPatch{
			Template: &trainerv1alpha1.JobSetTemplatePatch{Spec: &trainerv1alpha1.JobSetSpecPatch{ReplicatedJobs: []trainerv1alpha1.ReplicatedJobPatch{{
				Name: "node", Template: &trainerv1alpha1.JobTemplatePatch{Spec: &trainerv1alpha1.JobSpecPatch{Template: &trainerv1alpha1.PodTemplatePatch{
					Spec: &trainerv1alpha1.PodSpecPatch{NodeSelector: map[string]string{"pool": nodeSelector}}}}}}}}}}}
	}
	withPatches := func(p ...trainerv1alpha1.RuntimePatch) *trainerv1alpha1.TrainJob {
		return &trainerv1alpha1.TrainJob{Spec: trainerv1alpha1.TrainJobSpec{RuntimePatches: p}}
	}
	cases := []struct {
		name     string
		old, new *trainerv1alpha1.TrainJob
		want     []*metav1.Time
	}{
		{"create: a patch without a time gets now", nil, withPatches(patch("a", "x", nil)), []*metav1.Time{&now}},
		{"create: a given time is kept", nil, withPatches(patch("a", "x", &earlier)), []*metav1.Time{&earlier}},
		{"update: an unchanged patch keeps its time, even if the client dropped it",
			withPatches(patch("a", "x", &earlier)), withPatches(patch("a", "x", nil)), []*metav1.Time{&earlier}},
		{"update: a changed patch gets now",
			withPatches(patch("a", "x", &earlier)), withPatches(patch("a", "y", &earlier)), []*metav1.Time{&now}},
		{"update: a new manager's patch gets now, the other keeps its time",
			withPatches(patch("a", "x", &earlier)), withPatches(patch("a", "x", &earlier), patch("b", "x", nil)), []*metav1.Time{&earlier, &now}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			StampRuntimePatches(tc.old, tc.new, now)
			for i, want := range tc.want {
				if got := tc.new.Spec.RuntimePatches[i].Time; got == nil || !got.Equal(want) {
					t.Errorf("patch %d time %v, want %v", i, got, want)
				}
			}
		})
	}
}
