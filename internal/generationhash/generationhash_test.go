package generationhash

import (
	"regexp"
	"testing"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

func clique(name string) *grovecorev1alpha1.PodCliqueTemplateSpec {
	return &grovecorev1alpha1.PodCliqueTemplateSpec{
		Name:   name,
		Labels: map[string]string{"role": name},
		Spec: grovecorev1alpha1.PodCliqueSpec{RoleName: name, Replicas: 2, MinAvailable: ptr.To[int32](2),
			PodSpec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "main", Image: "example.com/train:1",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
			}}}},
	}
}

func pcs(changes ...func(*copsev1alpha1.PodCliqueSet)) *copsev1alpha1.PodCliqueSet {
	p := &copsev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "ml"}}
	p.Spec.WorkloadType = copsev1alpha1.WorkloadTypeTraining
	p.Spec.Replicas = 1
	p.Spec.Template.Cliques = []*grovecorev1alpha1.PodCliqueTemplateSpec{clique("leader"), clique("worker")}
	p.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{
		{Name: "decode", CliqueNames: []string{"worker"}, Replicas: ptr.To[int32](1)},
	}
	for _, change := range changes {
		change(p)
	}
	return p
}

func TestGenerationHashIsShortAndStable(t *testing.T) {
	h := GenerationHash(pcs())
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(h) {
		t.Fatalf("hash %q is not 16 hex digits", h)
	}
	for range 20 {
		if again := GenerationHash(pcs()); again != h {
			t.Fatalf("the hash of equal objects differs: %q and %q", h, again)
		}
	}
}

func TestGenerationHashChangesWithPodTemplatesOnly(t *testing.T) {
	tests := []struct {
		name    string
		base    func(*copsev1alpha1.PodCliqueSet) // optional
		change  func(*copsev1alpha1.PodCliqueSet)
		changes bool
	}{
		// Rolled out: the pod template of a clique.
		{name: "container image", changes: true, change: func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[1].Spec.PodSpec.Containers[0].Image = "example.com/train:2"
		}},
		{name: "container resources", changes: true, change: func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("2")
		}},
		{name: "environment variable", changes: true, change: func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
		}},
		{name: "clique label", changes: true, change: func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Labels["team"] = "research"
		}},
		{name: "clique annotation", changes: true, change: func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Annotations = map[string]string{"a": "b"}
		}},
		{name: "template priorityClassName used by the pods", changes: true, change: func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.PriorityClassName = "high"
		}},
		{name: "pod priorityClassName", changes: true, change: func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.PodSpec.PriorityClassName = "high"
		}},

		// Not rolled out.
		{name: "template priorityClassName overridden by every pod", base: everyPodHasItsOwnPriorityClass,
			change: func(p *copsev1alpha1.PodCliqueSet) { p.Spec.Template.PriorityClassName = "high" }},
		{name: "replicas of the set, a clique and a scaling group", change: func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Replicas = 3
			p.Spec.Template.Cliques[0].Spec.Replicas = 4
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = ptr.To[int32](2)
		}},
		{name: "autoscaling", change: func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.ScaleConfig = &grovecorev1alpha1.AutoScalingConfig{MaxReplicas: 4}
		}},
		{name: "clique order", change: func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0], p.Spec.Template.Cliques[1] = p.Spec.Template.Cliques[1], p.Spec.Template.Cliques[0]
		}},
		{name: "terminationDelay and trainingSpec", change: func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.TerminationDelay = &metav1.Duration{Duration: time.Minute}
			p.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{MaxRestarts: ptr.To[int32](3)}
		}},
		{name: "empty instead of absent annotations", change: func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Annotations = map[string]string{}
		}},
		{name: "an equal quantity written differently", change: func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("1000m")
		}},
		{name: "the PodCliqueSet's own metadata", change: func(p *copsev1alpha1.PodCliqueSet) {
			p.Labels = map[string]string{"a": "b"}
			p.Generation = 7
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			setup := func(*copsev1alpha1.PodCliqueSet) {}
			if tc.base != nil {
				setup = tc.base
			}
			base, got := GenerationHash(pcs(setup)), GenerationHash(pcs(setup, tc.change))
			if changed := got != base; changed != tc.changes {
				t.Errorf("hash changed = %v, want %v (%s -> %s)", changed, tc.changes, base, got)
			}
		})
	}
}

func everyPodHasItsOwnPriorityClass(p *copsev1alpha1.PodCliqueSet) {
	for _, c := range p.Spec.Template.Cliques {
		c.Spec.PodSpec.PriorityClassName = "own"
	}
}

func TestCliquesAreSortedAndEffective(t *testing.T) {
	p := pcs(func(p *copsev1alpha1.PodCliqueSet) {
		p.Spec.Template.Cliques = []*grovecorev1alpha1.PodCliqueTemplateSpec{clique("worker"), nil, clique("leader")}
		p.Spec.Template.Cliques[2].Spec.PodSpec.PriorityClassName = "own"
		p.Spec.Template.PriorityClassName = "default-high"
	})
	got := Cliques(p)
	if len(got) != 2 || got[0].Name != "leader" || got[1].Name != "worker" {
		t.Fatalf("Cliques = %+v, want leader then worker", got)
	}
	if got[0].PodSpec.PriorityClassName != "own" || got[1].PodSpec.PriorityClassName != "default-high" {
		t.Errorf("priority classes = %q, %q; want the pod's own, then the template's", got[0].PodSpec.PriorityClassName, got[1].PodSpec.PriorityClassName)
	}
	if p.Spec.Template.Cliques[0].Spec.PodSpec.PriorityClassName != "" {
		t.Error("Cliques modified the PodCliqueSet")
	}
	if Hash(got...) != GenerationHash(p) {
		t.Error("GenerationHash is not Hash(Cliques(pcs)...)")
	}
}

func TestPodTemplateHashFollowsItsOwnCliqueOnly(t *testing.T) {
	base := pcs()
	leader, worker := PodTemplateHash(base, base.Spec.Template.Cliques[0]), PodTemplateHash(base, base.Spec.Template.Cliques[1])
	if leader == worker {
		t.Fatalf("two different cliques share the hash %q", leader)
	}
	changed := pcs(func(p *copsev1alpha1.PodCliqueSet) {
		p.Spec.Template.Cliques[1].Spec.PodSpec.Containers[0].Image = "example.com/train:2"
	})
	if got := PodTemplateHash(changed, changed.Spec.Template.Cliques[0]); got != leader {
		t.Errorf("the leader's hash changed with the worker's image: %q -> %q", leader, got)
	}
	if got := PodTemplateHash(changed, changed.Spec.Template.Cliques[1]); got == worker {
		t.Errorf("the worker's hash did not change with its image: %q", got)
	}
	scaled := pcs(func(p *copsev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[1].Spec.Replicas = 5 })
	if got := PodTemplateHash(scaled, scaled.Spec.Template.Cliques[1]); got != worker {
		t.Errorf("the worker's hash changed with its replica count: %q -> %q", worker, got)
	}
}
