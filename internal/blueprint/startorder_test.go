package blueprint

import (
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/topology"
)

func startsAfter(name string, after ...string) *grovecorev1alpha1.PodCliqueTemplateSpec {
	c := clique(name, 1, nil)
	c.Spec.StartsAfter = after
	return c
}

func TestStartPredecessors(t *testing.T) {
	inOrder := grovecorev1alpha1.CliqueStartupTypeInOrder
	explicit := grovecorev1alpha1.CliqueStartupTypeExplicit
	anyOrder := grovecorev1alpha1.CliqueStartupTypeAnyOrder
	tests := []struct {
		name        string
		startupType *grovecorev1alpha1.CliqueStartupType
		cliques     []*grovecorev1alpha1.PodCliqueTemplateSpec
		want        map[string][]string
	}{
		{name: "unset: any order", cliques: []*grovecorev1alpha1.PodCliqueTemplateSpec{startsAfter("a"), startsAfter("b", "a")}},
		{name: "AnyOrder ignores startsAfter", startupType: &anyOrder,
			cliques: []*grovecorev1alpha1.PodCliqueTemplateSpec{startsAfter("a"), startsAfter("b", "a")}},
		{name: "InOrder: each after the one listed before it", startupType: &inOrder,
			cliques: []*grovecorev1alpha1.PodCliqueTemplateSpec{startsAfter("a"), startsAfter("b"), startsAfter("c", "a")},
			want:    map[string][]string{"b": {"a"}, "c": {"b"}}},
		{name: "InOrder with one clique", startupType: &inOrder, cliques: []*grovecorev1alpha1.PodCliqueTemplateSpec{startsAfter("a")}},
		{name: "Explicit: startsAfter, fan-in", startupType: &explicit,
			cliques: []*grovecorev1alpha1.PodCliqueTemplateSpec{startsAfter("a"), startsAfter("b"), startsAfter("c", "a", "b")},
			want:    map[string][]string{"c": {"a", "b"}}},
		{name: "Explicit drops unknown names, itself and duplicates", startupType: &explicit,
			cliques: []*grovecorev1alpha1.PodCliqueTemplateSpec{startsAfter("a"), startsAfter("b", "x", "b", "a", "a")},
			want:    map[string][]string{"b": {"a"}}},
		{name: "Explicit without startsAfter", startupType: &explicit,
			cliques: []*grovecorev1alpha1.PodCliqueTemplateSpec{startsAfter("a"), startsAfter("b")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, StartPredecessors(tt.startupType, tt.cliques)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestNotReadyPredecessors(t *testing.T) {
	ready := func(template string) SiblingClique {
		return SiblingClique{Template: template, ReadyReplicas: 2, MinAvailable: 2}
	}
	unready := func(template string) SiblingClique {
		return SiblingClique{Template: template, ReadyReplicas: 1, MinAvailable: 2}
	}
	groupInstance := func(s SiblingClique, j int) SiblingClique {
		s.Grouped, s.GroupReplica = true, j
		return s
	}
	tests := []struct {
		name         string
		predecessors []string
		groupMin     map[string]int
		scope        StartScope
		siblings     []SiblingClique
		want         []string
	}{
		{name: "no predecessors"},
		{name: "predecessor Ready", predecessors: []string{"a"}, siblings: []SiblingClique{ready("a"), unready("b")}},
		{name: "predecessor below minAvailable", predecessors: []string{"a"}, siblings: []SiblingClique{unready("a")}, want: []string{"a"}},
		{name: "predecessor ended: its pods exited 0, none ready", predecessors: []string{"a"},
			siblings: []SiblingClique{{Template: "a", SucceededReplicas: 2, MinAvailable: 2}}},
		{name: "predecessor partly ready, partly exited 0", predecessors: []string{"a"},
			siblings: []SiblingClique{{Template: "a", ReadyReplicas: 1, SucceededReplicas: 1, MinAvailable: 2}}},
		{name: "predecessor Succeeded as a whole", predecessors: []string{"a"},
			siblings: []SiblingClique{{Template: "a", MinAvailable: 2, Succeeded: true}}},
		{name: "predecessor with too few pods ready or exited 0", predecessors: []string{"a"},
			siblings: []SiblingClique{{Template: "a", SucceededReplicas: 1, MinAvailable: 2}}, want: []string{"a"}},
		{name: "predecessor's PodClique not there yet", predecessors: []string{"a"}, siblings: []SiblingClique{ready("b")}, want: []string{"a"}},
		{name: "fan-in: one of two ready", predecessors: []string{"a", "b"}, siblings: []SiblingClique{ready("a"), unready("b")}, want: []string{"b"}},
		{name: "fan-in: both ready", predecessors: []string{"a", "b"}, siblings: []SiblingClique{ready("a"), ready("b")}},
		{name: "grouped: instances below minAvailable Ready, the optional one not",
			predecessors: []string{"g"}, groupMin: map[string]int{"g": 2},
			siblings: []SiblingClique{groupInstance(ready("g"), 0), groupInstance(ready("g"), 1), groupInstance(unready("g"), 2)}},
		{name: "grouped: an instance below minAvailable not Ready",
			predecessors: []string{"g"}, groupMin: map[string]int{"g": 2},
			siblings: []SiblingClique{groupInstance(ready("g"), 0), groupInstance(unready("g"), 1), groupInstance(ready("g"), 2)},
			want:     []string{"g"}},
		{name: "grouped: an instance below minAvailable missing",
			predecessors: []string{"g"}, groupMin: map[string]int{"g": 2},
			siblings: []SiblingClique{groupInstance(ready("g"), 0), groupInstance(ready("g"), 2)},
			want:     []string{"g"}},
		{name: "scaled: its own group replica's instance Ready, the base ones not",
			predecessors: []string{"g"}, groupMin: map[string]int{"g": 1}, scope: StartScope{Scaled: true, Group: "sg", GroupReplica: 2},
			siblings: []SiblingClique{groupInstance(unready("g"), 0), groupInstance(unready("g"), 1), groupInstance(ready("g"), 2)}},
		{name: "scaled: the base instances Ready, its own not",
			predecessors: []string{"g"}, groupMin: map[string]int{"g": 1}, scope: StartScope{Scaled: true, Group: "sg", GroupReplica: 1},
			siblings: []SiblingClique{groupInstance(ready("g"), 0), groupInstance(unready("g"), 1), groupInstance(ready("g"), 2)},
			want:     []string{"g"}},
		{name: "grouped: the instances below minAvailable exited 0",
			predecessors: []string{"g"}, groupMin: map[string]int{"g": 2},
			siblings: []SiblingClique{groupInstance(SiblingClique{Template: "g", SucceededReplicas: 2, MinAvailable: 2}, 0),
				groupInstance(SiblingClique{Template: "g", Succeeded: true}, 1)}},
		{name: "scaled: its own instance missing",
			predecessors: []string{"g"}, groupMin: map[string]int{"g": 1}, scope: StartScope{Scaled: true, Group: "sg", GroupReplica: 1},
			siblings: []SiblingClique{groupInstance(ready("g"), 0)},
			want:     []string{"g"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, NotReadyPredecessors(tt.predecessors, tt.groupMin, tt.scope, tt.siblings)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestScopePredecessors(t *testing.T) {
	groups := map[string]string{"b": "sg", "c": "sg", "x": "other"}
	tests := []struct {
		name  string
		preds []string
		scope StartScope
		want  []string
	}{
		{name: "base gang keeps every predecessor", preds: []string{"a", "b", "x"}, want: []string{"a", "b", "x"}},
		{name: "scaled keeps only its own group's", preds: []string{"a", "b", "c", "x"}, scope: StartScope{Scaled: true, Group: "sg", GroupReplica: 2}, want: []string{"b", "c"}},
		{name: "scaled after standalone cliques only: none", preds: []string{"a"}, scope: StartScope{Scaled: true, Group: "sg", GroupReplica: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ScopePredecessors(tt.preds, tt.scope, groups)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestNotSucceededPredecessors(t *testing.T) {
	done := func(template string) SiblingClique { return SiblingClique{Template: template, Succeeded: true} }
	running := func(template string) SiblingClique { return SiblingClique{Template: template} }
	tests := []struct {
		name         string
		predecessors []string
		siblings     []SiblingClique
		want         []string
	}{
		{name: "no predecessors", siblings: []SiblingClique{running("a")}},
		{name: "both succeeded", predecessors: []string{"a", "b"}, siblings: []SiblingClique{done("a"), done("b"), running("trainer")}},
		{name: "one still running", predecessors: []string{"a", "b"}, siblings: []SiblingClique{done("a"), running("b")}, want: []string{"b"}},
		{name: "PodClique not created yet", predecessors: []string{"a"}, siblings: nil, want: []string{"a"}},
		{name: "every PodClique of the template must have succeeded", predecessors: []string{"a"},
			siblings: []SiblingClique{done("a"), running("a")}, want: []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, NotSucceededPredecessors(tt.predecessors, tt.siblings)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func preludePCS(workload copsev1alpha1.WorkloadType) *copsev1alpha1.PodCliqueSet {
	pcs := &copsev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Name: "tj"}}
	pcs.Spec.Replicas = 2
	pcs.Spec.WorkloadType = workload
	pcs.Spec.Template.Cliques = []*grovecorev1alpha1.PodCliqueTemplateSpec{
		clique("dataset", 1, nil), clique("model", 2, nil), clique("trainer", 4, ptr.To[int32](3)), clique("sidecar", 1, nil),
	}
	pcs.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{StartsAfterSucceeded: []copsev1alpha1.CliqueSuccessDependency{
		{Clique: "trainer", Cliques: []string{"model", "dataset"}},
	}}
	return pcs
}

func TestSuccessPredecessorsAndPrelude(t *testing.T) {
	pcs := preludePCS(copsev1alpha1.WorkloadTypeTraining)
	if diff := cmp.Diff(map[string][]string{"trainer": {"model", "dataset"}}, SuccessPredecessors(pcs)); diff != "" {
		t.Errorf("SuccessPredecessors (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"dataset", "model"}, PreludeCliques(pcs)); diff != "" {
		t.Errorf("PreludeCliques, in template order (-want +got):\n%s", diff)
	}
	inference := preludePCS(copsev1alpha1.WorkloadTypeInference)
	if got := SuccessPredecessors(inference); got != nil {
		t.Errorf("an Inference workload waits for no success, got %v", got)
	}
}

func TestGatePredecessors(t *testing.T) {
	explicit := grovecorev1alpha1.CliqueStartupTypeExplicit
	inOrder := grovecorev1alpha1.CliqueStartupTypeInOrder
	training := func(startupType grovecorev1alpha1.CliqueStartupType, cliques []*grovecorev1alpha1.PodCliqueTemplateSpec,
		succeeded ...copsev1alpha1.CliqueSuccessDependency) *copsev1alpha1.PodCliqueSet {
		pcs := &copsev1alpha1.PodCliqueSet{}
		pcs.Spec.WorkloadType = copsev1alpha1.WorkloadTypeTraining
		pcs.Spec.Template.StartupType = &startupType
		pcs.Spec.Template.Cliques = cliques
		pcs.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{StartsAfterSucceeded: succeeded}
		return pcs
	}
	tests := []struct {
		name string
		pcs  *copsev1alpha1.PodCliqueSet
		want map[string][]string
	}{
		{name: "an edge in both fields means the success edge: no gate",
			pcs: training(explicit, []*grovecorev1alpha1.PodCliqueTemplateSpec{startsAfter("init"), startsAfter("trainer", "init")},
				copsev1alpha1.CliqueSuccessDependency{Clique: "trainer", Cliques: []string{"init"}})},
		{name: "the ready edges not repeated stay",
			pcs: training(explicit, []*grovecorev1alpha1.PodCliqueTemplateSpec{startsAfter("init"), startsAfter("ps"), startsAfter("trainer", "init", "ps")},
				copsev1alpha1.CliqueSuccessDependency{Clique: "trainer", Cliques: []string{"init"}}),
			want: map[string][]string{"trainer": {"ps"}}},
		{name: "InOrder after a clique waited on to succeed",
			pcs: training(inOrder, []*grovecorev1alpha1.PodCliqueTemplateSpec{startsAfter("init"), startsAfter("trainer"), startsAfter("eval")},
				copsev1alpha1.CliqueSuccessDependency{Clique: "trainer", Cliques: []string{"init"}}),
			want: map[string][]string{"eval": {"trainer"}}},
		{name: "no success edges: the start order as it is",
			pcs:  training(explicit, []*grovecorev1alpha1.PodCliqueTemplateSpec{startsAfter("a"), startsAfter("b", "a")}),
			want: map[string][]string{"b": {"a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, GatePredecessors(tt.pcs)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestReplicaGangsWithPrelude(t *testing.T) {
	tests := []struct {
		name string
		pcs  *copsev1alpha1.PodCliqueSet
		want []Gang
	}{
		{
			name: "cliques waited on for success form a basic prelude; the base gang excludes them",
			pcs:  preludePCS(copsev1alpha1.WorkloadTypeTraining),
			want: []Gang{
				{Name: "tj-1", Template: BaseTemplate, ReplicaIndex: 1, MinCount: 4}, // trainer 3 + sidecar 1
				{Name: "tj-1-prelude", Template: PreludeTemplate, ReplicaIndex: 1, Basic: true},
			},
		},
		{
			name: "without startsAfterSucceeded: one gang",
			pcs: func() *copsev1alpha1.PodCliqueSet {
				pcs := preludePCS(copsev1alpha1.WorkloadTypeTraining)
				pcs.Spec.TrainingSpec = nil
				return pcs
			}(),
			want: []Gang{{Name: "tj-1", Template: BaseTemplate, ReplicaIndex: 1, MinCount: 7}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ReplicaGangs(tt.pcs, 1, nil, topology.Resolved{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	pcs := preludePCS(copsev1alpha1.WorkloadTypeTraining)
	for clique, want := range map[string]string{"dataset": "tj-0-prelude", "model": "tj-0-prelude", "trainer": "tj-0", "sidecar": "tj-0"} {
		if got := GangOfStandaloneClique(pcs, 0, clique); got != want {
			t.Errorf("GangOfStandaloneClique(%s) = %q, want %q", clique, got, want)
		}
		if got := StandalonePodClique(pcs, 0, pcs.CliqueTemplate(clique), 0, topology.Resolved{}).Labels["grove.io/podgang"]; got != want {
			t.Errorf("PodClique %s joins %q, want %q", clique, got, want)
		}
	}
	templates := TemplateMinCounts(DesiredGangs(pcs, nil, topology.Resolved{}))
	if diff := cmp.Diff([]Gang{{Template: BaseTemplate, MinCount: 4}, {Template: PreludeTemplate, Basic: true}}, templates); diff != "" {
		t.Errorf("templates (-want +got):\n%s", diff)
	}
}
