package podclique

import (
	"strings"
	"testing"
	"time"

	groveconstants "github.com/ai-dynamo/grove/operator/api/common/constants"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/podstate"
)

const (
	inference = copsev1alpha1.WorkloadTypeInference
	training  = copsev1alpha1.WorkloadTypeTraining
)

func breach(status metav1.ConditionStatus) *metav1.Condition {
	return &metav1.Condition{Type: groveconstants.ConditionTypeMinAvailableBreached, Status: status}
}

// pods builds a clique from the given pods, indexed 0.. in order.
func pods(mods ...func(*podstate.Summary)) []podstate.Summary {
	out := make([]podstate.Summary, len(mods))
	for i, m := range mods {
		out[i] = p(i, m)
	}
	return out
}

func running(*podstate.Summary) {}

func TestMinAvailableBreachedCondition(t *testing.T) {
	const (
		unknown = metav1.ConditionUnknown
		isFalse = metav1.ConditionFalse
		isTrue  = metav1.ConditionTrue

		neverAvailable = ConditionReasonNeverAvailable
		sufficient     = groveconstants.ConditionReasonSufficientReadyPods
		fewReady       = groveconstants.ConditionReasonInsufficientReadyPods
		fewScheduled   = groveconstants.ConditionReasonInsufficientScheduledPods
		podsFailed     = ConditionReasonPodsFailed
		allSucceeded   = copsev1alpha1.ReasonAllPodsSucceeded

		restartingInPlace = ConditionReasonRestartingInPlace
	)
	cases := []struct {
		name       string
		workload   copsev1alpha1.WorkloadType
		previous   *metav1.Condition
		pods       []podstate.Summary
		minAvail   int
		succeeded  bool
		wantStatus metav1.ConditionStatus
		wantReason string
		wantInMsg  string
	}{
		// Inference: Grove's semantics, unchanged.
		{"inference: a new clique is not yet available", inference, nil, nil, 3, false, unknown, neverAvailable, ""},
		{"inference: a starting clique with some pods is not yet available", inference, nil, pods(running, running, notReady), 3, false, unknown, neverAvailable, ""},
		{"inference: still starting", inference, breach(unknown), pods(running, unscheduled, unscheduled), 3, false, unknown, neverAvailable, ""},
		{"inference: available for the first time", inference, breach(unknown), pods(running, running, running), 3, false, isFalse, sufficient, ""},
		{"inference: available on the first look", inference, nil, pods(running, running, running), 3, false, isFalse, sufficient, ""},
		{"inference: more than enough", inference, breach(isFalse), pods(running, running, running, running, running), 3, false, isFalse, sufficient, ""},
		{"inference: a pod stopped being ready", inference, breach(isFalse), pods(running, running, notReady), 3, false, isTrue, fewReady, ""},
		{"inference: a pod lost its node", inference, breach(isFalse), pods(running, running, unscheduled), 3, false, isTrue, fewScheduled, ""},
		{"inference: still breached, now for lack of scheduling", inference, breach(isTrue), pods(notReady, unscheduled, unscheduled), 3, false, isTrue, fewScheduled, ""},
		{"inference: recovered", inference, breach(isTrue), pods(running, running, running), 3, false, isFalse, sufficient, ""},
		{"inference: minAvailable 0 is always met", inference, nil, nil, 0, false, isFalse, sufficient, ""},
		{"inference: pods that exited 0 are not healthy", inference, breach(isFalse), pods(running, succeeded, succeeded), 3, false, isTrue, fewScheduled, ""},
		{"inference: a failed pod before availability is no breach", inference, nil, pods(running, running, failed), 3, false, unknown, neverAvailable, ""},
		{"inference: a failed pod after availability is an ordinary breach", inference, breach(isFalse), pods(running, running, failed), 3, false, isTrue, fewScheduled, ""},
		{"inference: terminating pods do not count", inference, breach(isFalse), pods(running, running, terminating), 3, false, isTrue, fewScheduled, ""},

		// Training: pods that exited 0 are healthy, failures breach at once.
		{"training: a new clique is not yet available", training, nil, nil, 3, false, unknown, neverAvailable, ""},
		{"training: still starting", training, breach(unknown), pods(running, notReady, unscheduled), 3, false, unknown, neverAvailable, ""},
		{"training: available", training, breach(unknown), pods(running, running, running), 3, false, isFalse, sufficient, ""},
		{"training: pods finishing keep the clique available", training, breach(isFalse), pods(running, succeeded, succeeded), 3, false, isFalse, sufficient, "2 exited 0"},
		{"training: every pod finished", training, breach(isFalse), pods(succeeded, succeeded, succeeded), 3, false, isFalse, sufficient, ""},
		{"training: pods that finished before the first look count", training, nil, pods(succeeded, running, running), 3, false, isFalse, sufficient, ""},
		{"training: a failure before availability is a breach", training, nil, pods(running, notReady, failed), 3, false, isTrue, podsFailed, "index 2 (failed)"},
		{"training: a failure while still starting is a breach", training, breach(unknown), pods(unscheduled, unscheduled, failed), 3, false, isTrue, podsFailed, "1 pod failed"},
		{"training: a failure after availability is a breach", training, breach(isFalse), pods(running, running, failed), 3, false, isTrue, podsFailed, ""},
		{"training: the failure reason wins over scheduling", training, breach(isTrue), pods(unscheduled, failed, failed), 3, false, isTrue, podsFailed, "2 pods failed: index 1 (failed), index 2 (failed)"},
		{"training: the message names exit codes", training, nil, pods(running, exitedWith(137, "OOMKilled")), 2, false, isTrue, podsFailed, "index 1 (container main exited 137, OOMKilled)"},
		{"training: a failure above minAvailable is no breach (the pod is replaced)", training, breach(isFalse), pods(running, running, failed), 2, false, isFalse, sufficient, ""},
		{"training: pods that exited 0 make up for a failure", training, breach(isFalse), pods(succeeded, running, failed), 2, false, isFalse, sufficient, ""},
		{"training: a failed pod deleted by someone still failed", training, nil, pods(running, running, func(i *podstate.Summary) { failed(i); terminating(i) }), 3, false, isTrue, podsFailed, "index 2"},
		{"training: a breach stays True once the failed pod is gone", training, breach(isTrue), pods(running, running), 3, false, isTrue, fewScheduled, ""},
		{"training: a pod stopped being ready", training, breach(isFalse), pods(running, succeeded, notReady), 3, false, isTrue, fewReady, "ready or exited 0"},
		{"training: a pod lost its node", training, breach(isFalse), pods(running, succeeded, unscheduled), 3, false, isTrue, fewScheduled, ""},
		{"training: a succeeded clique is never breached, even without pods", training, breach(isFalse), nil, 3, true, isFalse, allSucceeded, ""},
		{"training: a succeeded clique is never breached, even with a stray failure", training, breach(isTrue), pods(failed), 3, true, isFalse, allSucceeded, ""},
		{"inference ignores the succeeded flag", inference, breach(isFalse), nil, 3, true, isTrue, fewScheduled, ""},

		// Training restarted in place: while the barrier is up, the kept
		// pods lose their readiness on purpose.
		{"in place: adopted pods still ready from the old attempt are not yet available", training, nil, pods(running, running, running), 3, false, unknown, restartingInPlace, "previous attempt"},
		{"in place: pods held at their gates are no breach", training, breach(isFalse), pods(notReady, notReady, unscheduled), 3, false, unknown, restartingInPlace, ""},
		{"in place: a failure is still a breach", training, breach(unknown), pods(notReady, notReady, failed), 3, false, isTrue, podsFailed, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := minAvailableBreachedCondition(c.previous, breachInput{
				training:     c.workload == training,
				counts:       countFor(c.workload, c.pods),
				minAvailable: c.minAvail,
				succeeded:    c.succeeded,
				restarting:   strings.HasPrefix(c.name, "in place"),
			})
			if got.Type != groveconstants.ConditionTypeMinAvailableBreached || got.Status != c.wantStatus || got.Reason != c.wantReason {
				t.Errorf("got %s=%s (%s), want %s (%s); message %q", got.Type, got.Status, got.Reason, c.wantStatus, c.wantReason, got.Message)
			}
			if got.Message == "" || !strings.Contains(got.Message, c.wantInMsg) {
				t.Errorf("message %q, want it to contain %q", got.Message, c.wantInMsg)
			}
		})
	}
}

func TestDescribeFailures(t *testing.T) {
	var failedPods []podstate.Summary
	for i := 9; i >= 0; i-- {
		failedPods = append(failedPods, p(i, exitedWith(int32(i+1), "Error")))
	}
	failedPods = append(failedPods, p(0, named("stray"), noIndex, failed))
	got := describeFailures(failedPods)
	want := "11 pods failed: index 0 (container main exited 1, Error), index 1 (container main exited 2, Error), " +
		"index 2 (container main exited 3, Error), index 3 (container main exited 4, Error), " +
		"index 4 (container main exited 5, Error), 6 more"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := describeFailures([]podstate.Summary{p(0, named("stray"), noIndex, failed)}); got != "1 pod failed: pod stray (failed)" {
		t.Errorf("got %q", got)
	}
}

func TestScheduledCondition(t *testing.T) {
	cases := []struct {
		workload   copsev1alpha1.WorkloadType
		pods       []podstate.Summary
		minAvail   int
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		{inference, pods(unscheduled, unscheduled), 2, metav1.ConditionFalse, groveconstants.ConditionReasonInsufficientScheduledPods},
		{inference, pods(running, unscheduled), 2, metav1.ConditionFalse, groveconstants.ConditionReasonInsufficientScheduledPods},
		{inference, pods(running, notReady), 2, metav1.ConditionTrue, groveconstants.ConditionReasonSufficientScheduledPods},
		{inference, pods(running, running, running), 2, metav1.ConditionTrue, groveconstants.ConditionReasonSufficientScheduledPods},
		{inference, pods(running, succeeded), 2, metav1.ConditionFalse, groveconstants.ConditionReasonInsufficientScheduledPods},
		{training, pods(running, succeeded), 2, metav1.ConditionTrue, groveconstants.ConditionReasonSufficientScheduledPods},
		{training, pods(succeeded, succeeded), 2, metav1.ConditionTrue, groveconstants.ConditionReasonSufficientScheduledPods},
		{training, pods(running, failed), 2, metav1.ConditionFalse, groveconstants.ConditionReasonInsufficientScheduledPods},
	}
	for i, c := range cases {
		got := scheduledCondition(c.workload == training, countFor(c.workload, c.pods), c.minAvail)
		if got.Type != groveconstants.ConditionTypePodCliqueScheduled || got.Status != c.wantStatus || got.Reason != c.wantReason {
			t.Errorf("case %d (%s): got %s=%s (%s), want %s (%s)", i, c.workload, got.Type, got.Status, got.Reason, c.wantStatus, c.wantReason)
		}
	}
}

func TestSucceededConditionIsDatedByThePods(t *testing.T) {
	now := metav1.NewTime(t0)
	completion := lifecycle.CliqueCompletion(2, "", nil, pods(func(i *podstate.Summary) { succeeded(i); finishedAt(t0.Add(-time.Hour))(i) },
		func(i *podstate.Summary) { succeeded(i); finishedAt(t0.Add(-2 * time.Hour))(i) }))
	got := succeededCondition(completion, 2, now)
	if got.Type != copsev1alpha1.ConditionTypeSucceeded || got.Status != metav1.ConditionTrue ||
		got.Reason != copsev1alpha1.ReasonAllPodsSucceeded || !strings.Contains(got.Message, "all 2 pods exited 0") {
		t.Errorf("got %+v", got)
	}
	if !got.LastTransitionTime.Time.Equal(t0.Add(-time.Hour)) {
		t.Errorf("lastTransitionTime %v, want the last pod's finish %v, not the time it was seen", got.LastTransitionTime, t0.Add(-time.Hour))
	}
	unknownFinish := lifecycle.CliqueCompletion(1, "0", nil, nil)
	if got := succeededCondition(unknownFinish, 1, now); !got.LastTransitionTime.Equal(&now) {
		t.Errorf("without a known finish time the condition is dated now, got %v", got.LastTransitionTime)
	}
}

func TestRefusalCondition(t *testing.T) {
	now := metav1.NewTime(t0)
	msg := `pods "x" is forbidden: exceeded quota: q, requested: pods=1, used: pods=10, limited: pods=10`
	refused := refusalCondition(nil, &msg, now)
	if refused == nil || refused.Status != metav1.ConditionTrue || refused.Reason != copsev1alpha1.ReasonCreationRefused ||
		!strings.Contains(refused.Message, "exceeded quota: q") {
		t.Fatalf("a refusal: %+v", refused)
	}
	if again := refusalCondition(refused, &msg, now); again != nil {
		t.Errorf("the same refusal again must not rewrite the condition: %+v", again)
	}
	if none := refusalCondition(nil, nil, now); none != nil {
		t.Errorf("no refusal, none before: no condition, got %+v", none)
	}
	accepted := refusalCondition(refused, nil, now)
	if accepted == nil || accepted.Status != metav1.ConditionFalse || accepted.Reason != copsev1alpha1.ReasonCreationAccepted {
		t.Fatalf("created again after a refusal: %+v", accepted)
	}
	if again := refusalCondition(accepted, nil, now); again != nil {
		t.Errorf("still accepted: no change, got %+v", again)
	}
}

// countFor counts pods as the controller does, with the Training
// completion taken from the pods themselves.
func countFor(workload copsev1alpha1.WorkloadType, pods []podstate.Summary) lifecycle.PodCounts {
	done := lifecycle.CliqueCompletion(1<<20, "", nil, pods).Succeeded.CountBelow(1 << 20)
	return lifecycle.CountPods(pods, workload == training, done, nil)
}
