package blueprint

import (
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/topology"
)

func TestTemplateReplicas(t *testing.T) {
	tests := []struct {
		name                  string
		current               int32
		lastApplied, template string
		want                  int32
	}{
		{name: "template count changed: applied", current: 2, lastApplied: "2", template: "4", want: 4},
		{name: "template count changed over a kubectl scale: applied", current: 7, lastApplied: "2", template: "3", want: 3},
		{name: "template count unchanged: a kubectl scale sticks", current: 7, lastApplied: "2", template: "2", want: 7},
		{name: "autoscaled: never applied", current: 5, lastApplied: "2", template: "", want: 5},
		{name: "no record yet: kept", current: 5, lastApplied: "", template: "3", want: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TemplateReplicas(tt.current, tt.lastApplied, tt.template); got != tt.want {
				t.Errorf("TemplateReplicas(%d, %q, %q) = %d, want %d", tt.current, tt.lastApplied, tt.template, got, tt.want)
			}
		})
	}
}

func refreshPCS(changes ...func(*copsev1alpha1.PodCliqueSet)) *copsev1alpha1.PodCliqueSet {
	pcs := testPCS()
	for _, c := range pcs.Spec.Template.Cliques {
		c.Spec.PodSpec = corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "serve:1"}}}
	}
	// As the defaulting webhook leaves it.
	pcs.Spec.Template.Cliques[0].Spec.MinAvailable = ptr.To[int32](3)
	for _, change := range changes {
		change(pcs)
	}
	return pcs
}

func TestRefreshPodClique(t *testing.T) {
	build := func(pcs *copsev1alpha1.PodCliqueSet) *copsev1alpha1.PodClique {
		return StandalonePodClique(pcs, 0, pcs.Spec.Template.Cliques[0], 0, topology.Resolved{})
	}
	tests := []struct {
		name         string
		existing     func(*copsev1alpha1.PodClique) // optional change to the existing object
		template     func(*copsev1alpha1.PodCliqueSet)
		changed      bool
		image        string
		replicas     int32
		minAvailable int32
	}{
		{name: "nothing changed", template: func(*copsev1alpha1.PodCliqueSet) {}, image: "serve:1", replicas: 3, minAvailable: 3},
		{name: "a new image is taken with its hash", changed: true, image: "serve:2", replicas: 3, minAvailable: 3,
			template: func(p *copsev1alpha1.PodCliqueSet) {
				p.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Image = "serve:2"
			}},
		{name: "a template replica count change is applied", changed: true, image: "serve:1", replicas: 5, minAvailable: 3,
			template: func(p *copsev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0].Spec.Replicas = 5 }},
		{name: "a kubectl scale sticks while the template count is unchanged", image: "serve:1", replicas: 6, minAvailable: 3,
			existing: func(c *copsev1alpha1.PodClique) { c.Spec.Replicas = 6 },
			template: func(*copsev1alpha1.PodCliqueSet) {}},
		{name: "minAvailable follows the template", changed: true, image: "serve:1", replicas: 3, minAvailable: 2,
			template: func(p *copsev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0].Spec.MinAvailable = ptr.To[int32](2) }},
		{name: "an autoscaled clique's count is never taken from the template", changed: true, image: "serve:1", replicas: 3, minAvailable: 3,
			template: func(p *copsev1alpha1.PodCliqueSet) {
				p.Spec.Template.Cliques[0].Spec.Replicas = 9
				p.Spec.Template.Cliques[0].Spec.ScaleConfig = &grovecorev1alpha1.AutoScalingConfig{MaxReplicas: 10}
			}},
		{name: "an object of another run is left alone", image: "serve:1", replicas: 3, minAvailable: 3,
			existing: func(c *copsev1alpha1.PodClique) { c.Labels[labels.AttemptKey] = "7" },
			template: func(p *copsev1alpha1.PodCliqueSet) {
				p.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Image = "serve:2"
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			existing := build(refreshPCS())
			if tt.existing != nil {
				tt.existing(existing)
			}
			desired := build(refreshPCS(tt.template))
			if got := RefreshPodClique(existing, desired); got != tt.changed {
				t.Errorf("changed = %v, want %v", got, tt.changed)
			}
			if got := existing.Spec.PodSpec.Containers[0].Image; got != tt.image {
				t.Errorf("image %q, want %q", got, tt.image)
			}
			if existing.Spec.Replicas != tt.replicas || *existing.Spec.MinAvailable != tt.minAvailable {
				t.Errorf("replicas %d minAvailable %d, want %d %d", existing.Spec.Replicas, *existing.Spec.MinAvailable, tt.replicas, tt.minAvailable)
			}
			if tt.image == "serve:2" && existing.Labels[labels.PodTemplateHashKey] != desired.Labels[labels.PodTemplateHashKey] {
				t.Errorf("the hash label was not taken with the template")
			}
			if RefreshPodClique(existing, desired) {
				t.Errorf("a second refresh changed the object again")
			}
		})
	}
}

func TestRefreshScalingGroup(t *testing.T) {
	group := func(change func(*grovecorev1alpha1.PodCliqueScalingGroupConfig)) *copsev1alpha1.PodCliqueScalingGroup {
		pcs := testPCS()
		g := pcs.Spec.Template.PodCliqueScalingGroupConfigs[0]
		change(&g)
		return ScalingGroup(pcs, 0, g, 0)
	}
	existing := group(func(*grovecorev1alpha1.PodCliqueScalingGroupConfig) {})
	existing.Spec.Replicas = 5 // kubectl scale
	if RefreshScalingGroup(existing, group(func(*grovecorev1alpha1.PodCliqueScalingGroupConfig) {})) || existing.Spec.Replicas != 5 {
		t.Fatalf("an unchanged template undid a kubectl scale: replicas %d", existing.Spec.Replicas)
	}
	desired := group(func(g *grovecorev1alpha1.PodCliqueScalingGroupConfig) {
		g.Replicas = ptr.To[int32](4)
		g.MinAvailable = ptr.To[int32](1)
	})
	if !RefreshScalingGroup(existing, desired) || existing.Spec.Replicas != 4 || *existing.Spec.MinAvailable != 1 {
		t.Fatalf("template change not applied: replicas %d minAvailable %d", existing.Spec.Replicas, *existing.Spec.MinAvailable)
	}
	autoscaled := group(func(g *grovecorev1alpha1.PodCliqueScalingGroupConfig) {
		g.Replicas = ptr.To[int32](8)
		g.ScaleConfig = &grovecorev1alpha1.AutoScalingConfig{MaxReplicas: 9}
	})
	RefreshScalingGroup(existing, autoscaled)
	if existing.Spec.Replicas != 4 {
		t.Errorf("an autoscaled group took the template count: %d", existing.Spec.Replicas)
	}
	if _, ok := existing.Annotations[labels.TemplateReplicasAnnotation]; ok {
		t.Errorf("an autoscaled group keeps a template-count record")
	}
}
