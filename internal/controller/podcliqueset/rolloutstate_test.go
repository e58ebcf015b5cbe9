package podcliqueset

import (
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/podstate"
	"github.com/copse-dev/copse/internal/topology"
)

// TestRolloutReplicasOf checks what a rollout is decided on: which pods are
// old (their hash is not their clique template's), whether a PodClique has
// taken its template, and which gang each clique is in.
func TestRolloutReplicasOf(t *testing.T) {
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "app:1"}}}
	pcs := &copsev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc", UID: "pcs"}}
	pcs.Spec.Replicas = 1
	pcs.Spec.Template.Cliques = []*grovecorev1alpha1.PodCliqueTemplateSpec{
		{Name: "frontend", Spec: grovecorev1alpha1.PodCliqueSpec{Replicas: 2, MinAvailable: ptr.To[int32](1), PodSpec: spec}},
		{Name: "worker", Spec: grovecorev1alpha1.PodCliqueSpec{Replicas: 1, PodSpec: *spec.DeepCopy()}},
	}
	pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{
		{Name: "decode", CliqueNames: []string{"worker"}, Replicas: ptr.To[int32](2), MinAvailable: ptr.To[int32](1)},
	}
	// The PodCliques as built from the old template; then the template changes.
	group := blueprint.ScalingGroup(pcs, 0, pcs.Spec.Template.PodCliqueScalingGroupConfigs[0], 0)
	frontend := blueprint.StandalonePodClique(pcs, 0, pcs.Spec.Template.Cliques[0], 0, topology.Resolved{})
	worker0 := blueprint.GroupedPodClique(pcs, group, 0, pcs.Spec.Template.Cliques[1], topology.Resolved{})
	worker1 := blueprint.GroupedPodClique(pcs, group, 1, pcs.Spec.Template.Cliques[1], topology.Resolved{})
	oldHash := frontend.Labels[labels.PodTemplateHashKey]
	pcs.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Image = "app:2"
	newFrontend := blueprint.StandalonePodClique(pcs, 0, pcs.Spec.Template.Cliques[0], 0, topology.Resolved{})
	frontend.Labels[labels.PodTemplateHashKey] = newFrontend.Labels[labels.PodTemplateHashKey] // refreshed already
	for _, c := range []*copsev1alpha1.PodClique{frontend, worker0, worker1} {
		c.UID = types.UID(c.Name)
		c.OwnerReferences = []metav1.OwnerReference{{UID: pcs.UID, Controller: ptr.To(true)}}
	}
	pod := func(name string, owner *copsev1alpha1.PodClique, hash string, ready bool) podstate.Summary {
		return podstate.Summary{Name: name, PodClique: owner.Name, ControllerUID: owner.UID, TemplateHash: hash, Ready: ready,
			Phase: corev1.PodRunning, Scheduled: true, Replica: 0}
	}
	obs := (&observed{
		podCliques:    []*copsev1alpha1.PodClique{frontend, worker0, worker1},
		scalingGroups: []*copsev1alpha1.PodCliqueScalingGroup{group},
		pods: []podstate.Summary{
			pod("f-old", frontend, oldHash, true),
			pod("f-new", frontend, newFrontend.Labels[labels.PodTemplateHashKey], true),
			pod("w0", worker0, worker0.Labels[labels.PodTemplateHashKey], true),
			pod("w1", worker1, worker1.Labels[labels.PodTemplateHashKey], false),
		},
	}).categorise()
	got := rolloutReplicasOf(pcs, obs, []replicaAssessment{{index: 0, breached: true}}, map[int]bool{})
	if len(got) != 1 {
		t.Fatalf("%d replicas, want 1", len(got))
	}
	r := got[0]
	if !r.complete || !r.breached || r.scheduledPods != 4 {
		t.Errorf("complete %v breached %v scheduled %d, want true true 4", r.complete, r.breached, r.scheduledPods)
	}
	byName := map[string]rolloutClique{}
	for _, c := range r.cliques {
		byName[c.name] = c
	}
	f := byName[frontend.Name]
	if !f.specCurrent || !f.base || len(f.oldPods) != 1 || f.oldPods[0].Name != "f-old" || f.ready != 2 || f.readyUpdated != 1 {
		t.Errorf("frontend %+v: want current spec, base gang, f-old old, 2 ready of which 1 updated", f)
	}
	if w := byName[worker0.Name]; !w.base || len(w.oldPods) != 0 || w.readyUpdated != 1 || w.groupReplica != 0 {
		t.Errorf("worker of group replica 0 %+v: want the base gang, nothing old", w)
	}
	if w := byName[worker1.Name]; w.base || w.gang != worker1.Labels[labels.PodGangKey] || w.groupReplica != 1 || w.ready != 0 {
		t.Errorf("worker of group replica 1 %+v: want a gang of its own, not ready", w)
	}
}
