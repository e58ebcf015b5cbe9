package podcliquescalinggroup

import (
	"testing"

	"github.com/ai-dynamo/grove/operator/api/common/constants"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
)

func groupClique(groupReplica string, scheduled, breached metav1.ConditionStatus) copsev1alpha1.PodClique {
	c := copsev1alpha1.PodClique{}
	c.Labels = map[string]string{labels.ScalingGroupReplicaKey: groupReplica}
	c.Status.Conditions = []metav1.Condition{
		{Type: constants.ConditionTypePodCliqueScheduled, Status: scheduled},
		{Type: constants.ConditionTypeMinAvailableBreached, Status: breached},
	}
	return c
}

func TestComputeStatus(t *testing.T) {
	pcsg := &copsev1alpha1.PodCliqueScalingGroup{}
	pcsg.Name = "llm-0-serve"
	pcsg.Labels = map[string]string{labels.PartOfKey: "llm"}
	pcsg.Spec.Replicas = 2
	pcsg.Spec.MinAvailable = ptr.To[int32](2)
	pcsg.Spec.CliqueNames = []string{"prefill", "decode"}
	T, F, U := metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown

	// Both group replicas complete and available: available 2, not breached.
	healthy := []copsev1alpha1.PodClique{groupClique("0", T, F), groupClique("0", T, F), groupClique("1", T, F), groupClique("1", T, F)}
	status := computeStatus(pcsg, healthy)
	if status.Replicas != 2 || status.ScheduledReplicas != 2 || status.AvailableReplicas != 2 {
		t.Fatalf("healthy: %+v", status)
	}
	if c := meta.FindStatusCondition(status.Conditions, constants.ConditionTypeMinAvailableBreached); c == nil || c.Status != F {
		t.Fatalf("healthy group: breach condition %+v", c)
	}

	// One clique of replica 1 breaks: available 1 < minAvailable 2, and the
	// group was available before, so it is breached.
	pcsg.Status = status
	broken := []copsev1alpha1.PodClique{groupClique("0", T, F), groupClique("0", T, F), groupClique("1", T, F), groupClique("1", T, T)}
	status = computeStatus(pcsg, broken)
	if status.AvailableReplicas != 1 {
		t.Fatalf("broken: available %d, want 1", status.AvailableReplicas)
	}
	if c := meta.FindStatusCondition(status.Conditions, constants.ConditionTypeMinAvailableBreached); c == nil || c.Status != T {
		t.Fatalf("breach after being available: %+v", c)
	}

	// A fresh group that has never been available is not breached.
	fresh := pcsg.DeepCopy()
	fresh.Status = copsev1alpha1.PodCliqueScalingGroup{}.Status
	status = computeStatus(fresh, []copsev1alpha1.PodClique{groupClique("0", U, U), groupClique("0", U, U)})
	if c := meta.FindStatusCondition(status.Conditions, constants.ConditionTypeMinAvailableBreached); c == nil || c.Status != U || c.Reason != reasonNeverAvailable {
		t.Fatalf("never available: %+v", c)
	}
	if status.Replicas != 1 || status.AvailableReplicas != 0 {
		t.Fatalf("fresh: %+v", status)
	}
}
