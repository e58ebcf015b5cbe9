package podclique

import (
	"testing"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/podstate"
)

func TestUpdateStatus(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC))
	started := metav1.NewTime(now.Add(-time.Minute))
	pod := func(hash string, ready bool) podstate.Summary {
		return podstate.Summary{TemplateHash: hash, Ready: ready, Phase: "Running"}
	}
	clique := func(label string) *copsev1alpha1.PodClique {
		c := &copsev1alpha1.PodClique{}
		c.Labels = map[string]string{labels.PodTemplateHashKey: label}
		c.Spec.Replicas, c.Spec.MinAvailable = 2, ptr.To[int32](2)
		return c
	}
	tests := []struct {
		name     string
		label    string
		previous copsev1alpha1.PodCliqueStatus
		template templateState
		pods     []podstate.Summary
		// want
		updated           int32
		currentTemplate   string // "" for unset
		currentGeneration string
		progress          *grovecorev1alpha1.PodCliqueUpdateProgress
	}{
		{
			name: "a new clique whose pods all run its template realises the generation", label: "t1",
			template: templateState{known: true, generationHash: "g1", templateHash: "t1"},
			pods:     []podstate.Summary{pod("t1", true), pod("t1", false)},
			updated:  2, currentTemplate: "t1", currentGeneration: "g1",
		},
		{
			name: "a new generation starts an update; old pods keep it open", label: "t2",
			previous: withCurrent("t1", "g1"),
			template: templateState{known: true, generationHash: "g2", templateHash: "t2"},
			pods:     []podstate.Summary{pod("t1", true), pod("t2", true)},
			updated:  1, currentTemplate: "t1", currentGeneration: "g1",
			progress: &grovecorev1alpha1.PodCliqueUpdateProgress{UpdateStartedAt: now, PodCliqueSetGenerationHash: "g2", PodTemplateHash: "t2"},
		},
		{
			name: "the update ends once every pod runs the template and minAvailable are ready", label: "t2",
			previous: withProgress(withCurrent("t1", "g1"), &grovecorev1alpha1.PodCliqueUpdateProgress{UpdateStartedAt: started, PodCliqueSetGenerationHash: "g2", PodTemplateHash: "t2"}),
			template: templateState{known: true, generationHash: "g2", templateHash: "t2"},
			pods:     []podstate.Summary{pod("t2", true), pod("t2", true)},
			updated:  2, currentTemplate: "t2", currentGeneration: "g2",
			progress: &grovecorev1alpha1.PodCliqueUpdateProgress{UpdateStartedAt: started, UpdateEndedAt: &now, PodCliqueSetGenerationHash: "g2", PodTemplateHash: "t2"},
		},
		{
			name: "not before the new pods are ready", label: "t2",
			previous: withProgress(withCurrent("t1", "g1"), &grovecorev1alpha1.PodCliqueUpdateProgress{UpdateStartedAt: started, PodCliqueSetGenerationHash: "g2", PodTemplateHash: "t2"}),
			template: templateState{known: true, generationHash: "g2", templateHash: "t2"},
			pods:     []podstate.Summary{pod("t2", true), pod("t2", false)},
			updated:  2, currentTemplate: "t1", currentGeneration: "g1",
			progress: &grovecorev1alpha1.PodCliqueUpdateProgress{UpdateStartedAt: started, PodCliqueSetGenerationHash: "g2", PodTemplateHash: "t2"},
		},
		{
			name: "nor while the PodClique has not taken its template", label: "t1",
			previous: withProgress(withCurrent("t1", "g1"), &grovecorev1alpha1.PodCliqueUpdateProgress{UpdateStartedAt: started, PodCliqueSetGenerationHash: "g2", PodTemplateHash: "t1"}),
			template: templateState{known: true, generationHash: "g2", templateHash: "t2"},
			pods:     []podstate.Summary{pod("t1", true), pod("t1", true)},
			updated:  2, currentTemplate: "t1", currentGeneration: "g1",
			progress: &grovecorev1alpha1.PodCliqueUpdateProgress{UpdateStartedAt: started, PodCliqueSetGenerationHash: "g2", PodTemplateHash: "t1"},
		},
		{
			name: "OnDelete ends the update as it starts", label: "t2",
			previous: withCurrent("t1", "g1"),
			template: templateState{known: true, generationHash: "g2", templateHash: "t2", onDelete: true},
			pods:     []podstate.Summary{pod("t1", true), pod("t1", true)},
			updated:  0, currentTemplate: "t1", currentGeneration: "g1",
			progress: &grovecorev1alpha1.PodCliqueUpdateProgress{UpdateStartedAt: now, UpdateEndedAt: &now, PodCliqueSetGenerationHash: "g2", PodTemplateHash: "t2"},
		},
		{
			name: "terminating and ended pods are not counted", label: "t1",
			template: templateState{known: true, generationHash: "g1", templateHash: "t1"},
			pods:     []podstate.Summary{pod("t1", true), {TemplateHash: "t0", Terminating: true}, {TemplateHash: "t0", Phase: "Failed"}},
			updated:  1, currentTemplate: "t1", currentGeneration: "g1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status := *tt.previous.DeepCopy()
			updateStatus(&status, clique(tt.label), tt.template, tt.pods, now)
			if status.UpdatedReplicas != tt.updated {
				t.Errorf("updatedReplicas %d, want %d", status.UpdatedReplicas, tt.updated)
			}
			if got := ptr.Deref(status.CurrentPodTemplateHash, ""); got != tt.currentTemplate {
				t.Errorf("currentPodTemplateHash %q, want %q", got, tt.currentTemplate)
			}
			if got := ptr.Deref(status.CurrentPodCliqueSetGenerationHash, ""); got != tt.currentGeneration {
				t.Errorf("currentPodCliqueSetGenerationHash %q, want %q", got, tt.currentGeneration)
			}
			if !progressEqual(status.UpdateProgress, tt.progress) {
				t.Errorf("updateProgress %+v, want %+v", status.UpdateProgress, tt.progress)
			}
		})
	}
}

func withCurrent(template, generation string) copsev1alpha1.PodCliqueStatus {
	var s copsev1alpha1.PodCliqueStatus
	s.CurrentPodTemplateHash, s.CurrentPodCliqueSetGenerationHash = ptr.To(template), ptr.To(generation)
	return s
}

func withProgress(s copsev1alpha1.PodCliqueStatus, p *grovecorev1alpha1.PodCliqueUpdateProgress) copsev1alpha1.PodCliqueStatus {
	s.UpdateProgress = p
	return s
}

func progressEqual(a, b *grovecorev1alpha1.PodCliqueUpdateProgress) bool {
	if a == nil || b == nil {
		return a == b
	}
	endA, endB := a.UpdateEndedAt, b.UpdateEndedAt
	return a.UpdateStartedAt.Equal(&b.UpdateStartedAt) && (endA == nil) == (endB == nil) && (endA == nil || endA.Equal(endB)) &&
		a.PodCliqueSetGenerationHash == b.PodCliqueSetGenerationHash && a.PodTemplateHash == b.PodTemplateHash
}
