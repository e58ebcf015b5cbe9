package podcliqueset

import (
	"testing"
	"time"

	"github.com/ai-dynamo/grove/operator/api/common/constants"
	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/podstate"
)

// trainingJob is Training PodCliqueSet "job" of one replica with clique
// "worker" of two pods, its PodClique (breach condition as given) and pods.
func trainingJob(breach metav1.ConditionStatus, pods ...podstate.Summary) (*copsev1alpha1.PodCliqueSet, *observed) {
	pcs := &copsev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Name: "job", UID: "pcs"}}
	pcs.Spec.WorkloadType = copsev1alpha1.WorkloadTypeTraining
	pcs.Spec.Replicas = 1
	pcs.Spec.Template.Cliques = []*grovecorev1alpha1.PodCliqueTemplateSpec{{Name: "worker", Spec: grovecorev1alpha1.PodCliqueSpec{Replicas: 2}}}
	pclq := &copsev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Name: "job-0-worker", UID: "pclq",
		Labels:          map[string]string{labels.ReplicaKey: "0", labels.AttemptKey: "0"},
		OwnerReferences: []metav1.OwnerReference{{UID: "pcs", Controller: ptrTrue()}}}}
	pclq.Spec.Replicas = 2
	pclq.Status.Conditions = []metav1.Condition{{Type: constants.ConditionTypeMinAvailableBreached, Status: breach, LastTransitionTime: metav1.NewTime(t0)}}
	for i := range pods {
		pods[i].PodClique, pods[i].ControllerUID, pods[i].Replica = "job-0-worker", "pclq", 0
	}
	return pcs, (&observed{podCliques: []*copsev1alpha1.PodClique{pclq}, pods: pods}).categorise()
}

func ptrTrue() *bool { b := true; return &b }

func summary(index int, phase corev1.PodPhase, started, finished time.Time) podstate.Summary {
	return podstate.Summary{Name: "p" + string(rune('0'+index)), UID: types.UID("u" + string(rune('0'+index))), Index: index, HasIndex: true,
		Phase: phase, Scheduled: true, Ready: phase == corev1.PodRunning, Started: !started.IsZero(), StartedAt: started, FinishedAt: finished}
}

func TestAssessReplicasReadsThePods(t *testing.T) {
	start := t0.Add(-time.Hour)
	t.Run("a failure the clique's condition does not show yet is a breach, dated by the pod", func(t *testing.T) {
		pcs, obs := trainingJob(metav1.ConditionFalse,
			summary(0, corev1.PodRunning, start, time.Time{}),
			summary(1, corev1.PodFailed, start, t0.Add(-time.Minute)))
		a := assessReplicas(pcs, obs)[0]
		if !a.breached || !a.breachedSince.Equal(t0.Add(-time.Minute)) || a.available {
			t.Errorf("breached %v since %v available %v; want breached since the failure", a.breached, a.breachedSince, a.available)
		}
		if a.firstFailure == nil || a.firstFailure.Name != "p1" {
			t.Errorf("root cause %+v, want p1", a.firstFailure)
		}
	})
	t.Run("success the clique's condition does not show yet, dated by the last exit", func(t *testing.T) {
		pcs, obs := trainingJob(metav1.ConditionFalse,
			summary(0, corev1.PodSucceeded, start, t0.Add(-2*time.Minute)),
			summary(1, corev1.PodSucceeded, start.Add(time.Second), t0.Add(-time.Minute)))
		a := assessReplicas(pcs, obs)[0]
		if !a.succeeded || !a.succeededAt.Equal(t0.Add(-time.Minute)) || a.breached {
			t.Errorf("succeeded %v at %v breached %v", a.succeeded, a.succeededAt, a.breached)
		}
		if !a.started || !a.startedAt.Equal(start) {
			t.Errorf("started %v at %v, want the earliest container start %v", a.started, a.startedAt, start)
		}
	})
	t.Run("a kept pod whose old process failed before the kubelet restarted it is the previous attempt's, not a breach", func(t *testing.T) {
		oldProcess := summary(1, corev1.PodFailed, start, t0.Add(-time.Minute))
		oldProcess.Moved, oldProcess.RestartsAtMove, oldProcess.ContainerRestarts = true, 0, 0
		pcs, obs := trainingJob(metav1.ConditionFalse, summary(0, corev1.PodRunning, start, time.Time{}), oldProcess)
		a := assessReplicas(pcs, obs)[0]
		if a.breached || a.firstFailure != nil {
			t.Errorf("breached %v root cause %+v; want neither: the failure is the previous attempt's", a.breached, a.firstFailure)
		}
		restartedThenFailed := oldProcess
		restartedThenFailed.ContainerRestarts = 1
		pcs, obs = trainingJob(metav1.ConditionFalse, summary(0, corev1.PodRunning, start, time.Time{}), restartedThenFailed)
		if a := assessReplicas(pcs, obs)[0]; !a.breached || a.firstFailure == nil || a.firstFailure.Name != "p1" {
			t.Errorf("after the kubelet restarted it: breached %v root cause %+v; want a breach caused by p1", a.breached, a.firstFailure)
		}
	})
	t.Run("running but never ready is started", func(t *testing.T) {
		unready := summary(1, corev1.PodRunning, start, time.Time{})
		unready.Ready = false
		pcs, obs := trainingJob(metav1.ConditionUnknown, summary(0, corev1.PodRunning, start.Add(time.Second), time.Time{}), unready)
		a := assessReplicas(pcs, obs)[0]
		if !a.started || !a.startedAt.Equal(start) || a.available {
			t.Errorf("started %v at %v available %v; want started at %v, not available", a.started, a.startedAt, a.available, start)
		}
	})
	t.Run("pods scheduled but not started are not started", func(t *testing.T) {
		pcs, obs := trainingJob(metav1.ConditionUnknown, summary(0, corev1.PodPending, time.Time{}, time.Time{}), summary(1, corev1.PodRunning, start, time.Time{}))
		if a := assessReplicas(pcs, obs)[0]; a.started {
			t.Errorf("started with one pod of minAvailable 2 not started")
		}
	})
}

// TestAssessReplicaIgnoredCliqueIsNoRootCause: an eval pod an Ignore rule
// matches is being evicted (disrupted, before its worker failed) while a
// worker exits with a code a FailWorkload rule names: the worker is the
// root cause and its rule applies. With the eval pod alone the clique is
// breached as any clique below minAvailable is (docs/training.md), with no
// root cause: the default verdict.
func TestAssessReplicaIgnoredCliqueIsNoRootCause(t *testing.T) {
	policy := &copsev1alpha1.TrainingFailurePolicy{Rules: []copsev1alpha1.FailureRule{
		{Name: "eval-tolerant", Action: copsev1alpha1.FailureActionIgnore, TargetCliques: []string{"eval"}},
		{Name: "bug", Action: copsev1alpha1.FailureActionFailWorkload,
			OnExitCodes: &copsev1alpha1.ExitCodesRequirement{Operator: copsev1alpha1.ExitCodesIn, Values: []int32{42}}},
	}}
	evicted := podstate.Summary{Name: "eval-0", UID: "eval-0", PodClique: "job-0-eval", Phase: corev1.PodRunning, Terminating: true,
		Disrupted: true, DisruptedAt: t0.Add(-time.Minute),
		Failure: &podstate.Failure{Reason: "EvictionByEvictionAPI", Conditions: map[corev1.PodConditionType]corev1.ConditionStatus{corev1.DisruptionTarget: corev1.ConditionTrue}}}
	crashed := podstate.Summary{Name: "worker-0", UID: "worker-0", PodClique: "job-0-worker", Phase: corev1.PodFailed, FinishedAt: t0,
		Failure: &podstate.Failure{Container: "train", ExitCode: 42, Exits: []podstate.ContainerExit{{Container: "train", Code: 42}}}}
	breached := []metav1.Condition{{Type: constants.ConditionTypeMinAvailableBreached, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)}}
	eval := member{name: "job-0-eval", template: "eval", conditions: breached, pods: []podstate.Summary{evicted}}
	eval.ignored = lifecycle.IgnoredFailures(policy, "eval", eval.pods)
	worker := member{name: "job-0-worker", template: "worker", conditions: breached, pods: []podstate.Summary{crashed}}

	a := assessReplica(0, 2, []member{eval, worker}, true, nil, policy)
	if a.firstFailure == nil || a.firstFailure.Name != "worker-0" {
		t.Errorf("root cause %+v, want the worker", a.firstFailure)
	}
	if a.verdict.Rule != "bug" || a.verdict.Action != copsev1alpha1.FailureActionFailWorkload {
		t.Errorf("verdict %+v, want rule bug's FailWorkload", a.verdict)
	}

	a = assessReplica(0, 1, []member{eval}, true, nil, policy)
	if a.firstFailure != nil || a.verdict != (lifecycle.RuleVerdict{Action: copsev1alpha1.FailureActionRestartReplica}) {
		t.Errorf("eval alone: root cause %+v verdict %+v, want none and the default", a.firstFailure, a.verdict)
	}
}
