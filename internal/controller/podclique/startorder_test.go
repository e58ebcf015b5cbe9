package podclique

import (
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/podstate"
)

func TestDecideStartOrder(t *testing.T) {
	ready := blueprint.SiblingClique{Template: "a", ReadyReplicas: 1, MinAvailable: 1}
	unready := blueprint.SiblingClique{Template: "a", ReadyReplicas: 0, MinAvailable: 1}
	succeeded := blueprint.SiblingClique{Template: "init", Succeeded: true}
	running := blueprint.SiblingClique{Template: "init"}
	tests := []struct {
		name         string
		in           startOrderInput
		wantGate     string
		wantBlocked  *metav1.Condition
		wantCreation bool // pods may be created
	}{
		{name: "no predecessors: no gate, no condition", in: startOrderInput{siblings: []blueprint.SiblingClique{unready}},
			wantCreation: true},
		{name: "predecessor not Ready: pods created with a closed gate",
			in:       startOrderInput{readyPredecessors: []string{"a"}, siblings: []blueprint.SiblingClique{unready}},
			wantGate: labels.StartupGateClosed, wantCreation: true,
			wantBlocked: &metav1.Condition{Status: metav1.ConditionTrue, Reason: copsev1alpha1.ReasonWaitingForReady}},
		{name: "predecessor Ready: pods created open",
			in:       startOrderInput{readyPredecessors: []string{"a"}, siblings: []blueprint.SiblingClique{ready}},
			wantGate: labels.StartupGateOpen, wantCreation: true,
			wantBlocked: &metav1.Condition{Status: metav1.ConditionFalse, Reason: copsev1alpha1.ReasonPredecessorsDone}},
		{name: "waiting for success: no pod created",
			in:          startOrderInput{successPredecessors: []string{"init"}, siblings: []blueprint.SiblingClique{running}},
			wantBlocked: &metav1.Condition{Status: metav1.ConditionTrue, Reason: copsev1alpha1.ReasonWaitingForSucceeded}},
		{name: "predecessor succeeded: pods created",
			in:           startOrderInput{successPredecessors: []string{"init"}, siblings: []blueprint.SiblingClique{succeeded}},
			wantCreation: true,
			wantBlocked:  &metav1.Condition{Status: metav1.ConditionFalse, Reason: copsev1alpha1.ReasonPredecessorsDone}},
		{name: "waiting for success comes first",
			in: startOrderInput{readyPredecessors: []string{"a"}, successPredecessors: []string{"init"},
				siblings: []blueprint.SiblingClique{unready, running}},
			wantGate:    labels.StartupGateClosed,
			wantBlocked: &metav1.Condition{Status: metav1.ConditionTrue, Reason: copsev1alpha1.ReasonWaitingForSucceeded}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			order := decideStartOrder(tt.in)
			if got := order.gateForNewPods(); got != tt.wantGate {
				t.Errorf("gate for new pods %q, want %q", got, tt.wantGate)
			}
			if got := len(order.waitingForSuccess) == 0; got != tt.wantCreation {
				t.Errorf("pods may be created: %v, want %v", got, tt.wantCreation)
			}
			cond := startupBlockedCondition(order)
			switch {
			case tt.wantBlocked == nil && cond != nil:
				t.Errorf("unexpected condition %+v", cond)
			case tt.wantBlocked != nil && cond == nil:
				t.Errorf("no StartupBlocked condition, want %+v", tt.wantBlocked)
			case tt.wantBlocked != nil && (cond.Status != tt.wantBlocked.Status || cond.Reason != tt.wantBlocked.Reason ||
				cond.Type != copsev1alpha1.ConditionTypeStartupBlocked):
				t.Errorf("condition %+v, want %+v", cond, tt.wantBlocked)
			}
		})
	}
}

func TestStartupBlockedMessageNamesTheCliques(t *testing.T) {
	cond := startupBlockedCondition(startOrder{successGated: true, waitingForSuccess: []string{"dataset", "model"}})
	if cond.Message != "no pod is created until clique(s) dataset, model of the replica have succeeded" {
		t.Errorf("message %q", cond.Message)
	}
}

func TestGatesToOpen(t *testing.T) {
	closed := func(name string) podstate.Summary {
		return podstate.Summary{Name: name, StartupGate: labels.StartupGateClosed, Phase: "Pending"}
	}
	open := podstate.Summary{Name: "open", StartupGate: labels.StartupGateOpen, Phase: "Running"}
	terminating := closed("terminating")
	terminating.Terminating = true
	failed := closed("failed")
	failed.Phase = "Failed"
	pods := []podstate.Summary{closed("p0"), open, terminating, failed, closed("p1"), closed("p2")}
	readyOrder := startOrder{gated: true}
	tests := []struct {
		name          string
		order         startOrder
		budget        int
		want          []string
		wantTruncated bool
	}{
		{name: "predecessors not Ready: nothing opens", order: startOrder{gated: true, waitingForReady: []string{"a"}}, budget: 10},
		{name: "no gate", order: startOrder{}, budget: 10},
		{name: "predecessors Ready: every closed active pod opens", order: readyOrder, budget: 10, want: []string{"p0", "p1", "p2"}},
		{name: "bounded by the budget", order: readyOrder, budget: 2, want: []string{"p0", "p1"}, wantTruncated: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := gatesToOpen(tt.order, pods, tt.budget)
			var names []string
			for _, p := range got.pods {
				names = append(names, p.Name)
			}
			if diff := cmp.Diff(tt.want, names); diff != "" || got.truncated != tt.wantTruncated {
				t.Errorf("truncated %v (want %v), pods (-want +got):\n%s", got.truncated, tt.wantTruncated, diff)
			}
		})
	}
}

func TestStartScope(t *testing.T) {
	pcs := func(workload copsev1alpha1.WorkloadType) *copsev1alpha1.PodCliqueSet {
		p := &copsev1alpha1.PodCliqueSet{}
		p.Spec.WorkloadType = workload
		p.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{
			{Name: "sg-x", CliqueNames: []string{"pc-b", "pc-c"}, Replicas: ptr.To[int32](3), MinAvailable: ptr.To[int32](1)},
		}
		return p
	}
	grouped := func(j int) blueprint.CliqueIdentity {
		return blueprint.CliqueIdentity{Clique: "pc-c", ScalingGroup: "llm-0-sg-x", ScalingGroupReplica: j}
	}
	tests := []struct {
		name string
		pcs  *copsev1alpha1.PodCliqueSet
		id   blueprint.CliqueIdentity
		want blueprint.StartScope
	}{
		{name: "standalone clique: the whole replica", pcs: pcs(copsev1alpha1.WorkloadTypeInference), id: blueprint.CliqueIdentity{Clique: "pc-a"}},
		{name: "group replica below minAvailable: the base gang", pcs: pcs(copsev1alpha1.WorkloadTypeInference), id: grouped(0)},
		{name: "group replica at minAvailable: its own", pcs: pcs(copsev1alpha1.WorkloadTypeInference), id: grouped(1),
			want: blueprint.StartScope{Scaled: true, Group: "sg-x", GroupReplica: 1}},
		{name: "Training keeps the whole replica's order", pcs: pcs(copsev1alpha1.WorkloadTypeTraining), id: grouped(2)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, startScope(tt.pcs, tt.id, blueprint.GroupMinAvailable(tt.pcs))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
