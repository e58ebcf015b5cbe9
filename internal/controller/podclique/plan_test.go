package podclique

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/podstate"
)

func TestPlanPods(t *testing.T) {
	cases := []struct {
		name         string
		desired      int
		minAvailable int // defaults to desired
		workload     copsev1alpha1.WorkloadType
		blocked      bool
		pods         []podstate.Summary
		creating     []int
		vacating     []int
		deleting     []types.UID
		recorded     string // status.succeededIndexes
		replacing    []types.UID
		ignored      []types.UID
		replacements int32
		budget       int
		wantCreate   []int
		wantDelete   []string // "pod:cause"
		wantReplace  []string
		wantRetryAt  time.Time
		wantCut      bool
	}{
		{
			name:       "an empty clique gets every index",
			desired:    3,
			wantCreate: []int{0, 1, 2},
		},
		{
			name:    "a complete clique is left alone",
			desired: 3,
			pods:    []podstate.Summary{p(0), p(1), p(2, unscheduled)},
		},
		{
			name:     "pods created but not yet in the cache count as existing",
			desired:  3,
			pods:     []podstate.Summary{p(0)},
			creating: []int{1, 2},
		},
		{
			name:       "scale-out while creations are pending skips their indices",
			desired:    4,
			pods:       []podstate.Summary{p(0)},
			creating:   []int{1},
			wantCreate: []int{2, 3},
		},
		{
			name:       "a discarded kept pod's index waits until that pod is gone",
			desired:    3,
			workload:   copsev1alpha1.WorkloadTypeTraining,
			pods:       []podstate.Summary{p(0)},
			vacating:   []int{1},
			wantCreate: []int{2},
		},
		{
			name:       "scale-in removes the highest indices",
			desired:    1,
			pods:       []podstate.Summary{p(0), p(1), p(2)},
			wantDelete: []string{"pod-2:scale-in", "pod-1:scale-in"},
		},
		{
			name:       "scale-in removes unscheduled pods first",
			desired:    2,
			pods:       []podstate.Summary{p(0, unscheduled), p(1), p(2)},
			wantDelete: []string{"pod-0:scale-in"},
		},
		{
			name:     "scale-in waits for pending creations",
			desired:  1,
			pods:     []podstate.Summary{p(0), p(1)},
			creating: []int{2},
		},
		{
			name:     "pods deleted but still in the cache count as gone",
			desired:  1,
			pods:     []podstate.Summary{p(0), p(1), p(2)},
			deleting: []types.UID{"uid-1", "uid-2"},
		},
		{
			name:       "a terminating pod's index gets a new pod",
			desired:    2,
			pods:       []podstate.Summary{p(0), p(1, terminating)},
			wantCreate: []int{1},
		},
		{
			name:       "inference: a failed pod is deleted and recreated at its index",
			desired:    3,
			pods:       []podstate.Summary{p(0), p(1, failed), p(2)},
			wantCreate: []int{1},
			wantDelete: []string{"pod-1:ended"},
		},
		{
			name:       "inference: a succeeded pod is replaced too",
			desired:    1,
			pods:       []podstate.Summary{p(0, succeeded)},
			wantCreate: []int{0},
			wantDelete: []string{"pod-0:ended"},
		},
		{
			name:     "a replacement in flight is not repeated",
			desired:  2,
			pods:     []podstate.Summary{p(0), p(1, failed)},
			deleting: []types.UID{"uid-1"},
			creating: []int{1},
		},
		{
			name:       "a deleted pod's index gets a new pod",
			desired:    3,
			pods:       []podstate.Summary{p(0), p(2)},
			wantCreate: []int{1},
		},
		{
			name:     "training: a pod that exited 0 keeps its index",
			desired:  2,
			workload: copsev1alpha1.WorkloadTypeTraining,
			pods:     []podstate.Summary{p(0, succeeded), p(1)},
		},
		{
			name:         "training: a failed pod is replaced while minAvailable pods are ready, once its back-off passed",
			desired:      3,
			minAvailable: 2,
			workload:     copsev1alpha1.WorkloadTypeTraining,
			pods:         []podstate.Summary{p(0, failed, finishedAt(t0.Add(-10*time.Second))), p(1), p(2)},
			wantDelete:   []string{"pod-0:replaced"},
			wantReplace:  []string{"pod-0"},
		},
		{
			name:         "training: the back-off of the first replacement is 10s from the failure",
			desired:      3,
			minAvailable: 2,
			workload:     copsev1alpha1.WorkloadTypeTraining,
			pods:         []podstate.Summary{p(0, failed, finishedAt(t0.Add(-4*time.Second))), p(1), p(2)},
			wantRetryAt:  t0.Add(6 * time.Second),
		},
		{
			name:         "training: the back-off doubles with each replacement made",
			desired:      3,
			minAvailable: 2,
			workload:     copsev1alpha1.WorkloadTypeTraining,
			replacements: 2,
			pods:         []podstate.Summary{p(0, failed, finishedAt(t0.Add(-30*time.Second))), p(1), p(2)},
			wantRetryAt:  t0.Add(10 * time.Second),
		},
		{
			name:         "training: failed pods due together are replaced together, from the latest failure",
			desired:      4,
			minAvailable: 2,
			workload:     copsev1alpha1.WorkloadTypeTraining,
			pods: []podstate.Summary{p(0, failed, finishedAt(t0.Add(-time.Minute))), p(1, failed, finishedAt(t0.Add(-11*time.Second))),
				p(2), p(3)},
			wantDelete:  []string{"pod-0:replaced", "pod-1:replaced"},
			wantReplace: []string{"pod-0", "pod-1"},
		},
		{
			name:         "training: a recorded replacement is carried out, and its index waits until the pod is gone",
			desired:      3,
			minAvailable: 2,
			workload:     copsev1alpha1.WorkloadTypeTraining,
			replacing:    []types.UID{"uid-0"},
			replacements: 1,
			pods:         []podstate.Summary{p(0, failed), p(1), p(2)},
			wantDelete:   []string{"pod-0:replaced"},
		},
		{
			name:         "training: a replaced pod that is still terminating holds its index",
			desired:      3,
			minAvailable: 2,
			workload:     copsev1alpha1.WorkloadTypeTraining,
			replacing:    []types.UID{"uid-0"},
			pods:         []podstate.Summary{p(0, failed, terminating), p(1), p(2)},
		},
		{
			name:       "training: a pod deleted while running holds its index until it is gone",
			desired:    2,
			workload:   copsev1alpha1.WorkloadTypeTraining,
			pods:       []podstate.Summary{p(0, terminating), p(1)},
			wantCreate: nil,
		},
		{
			name:       "training: its index gets a new pod once it is gone",
			desired:    2,
			workload:   copsev1alpha1.WorkloadTypeTraining,
			pods:       []podstate.Summary{p(1)},
			wantCreate: []int{0},
		},
		{
			name:         "training: a failed pod a failure rule ignores is replaced even in a gang (minAvailable = replicas), after its back-off",
			desired:      3,
			minAvailable: 3,
			workload:     copsev1alpha1.WorkloadTypeTraining,
			ignored:      []types.UID{"uid-0"},
			pods:         []podstate.Summary{p(0, failed, finishedAt(t0.Add(-10*time.Second))), p(1), p(2)},
			wantDelete:   []string{"pod-0:replaced"},
			wantReplace:  []string{"pod-0"},
		},
		{
			name:         "training: an ignored failure waits for its back-off like any replacement",
			desired:      3,
			minAvailable: 3,
			workload:     copsev1alpha1.WorkloadTypeTraining,
			ignored:      []types.UID{"uid-0"},
			pods:         []podstate.Summary{p(0, failed, finishedAt(t0.Add(-4*time.Second))), p(1), p(2)},
			wantRetryAt:  t0.Add(6 * time.Second),
		},
		{
			name:         "training: a failed pod stays once fewer than minAvailable are ready",
			desired:      3,
			minAvailable: 3,
			workload:     copsev1alpha1.WorkloadTypeTraining,
			pods:         []podstate.Summary{p(0, failed), p(1), p(2)},
		},
		{
			name:         "training: pods that exited 0 count toward minAvailable for a replacement",
			desired:      3,
			minAvailable: 3,
			workload:     copsev1alpha1.WorkloadTypeTraining,
			pods:         []podstate.Summary{p(0, failed), p(1, succeeded), p(2)},
		},
		{
			name:         "training: pods that exited 0 let a failed pod be replaced",
			desired:      4,
			minAvailable: 2,
			workload:     copsev1alpha1.WorkloadTypeTraining,
			pods:         []podstate.Summary{p(0, failed, finishedAt(t0.Add(-time.Minute))), p(1, succeeded), p(2), p(3, notReady)},
			wantDelete:   []string{"pod-0:replaced"},
			wantReplace:  []string{"pod-0"},
		},
		{
			name:     "training: a clique whose pods all exited 0 gets nothing",
			desired:  2,
			workload: copsev1alpha1.WorkloadTypeTraining,
			pods:     []podstate.Summary{p(0, succeeded), p(1, succeeded)},
		},
		{
			name:       "training: a pod that exited 0 wins its index over a running one",
			desired:    2,
			workload:   copsev1alpha1.WorkloadTypeTraining,
			pods:       []podstate.Summary{p(0, named("done"), succeeded), p(0, named("rerun")), p(1)},
			wantDelete: []string{"rerun:duplicate-index"},
		},
		{
			name:     "training: two pods that exited 0 on one index both stay",
			desired:  1,
			workload: copsev1alpha1.WorkloadTypeTraining,
			pods:     []podstate.Summary{p(0, named("a"), succeeded), p(0, named("b"), succeeded)},
		},
		{
			name:     "training: a pod that exited 0 without index stays",
			desired:  1,
			workload: copsev1alpha1.WorkloadTypeTraining,
			pods:     []podstate.Summary{p(0), p(0, named("x"), noIndex, succeeded)},
		},
		{
			name:       "training: scale-in never picks a pod that exited 0",
			desired:    1,
			workload:   copsev1alpha1.WorkloadTypeTraining,
			pods:       []podstate.Summary{p(0, succeeded), p(1), p(2, unscheduled)},
			wantDelete: []string{"pod-2:scale-in", "pod-1:scale-in"},
		},
		{
			name:     "training: a deleted pod that exited 0 keeps its index done",
			desired:  2,
			workload: copsev1alpha1.WorkloadTypeTraining,
			pods:     []podstate.Summary{p(0, succeeded, terminating), p(1)},
		},
		{
			name:     "training: exit 0 is final: a recorded index gets no pod once its pod is gone",
			desired:  3,
			workload: copsev1alpha1.WorkloadTypeTraining,
			recorded: "0,2",
			pods:     []podstate.Summary{p(1)},
		},
		{
			name:       "training: a pod on a recorded index is a duplicate",
			desired:    2,
			workload:   copsev1alpha1.WorkloadTypeTraining,
			recorded:   "0",
			pods:       []podstate.Summary{p(0, named("rerun")), p(1)},
			wantDelete: []string{"rerun:duplicate-index"},
		},
		{
			name:       "the budget cuts creations; the rest waits for the next pass",
			desired:    5,
			budget:     3,
			wantCreate: []int{0, 1, 2},
			wantCut:    true,
		},
		{
			name:       "the budget goes to deletions first",
			desired:    2,
			budget:     1,
			pods:       []podstate.Summary{p(0, failed), p(1, failed)},
			wantDelete: []string{"pod-0:ended"},
			wantCut:    true,
		},
		{
			name:     "blocked: deleted and terminating pods are not recreated",
			desired:  3,
			workload: copsev1alpha1.WorkloadTypeTraining,
			blocked:  true,
			pods:     []podstate.Summary{p(0, failed), p(1, terminating)},
		},
		{
			name:         "blocked: a failed pod is not replaced even with minAvailable ready",
			desired:      3,
			minAvailable: 1,
			workload:     copsev1alpha1.WorkloadTypeTraining,
			blocked:      true,
			pods:         []podstate.Summary{p(0, failed), p(1), p(2)},
		},
		{
			name:     "blocked: an empty clique stays empty",
			desired:  3,
			workload: copsev1alpha1.WorkloadTypeTraining,
			blocked:  true,
		},
		{
			name:       "blocked: surplus pods are still removed",
			desired:    1,
			workload:   copsev1alpha1.WorkloadTypeTraining,
			blocked:    true,
			pods:       []podstate.Summary{p(0), p(1), p(1, named("dup"), notReady), p(0, named("x"), noIndex)},
			wantDelete: []string{"x:no-index", "dup:duplicate-index", "pod-1:scale-in"},
		},
		{
			name:    "blocked applies to inference too",
			desired: 2,
			blocked: true,
			pods:    []podstate.Summary{p(0, succeeded)},
		},
		{
			name:       "a second pod on one index is removed and the clique completed",
			desired:    3,
			pods:       []podstate.Summary{p(0), p(1, named("a")), p(1, named("b"), notReady)},
			wantCreate: []int{2},
			wantDelete: []string{"b:duplicate-index"},
		},
		{
			name:       "a pod without index is removed",
			desired:    1,
			pods:       []podstate.Summary{p(0), p(0, named("x"), noIndex)},
			wantDelete: []string{"x:no-index"},
		},
		{
			name:       "ended pods are replaced, not counted as surplus",
			desired:    1,
			pods:       []podstate.Summary{p(0), p(1), p(2, failed)},
			wantDelete: []string{"pod-2:ended", "pod-1:scale-in"},
		},
		{
			name:       "scale to zero",
			desired:    0,
			pods:       []podstate.Summary{p(0), p(1, gated)},
			wantDelete: []string{"pod-1:scale-in", "pod-0:scale-in"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := planInput{
				desired:      c.desired,
				minAvailable: c.minAvailable,
				training:     c.workload == copsev1alpha1.WorkloadTypeTraining,
				blocked:      c.blocked,
				pods:         c.pods,
				creating:     c.creating,
				vacating:     c.vacating,
				deleting:     map[types.UID]bool{},
				replacing:    uidSet(c.replacing),
				ignored:      uidSet(c.ignored),
				replacements: c.replacements,
				now:          t0,
				budget:       c.budget,
			}
			if in.minAvailable == 0 {
				in.minAvailable = c.desired
			}
			if in.training {
				in.succeeded = lifecycle.CliqueCompletion(c.desired, c.recorded, nil, c.pods).Succeeded
			}
			for _, uid := range c.deleting {
				in.deleting[uid] = true
			}
			got := planPods(in)
			if diff := cmp.Diff(c.wantCreate, got.create); diff != "" {
				t.Errorf("create (-want +got):\n%s", diff)
			}
			var gotDelete []string
			for _, d := range got.delete {
				gotDelete = append(gotDelete, d.pod.Name+":"+string(d.cause))
			}
			if diff := cmp.Diff(c.wantDelete, gotDelete); diff != "" {
				t.Errorf("delete (-want +got):\n%s", diff)
			}
			var gotReplace []string
			for _, r := range got.replace {
				gotReplace = append(gotReplace, r.Name)
			}
			if diff := cmp.Diff(c.wantReplace, gotReplace); diff != "" {
				t.Errorf("replace (-want +got):\n%s", diff)
			}
			if !got.retryAt.Equal(c.wantRetryAt) || got.truncated != c.wantCut {
				t.Errorf("retryAt %v truncated %v, want %v %v", got.retryAt, got.truncated, c.wantRetryAt, c.wantCut)
			}
		})
	}
}
