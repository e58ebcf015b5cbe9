package podcliqueset

import (
	"slices"
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
	return pcs, (&observed{podCliques: []*copsev1alpha1.PodClique{pclq}, pods: pods}).categorise().countMembers(pcs)
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

func TestEvaluateSuccessPolicy(t *testing.T) {
	all := func(targets ...string) *copsev1alpha1.SuccessPolicy {
		return &copsev1alpha1.SuccessPolicy{Operator: copsev1alpha1.SuccessPolicyOperatorAll, TargetCliques: targets}
	}
	anyOf := func(targets ...string) *copsev1alpha1.SuccessPolicy {
		return &copsev1alpha1.SuccessPolicy{Operator: copsev1alpha1.SuccessPolicyOperatorAny, TargetCliques: targets}
	}
	done := func(name, template string, minute int) cliqueOutcome {
		return cliqueOutcome{name: name, template: template, succeeded: true, succeededAt: t0.Add(time.Duration(minute) * time.Minute)}
	}
	running := func(name, template string) cliqueOutcome { return cliqueOutcome{name: name, template: template} }
	at := func(minute int) time.Time { return t0.Add(time.Duration(minute) * time.Minute) }

	launcherDone := []cliqueOutcome{done("j-0-launcher", "launcher", 3), running("j-0-worker", "worker")}
	// A scaling group "g" of two replicas, each with a "rank" clique.
	ranks := []cliqueOutcome{done("j-0-g-0-rank", "rank", 2), running("j-0-g-1-rank", "rank"), done("j-0-lead", "lead", 5)}
	cases := []struct {
		name     string
		policy   *copsev1alpha1.SuccessPolicy
		complete bool
		cliques  []cliqueOutcome
		want     policyVerdict
	}{
		{name: "no policy: every clique succeeded", complete: true,
			cliques: []cliqueOutcome{done("j-0-a", "a", 1), done("j-0-b", "b", 4)},
			want:    policyVerdict{met: true, at: at(4), by: []string{"j-0-a", "j-0-b"}}},
		{name: "no policy: one clique still runs", complete: true, cliques: launcherDone},
		{name: "no policy: an incomplete replica never succeeded", complete: false, cliques: []cliqueOutcome{done("j-0-a", "a", 1)}},
		{name: "no policy, no clique", complete: false},
		{name: "All of the launcher: met while the workers run", policy: all("launcher"), complete: true, cliques: launcherDone,
			want: policyVerdict{met: true, at: at(3), by: []string{"j-0-launcher"}}},
		{name: "Any of the launcher: met while the workers run", policy: anyOf("launcher"), complete: true, cliques: launcherDone,
			want: policyVerdict{met: true, at: at(3), by: []string{"j-0-launcher"}}},
		{name: "All of the workers: not met", policy: all("worker"), complete: true, cliques: launcherDone},
		{name: "Any of the workers: not met", policy: anyOf("worker"), complete: true, cliques: launcherDone},
		{name: "All with empty targets is every clique", policy: all(), complete: true, cliques: launcherDone},
		{name: "Any with empty targets: any clique", policy: anyOf(), complete: true, cliques: launcherDone,
			want: policyVerdict{met: true, at: at(3), by: []string{"j-0-launcher"}}},
		{name: "All counts every grouped instance of a template", policy: all("rank"), complete: true, cliques: ranks},
		{name: "Any: the first grouped instance to succeed meets it, at its time", policy: anyOf("rank", "lead"), complete: true, cliques: ranks,
			want: policyVerdict{met: true, at: at(2), by: []string{"j-0-g-0-rank", "j-0-lead"}}},
		{name: "All: met when the last target succeeded", policy: all("rank", "lead"), complete: true,
			cliques: []cliqueOutcome{done("j-0-g-0-rank", "rank", 2), done("j-0-g-1-rank", "rank", 7), done("j-0-lead", "lead", 5), running("j-0-w", "w")},
			want:    policyVerdict{met: true, at: at(7), by: []string{"j-0-g-0-rank", "j-0-g-1-rank", "j-0-lead"}}},
		{name: "All: an incomplete replica may still get a target that has not succeeded", policy: all("launcher"), complete: false, cliques: launcherDone},
		{name: "All: no PodClique of the target exists yet", policy: all("launcher"), complete: true, cliques: []cliqueOutcome{running("j-0-worker", "worker")}},
		{name: "Any: a succeeded target counts even while other PodCliques are missing", policy: anyOf("launcher"), complete: false, cliques: launcherDone,
			want: policyVerdict{met: true, at: at(3), by: []string{"j-0-launcher"}}},
		{name: "the operator defaults to All", policy: &copsev1alpha1.SuccessPolicy{TargetCliques: []string{"rank"}}, complete: true, cliques: ranks},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := evaluateSuccessPolicy(c.policy, c.complete, c.cliques)
			if got.met != c.want.met || !got.at.Equal(c.want.at) || !slices.Equal(got.by, c.want.by) {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

// TestAssessReplicaAppliesTheSuccessPolicy: a replica's PodCliques are
// matched to the policy's targets by their clique template.
func TestAssessReplicaAppliesTheSuccessPolicy(t *testing.T) {
	succeeded := []metav1.Condition{{Type: copsev1alpha1.ConditionTypeSucceeded, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)}}
	members := []member{
		{name: "job-0-launcher", template: "launcher", conditions: succeeded},
		{name: "job-0-worker", template: "worker"},
	}
	anyLauncher := &copsev1alpha1.SuccessPolicy{Operator: copsev1alpha1.SuccessPolicyOperatorAny, TargetCliques: []string{"launcher"}}
	if a := assessReplica(0, 2, members, true, anyLauncher, nil); !a.succeeded || !a.succeededAt.Equal(t0) || !slices.Equal(a.succeededBy, []string{"job-0-launcher"}) {
		t.Errorf("with the policy: %+v", a)
	}
	if a := assessReplica(0, 2, members, true, nil, nil); a.succeeded {
		t.Errorf("without a policy a running worker keeps the replica from succeeding: %+v", a)
	}
	if a := assessReplica(0, 2, members, false, anyLauncher, nil); a.succeeded {
		t.Errorf("Inference never succeeds: %+v", a)
	}
}
