package podcliqueset

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

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
