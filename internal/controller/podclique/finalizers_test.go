package podclique

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/copse-dev/copse/internal/indexset"
	"github.com/copse-dev/copse/internal/podstate"
)

func TestOutcomeReleasable(t *testing.T) {
	running := releaseInput{cliqueUID: "pclq-uid", training: true, desired: 3,
		recordedSucceeded: indexset.Set{0: true}, recordedReplacing: map[types.UID]bool{"uid-2": true}}
	with := func(change func(*releaseInput)) releaseInput {
		in := running
		change(&in)
		return in
	}
	cases := []struct {
		name string
		pod  podstate.Summary
		in   releaseInput
		want bool
	}{
		{"a pod without the finalizer has nothing to release", p(0, succeeded), running, false},
		{"a running pod keeps it", p(1, withFinalizer), running, false},
		{"exit 0 recorded: released", p(0, succeeded, withFinalizer), running, true},
		{"exit 0 not recorded yet: kept, or it could vanish unrecorded", p(1, succeeded, withFinalizer), running, false},
		{"a recorded replacement: released", p(2, failed, withFinalizer), running, true},
		{"a failure that breaks the clique: kept for the replica restart", p(1, failed, withFinalizer), running, false},
		{"a pod deleted while running: kept until it has ended", p(1, terminating, withFinalizer), running, false},
		{"the workload ended: ended pods are released", p(1, failed, withFinalizer), with(func(in *releaseInput) { in.ended = true }), true},
		{"the workload ended: a terminating pod is released", p(1, terminating, withFinalizer), with(func(in *releaseInput) { in.ended = true }), true},
		{"the workload ended: a running pod waits for its termination", p(1, withFinalizer), with(func(in *releaseInput) { in.ended = true }), false},
		{"the replica succeeded: a lingering pod that failed is released", p(1, failed, withFinalizer),
			with(func(in *releaseInput) { in.replicaSucceeded = true }), true},
		{"the replica succeeded: a lingering pod being deleted (a namespace deletion) is released", p(1, terminating, withFinalizer),
			with(func(in *releaseInput) { in.replicaSucceeded = true }), true},
		{"the replica succeeded: a lingering pod that runs keeps it", p(1, withFinalizer), with(func(in *releaseInput) { in.replicaSucceeded = true }), false},
		{"the namespace is being deleted: a failure that breaks the clique is released", p(1, failed, withFinalizer),
			with(func(in *releaseInput) { in.namespaceGoing = true }), true},
		{"the namespace is being deleted: a running pod waits for its termination", p(1, withFinalizer),
			with(func(in *releaseInput) { in.namespaceGoing = true }), false},
		{"the PodClique is being deleted", p(1, withFinalizer), with(func(in *releaseInput) { in.cliqueGoing = true }), true},
		{"a pod of an earlier PodClique of the same name", p(1, withFinalizer, func(s *podstate.Summary) { s.ControllerUID = "old" }), running, true},
		{"an Inference clique records no outcomes", p(1, withFinalizer), with(func(in *releaseInput) { in.training = false }), true},
		{"exit 0 beyond the clique's size", p(5, succeeded, withFinalizer), running, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := outcomeReleasable(c.pod, c.in); got != c.want {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}
