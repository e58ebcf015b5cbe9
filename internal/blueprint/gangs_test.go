package blueprint

import (
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/topology"
)

func clique(name string, replicas int32, minAvailable *int32) *grovecorev1alpha1.PodCliqueTemplateSpec {
	return &grovecorev1alpha1.PodCliqueTemplateSpec{Name: name, Spec: grovecorev1alpha1.PodCliqueSpec{Replicas: replicas, MinAvailable: minAvailable}}
}

func TestDesiredGangs(t *testing.T) {
	pcs := &copsev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Name: "llm"}}
	pcs.Spec.Replicas = 2
	pcs.Spec.Template.Cliques = []*grovecorev1alpha1.PodCliqueTemplateSpec{
		clique("leader", 1, nil),              // minAvailable defaults to replicas: 1
		clique("worker", 3, ptr.To[int32](2)), // 2
		clique("prefill", 2, nil),             // grouped: 2
		clique("decode", 4, ptr.To[int32](3)), // grouped: 3
	}
	pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{{
		Name: "serve", CliqueNames: []string{"prefill", "decode"}, Replicas: ptr.To[int32](3), MinAvailable: ptr.To[int32](2),
	}}

	gangs := DesiredGangs(pcs, map[string]int32{"llm-1-serve": 4}, topology.Resolved{}) // replica 1's group was scaled out to 4
	want := []Gang{
		// base: leader 1 + worker 2 + 2 group replicas x (2+3)
		{Name: "llm-0", Template: "base", ReplicaIndex: 0, MinCount: 13},
		{Name: "llm-0-serve-2", Template: "scaled-serve", ReplicaIndex: 0, MinCount: 5},
		{Name: "llm-1", Template: "base", ReplicaIndex: 1, MinCount: 13},
		{Name: "llm-1-serve-2", Template: "scaled-serve", ReplicaIndex: 1, MinCount: 5},
		{Name: "llm-1-serve-3", Template: "scaled-serve", ReplicaIndex: 1, MinCount: 5},
	}
	if len(gangs) != len(want) {
		t.Fatalf("got %d gangs %+v, want %d", len(gangs), gangs, len(want))
	}
	for i := range want {
		if gangs[i] != want[i] {
			t.Errorf("gang %d: got %+v, want %+v", i, gangs[i], want[i])
		}
	}

	templates := TemplateMinCounts(gangs)
	if len(templates) != 2 || templates[0].Template != "base" || templates[0].MinCount != 13 || templates[1].MinCount != 5 {
		t.Errorf("templates: %+v", templates)
	}
}

func TestGangOfGroupReplica(t *testing.T) {
	if got := GangOfGroupReplica("llm", 1, "llm-1-serve", 0, 2); got != "llm-1" {
		t.Errorf("replica below minAvailable joins the base gang, got %q", got)
	}
	if got := GangOfGroupReplica("llm", 1, "llm-1-serve", 2, 2); got != "llm-1-serve-2" {
		t.Errorf("replica at minAvailable gets its own gang, got %q", got)
	}
}

func TestDesiredGangsWithoutScalingGroups(t *testing.T) {
	pcs := &copsev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Name: "train"}}
	pcs.Spec.Replicas = 1
	pcs.Spec.Template.Cliques = []*grovecorev1alpha1.PodCliqueTemplateSpec{clique("worker", 8, nil)}
	gangs := DesiredGangs(pcs, nil, topology.Resolved{})
	if len(gangs) != 1 || gangs[0].MinCount != 8 || gangs[0].Name != "train-0" {
		t.Errorf("got %+v", gangs)
	}
}
