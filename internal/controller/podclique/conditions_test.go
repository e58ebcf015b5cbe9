package podclique

import (
	"testing"

	groveconstants "github.com/ai-dynamo/grove/operator/api/common/constants"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func breach(status metav1.ConditionStatus) *metav1.Condition {
	return &metav1.Condition{Type: groveconstants.ConditionTypeMinAvailableBreached, Status: status}
}

func TestMinAvailableBreachedCondition(t *testing.T) {
	cases := []struct {
		name                       string
		previous                   *metav1.Condition
		ready, scheduled, minAvail int
		wantStatus                 metav1.ConditionStatus
		wantReason                 string
	}{
		{"a new clique is not yet available", nil, 0, 0, 3, metav1.ConditionUnknown, ConditionReasonNeverAvailable},
		{"a starting clique with some pods is not yet available", nil, 2, 3, 3, metav1.ConditionUnknown, ConditionReasonNeverAvailable},
		{"still starting", breach(metav1.ConditionUnknown), 1, 1, 3, metav1.ConditionUnknown, ConditionReasonNeverAvailable},
		{"available for the first time", breach(metav1.ConditionUnknown), 3, 3, 3, metav1.ConditionFalse, groveconstants.ConditionReasonSufficientReadyPods},
		{"available on the first look", nil, 3, 3, 3, metav1.ConditionFalse, groveconstants.ConditionReasonSufficientReadyPods},
		{"more than enough", breach(metav1.ConditionFalse), 5, 5, 3, metav1.ConditionFalse, groveconstants.ConditionReasonSufficientReadyPods},
		{"a pod stopped being ready", breach(metav1.ConditionFalse), 2, 3, 3, metav1.ConditionTrue, groveconstants.ConditionReasonInsufficientReadyPods},
		{"a pod lost its node", breach(metav1.ConditionFalse), 2, 2, 3, metav1.ConditionTrue, groveconstants.ConditionReasonInsufficientScheduledPods},
		{"still breached, now for lack of scheduling", breach(metav1.ConditionTrue), 0, 1, 3, metav1.ConditionTrue, groveconstants.ConditionReasonInsufficientScheduledPods},
		{"recovered", breach(metav1.ConditionTrue), 3, 3, 3, metav1.ConditionFalse, groveconstants.ConditionReasonSufficientReadyPods},
		{"minAvailable 0 is always met", nil, 0, 0, 0, metav1.ConditionFalse, groveconstants.ConditionReasonSufficientReadyPods},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := minAvailableBreachedCondition(c.previous, c.ready, c.scheduled, c.minAvail)
			if got.Type != groveconstants.ConditionTypeMinAvailableBreached || got.Status != c.wantStatus || got.Reason != c.wantReason {
				t.Errorf("got %s=%s (%s), want %s (%s)", got.Type, got.Status, got.Reason, c.wantStatus, c.wantReason)
			}
			if got.Message == "" {
				t.Error("empty message")
			}
		})
	}
}

func TestScheduledCondition(t *testing.T) {
	cases := []struct {
		scheduled, minAvail int
		wantStatus          metav1.ConditionStatus
		wantReason          string
	}{
		{0, 2, metav1.ConditionFalse, groveconstants.ConditionReasonInsufficientScheduledPods},
		{1, 2, metav1.ConditionFalse, groveconstants.ConditionReasonInsufficientScheduledPods},
		{2, 2, metav1.ConditionTrue, groveconstants.ConditionReasonSufficientScheduledPods},
		{3, 2, metav1.ConditionTrue, groveconstants.ConditionReasonSufficientScheduledPods},
	}
	for _, c := range cases {
		got := scheduledCondition(c.scheduled, c.minAvail)
		if got.Type != groveconstants.ConditionTypePodCliqueScheduled || got.Status != c.wantStatus || got.Reason != c.wantReason {
			t.Errorf("scheduled %d of %d: got %s=%s (%s), want %s (%s)",
				c.scheduled, c.minAvail, got.Type, got.Status, got.Reason, c.wantStatus, c.wantReason)
		}
	}
}
