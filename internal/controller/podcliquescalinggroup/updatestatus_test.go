package podcliquescalinggroup

import (
	"strconv"
	"testing"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
)

func TestUpdateStatus(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC))
	gen := func(hash, template string, onDelete bool) generation {
		return generation{known: true, hash: hash, templateHashes: map[string]string{"worker": template}, onDelete: onDelete}
	}
	// clique j: label is its template-hash label; realised its own
	// status's current hashes ("" unset); ready its ready and updated pods.
	clique := func(j int, label, currentTemplate, currentGeneration string, ready int32) copsev1alpha1.PodClique {
		c := copsev1alpha1.PodClique{}
		c.Labels = map[string]string{labels.ScalingGroupReplicaKey: strconv.Itoa(j), labels.CliqueTemplateKey: "worker", labels.PodTemplateHashKey: label}
		c.Spec.Replicas, c.Spec.MinAvailable = 1, ptr.To[int32](1)
		if currentTemplate != "" {
			c.Status.CurrentPodTemplateHash, c.Status.CurrentPodCliqueSetGenerationHash = ptr.To(currentTemplate), ptr.To(currentGeneration)
		}
		c.Status.ReadyReplicas, c.Status.UpdatedReplicas = ready, ready
		return c
	}
	group := &copsev1alpha1.PodCliqueScalingGroup{}
	group.Spec.Replicas, group.Spec.CliqueNames = 2, []string{"worker"}
	tests := []struct {
		name      string
		previous  grovecorev1alpha1.PodCliqueScalingGroupStatus
		g         generation
		cliques   []copsev1alpha1.PodClique
		updated   int32
		current   string
		started   bool
		ended     bool
		progressN int32 // updatedPodCliquesCount
	}{
		{name: "a new group realises the generation once its PodCliques do", g: gen("g1", "t1", false),
			cliques: []copsev1alpha1.PodClique{clique(0, "t1", "t1", "g1", 1), clique(1, "t1", "t1", "g1", 1)},
			updated: 2, current: "g1"},
		{name: "not while a PodClique is missing", g: gen("g1", "t1", false),
			cliques: []copsev1alpha1.PodClique{clique(0, "t1", "t1", "g1", 1)},
			updated: 1},
		{name: "a new generation starts an update that waits for every PodClique",
			previous: grovecorev1alpha1.PodCliqueScalingGroupStatus{CurrentPodCliqueSetGenerationHash: ptr.To("g1")},
			g:        gen("g2", "t2", false),
			cliques:  []copsev1alpha1.PodClique{clique(0, "t2", "t2", "g2", 1), clique(1, "t2", "t1", "g1", 1)},
			updated:  1, current: "g1", started: true, progressN: 1},
		{name: "and ends once they all realise it",
			previous: grovecorev1alpha1.PodCliqueScalingGroupStatus{CurrentPodCliqueSetGenerationHash: ptr.To("g1"),
				UpdateProgress: &grovecorev1alpha1.PodCliqueScalingGroupUpdateProgress{UpdateStartedAt: now, PodCliqueSetGenerationHash: "g2"}},
			g:       gen("g2", "t2", false),
			cliques: []copsev1alpha1.PodClique{clique(0, "t2", "t2", "g2", 1), clique(1, "t2", "t2", "g2", 1)},
			updated: 2, current: "g2", started: true, ended: true, progressN: 2},
		{name: "a PodClique not ready is not an updated group replica",
			g:       gen("g1", "t1", false),
			cliques: []copsev1alpha1.PodClique{clique(0, "t1", "t1", "g1", 0), clique(1, "t1", "t1", "g1", 1)},
			updated: 1, current: "g1"},
		{name: "OnDelete ends the update as it starts",
			previous: grovecorev1alpha1.PodCliqueScalingGroupStatus{CurrentPodCliqueSetGenerationHash: ptr.To("g1")},
			g:        gen("g2", "t2", true),
			cliques:  []copsev1alpha1.PodClique{clique(0, "t2", "t1", "g1", 1), clique(1, "t2", "t1", "g1", 1)},
			current:  "g1", started: true, ended: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status := *tt.previous.DeepCopy()
			updateStatus(&status, group, tt.g, tt.cliques, now)
			if status.UpdatedReplicas != tt.updated {
				t.Errorf("updatedReplicas %d, want %d", status.UpdatedReplicas, tt.updated)
			}
			if got := ptr.Deref(status.CurrentPodCliqueSetGenerationHash, ""); got != tt.current {
				t.Errorf("currentPodCliqueSetGenerationHash %q, want %q", got, tt.current)
			}
			p := status.UpdateProgress
			if (p != nil) != tt.started {
				t.Fatalf("updateProgress %+v, want started=%v", p, tt.started)
			}
			if p == nil {
				return
			}
			if (p.UpdateEndedAt != nil) != tt.ended || p.PodCliqueSetGenerationHash != tt.g.hash {
				t.Errorf("updateProgress %+v, want ended=%v for %s", p, tt.ended, tt.g.hash)
			}
			if p.UpdatedPodCliquesCount != tt.progressN || p.TotalPodCliquesCount != 2 {
				t.Errorf("counts %d/%d, want %d/2", p.UpdatedPodCliquesCount, p.TotalPodCliquesCount, tt.progressN)
			}
		})
	}
}
