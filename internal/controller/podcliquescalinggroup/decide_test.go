package podcliquescalinggroup

import (
	"testing"
	"time"

	"github.com/ai-dynamo/grove/operator/api/common/constants"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
)

var t0 = time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)

func breachedClique(groupReplica string, status metav1.ConditionStatus, since time.Time) copsev1alpha1.PodClique {
	c := copsev1alpha1.PodClique{}
	c.Labels = map[string]string{labels.ScalingGroupReplicaKey: groupReplica}
	c.Status.Conditions = []metav1.Condition{{Type: constants.ConditionTypeMinAvailableBreached, Status: status, LastTransitionTime: metav1.NewTime(since)}}
	return c
}

func TestDecideGroupReplicaRecreations(t *testing.T) {
	delay := time.Minute
	T, F := metav1.ConditionTrue, metav1.ConditionFalse
	cases := []struct {
		name         string
		minAvailable int32
		available    int32
		cliques      []copsev1alpha1.PodClique
		now          time.Time
		want         []int
		wantRequeue  time.Duration
	}{
		{name: "nothing breached", minAvailable: 1, available: 2,
			cliques: []copsev1alpha1.PodClique{breachedClique("0", F, t0), breachedClique("1", F, t0)}, now: t0.Add(time.Hour)},
		{name: "breached past the delay while the group meets minAvailable: recreate that replica alone", minAvailable: 1, available: 1,
			cliques: []copsev1alpha1.PodClique{breachedClique("0", F, t0), breachedClique("1", T, t0)}, now: t0.Add(delay), want: []int{1}},
		{name: "breached for less than the delay: wait for the remainder", minAvailable: 1, available: 1,
			cliques: []copsev1alpha1.PodClique{breachedClique("0", F, t0), breachedClique("1", T, t0)}, now: t0.Add(20 * time.Second), wantRequeue: 40 * time.Second},
		{name: "the group is below minAvailable: the whole PodCliqueSet replica is the PodCliqueSet controller's", minAvailable: 2, available: 1,
			cliques: []copsev1alpha1.PodClique{breachedClique("0", F, t0), breachedClique("1", T, t0)}, now: t0.Add(time.Hour)},
		{name: "the earliest breach of a replica's cliques counts", minAvailable: 1, available: 1,
			cliques: []copsev1alpha1.PodClique{breachedClique("0", F, t0), breachedClique("2", T, t0.Add(50*time.Second)), breachedClique("2", T, t0)},
			now:     t0.Add(delay), want: []int{2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := decideGroupReplicaRecreations(c.minAvailable, c.available, c.cliques, delay, c.now)
			if diff := cmp.Diff(c.want, got.replicas); diff != "" {
				t.Errorf("replicas (-want +got):\n%s", diff)
			}
			if got.requeueAfter != c.wantRequeue {
				t.Errorf("requeueAfter %s, want %s", got.requeueAfter, c.wantRequeue)
			}
		})
	}
}
