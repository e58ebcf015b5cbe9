package podcliqueset

import (
	"slices"
	"testing"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/podstate"
)

// categorise files every object and pod once under its replica and run,
// as its labels say; an object without a replica label is the
// PodCliqueSet's own (children.NoReplica), one without an attempt label is
// of run 0.
func TestCategorise(t *testing.T) {
	meta := func(name string, l ...string) metav1.ObjectMeta {
		m := map[string]string{}
		for i := 0; i+1 < len(l); i += 2 {
			m[l[i]] = l[i+1]
		}
		return metav1.ObjectMeta{Name: name, Labels: m}
	}
	oldClique := &copsev1alpha1.PodClique{ObjectMeta: meta("job-0-a", labels.ReplicaKey, "0", labels.AttemptKey, "0")}
	newClique := &copsev1alpha1.PodClique{ObjectMeta: meta("job-0-a-new", labels.ReplicaKey, "0", labels.AttemptKey, "1")}
	otherReplica := &copsev1alpha1.PodClique{ObjectMeta: meta("job-1-a", labels.ReplicaKey, "1")}
	group := &copsev1alpha1.PodCliqueScalingGroup{ObjectMeta: meta("job-1-g", labels.ReplicaKey, "1", labels.AttemptKey, "2")}
	service := &corev1.Service{ObjectMeta: meta("job-0", labels.ReplicaKey, "0")}
	shared := &corev1.ConfigMap{ObjectMeta: meta("job-all")}
	obs := (&observed{
		byKind: map[string][]client.Object{
			"PodClique": {oldClique, newClique, otherReplica}, "PodCliqueScalingGroup": {group},
			"Service": {service}, "Shared": {shared},
		},
		podCliques:    []*copsev1alpha1.PodClique{oldClique, newClique, otherReplica},
		scalingGroups: []*copsev1alpha1.PodCliqueScalingGroup{group},
		pods: []podstate.Summary{
			{Name: "p0", PodClique: "job-0-a", Replica: 0, Attempt: 0},
			{Name: "p1", PodClique: "job-0-a-new", Replica: 0, Attempt: 1},
			{Name: "stray", Replica: -1},
		},
	}).categorise()

	if got := obs.replicas[0].podCliques; !slices.Equal(got, []*copsev1alpha1.PodClique{oldClique, newClique}) {
		t.Errorf("replica 0's PodCliques of every run: %v", names(got))
	}
	if got := obs.replicas[0].runs[1].podCliques; !slices.Equal(got, []*copsev1alpha1.PodClique{newClique}) {
		t.Errorf("replica 0's PodCliques of run 1: %v", names(got))
	}
	if got := obs.replicas[1].runs[0].podCliques; !slices.Equal(got, []*copsev1alpha1.PodClique{otherReplica}) {
		t.Errorf("a PodClique without an attempt label is of run 0: %v", names(got))
	}
	if got := obs.replicas[1].runs[2].scalingGroups; len(got) != 1 || got[0] != group {
		t.Errorf("replica 1's scaling groups of run 2: %v", got)
	}
	if got := obs.replicas[0].runs[0].byKind["Service"]; !slices.Equal(got, []client.Object{service}) {
		t.Errorf("replica 0's Services of run 0: %v", got)
	}
	if got := obs.children.Of("Shared", children.NoReplica); !slices.Equal(got, []client.Object{shared}) {
		t.Errorf("the PodCliqueSet's own objects: %v", got)
	}
	if got := obs.replicas[0].runs[1].pods; len(got) != 1 || got[0].Name != "p1" {
		t.Errorf("replica 0's pods of run 1: %v", got)
	}
	if got := obs.podsByClique["job-0-a"]; len(got) != 1 || got[0].Name != "p0" {
		t.Errorf("pods of job-0-a: %v", got)
	}
	if got := obs.replicas[7].runs[3]; len(got.podCliques)+len(got.pods)+len(got.byKind) != 0 {
		t.Errorf("a replica never seen is empty: %+v", got)
	}
}

func names(cliques []*copsev1alpha1.PodClique) []string {
	var out []string
	for _, c := range cliques {
		out = append(out, c.Name)
	}
	return out
}

// groupedTraining is a Training PodCliqueSet "job" of 2 replicas: a
// standalone clique "leader" and a scaling group "workers" of 2 replicas of
// clique "worker".
func groupedTraining() *copsev1alpha1.PodCliqueSet {
	pcs := &copsev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Name: "job", UID: "pcs"}}
	pcs.Spec.WorkloadType = copsev1alpha1.WorkloadTypeTraining
	pcs.Spec.Replicas = 2
	pcs.Spec.Template.Cliques = []*grovecorev1alpha1.PodCliqueTemplateSpec{{Name: "leader"}, {Name: "worker"}}
	pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{
		{Name: "workers", CliqueNames: []string{"worker"}, Replicas: ptr.To[int32](2)},
	}
	return pcs
}

func TestRunMemberNames(t *testing.T) {
	want := []string{"job-1-leader", "job-1-workers", "job-1-workers-0-worker", "job-1-workers-1-worker"}
	if diff := cmp.Diff(want, runMemberNames(groupedTraining(), 1)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestMissingRunMembers(t *testing.T) {
	now := metav1.NewTime(t0)
	member := func(name string, replica, attempt int) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Labels: map[string]string{labels.ReplicaKey: itoa(replica), labels.AttemptKey: itoa(attempt)}}
	}
	whole := func() *observed {
		return &observed{
			scalingGroups: []*copsev1alpha1.PodCliqueScalingGroup{{ObjectMeta: member("job-0-workers", 0, 1)}},
			podCliques: []*copsev1alpha1.PodClique{
				{ObjectMeta: member("job-0-leader", 0, 1)},
				{ObjectMeta: member("job-0-workers-0-worker", 0, 1)},
				{ObjectMeta: member("job-0-workers-1-worker", 0, 1)},
			},
		}
	}
	tests := []struct {
		name   string
		change func(*observed)
		want   []string
	}{
		{name: "the whole run", change: func(*observed) {}},
		{name: "a standalone PodClique gone", change: func(o *observed) { o.podCliques = o.podCliques[1:] },
			want: []string{"job-0-leader"}},
		{name: "a PodClique being deleted", change: func(o *observed) { o.podCliques[2].DeletionTimestamp = &now },
			want: []string{"job-0-workers-1-worker"}},
		{name: "the scaling group gone, its PodCliques not yet", change: func(o *observed) { o.scalingGroups = nil },
			want: []string{"job-0-workers"}},
		{name: "a PodClique of an earlier run does not stand for the current one",
			change: func(o *observed) { o.podCliques[0].Labels[labels.AttemptKey] = "0" }, want: []string{"job-0-leader"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := whole()
			tt.change(obs)
			obs.categorise()
			if diff := cmp.Diff(tt.want, missingRunMembers(groupedTraining(), obs, 0, 1)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestReplicasToCheckForDeletions(t *testing.T) {
	tests := []struct {
		name   string
		change func(*copsev1alpha1.PodCliqueSet)
		want   []int
	}{
		{name: "every replica whose run was whole", want: []int{0, 1}},
		{name: "not a replica that never was whole", change: func(p *copsev1alpha1.PodCliqueSet) { p.Status.CreatedReplicaIndexes = "1" },
			want: []int{1}},
		{name: "not a replica that succeeded", change: func(p *copsev1alpha1.PodCliqueSet) { p.Status.SucceededReplicaIndexes = "0" },
			want: []int{1}},
		{name: "not a replica being recreated", change: func(p *copsev1alpha1.PodCliqueSet) {
			p.Status.ReplicaRecreations = []copsev1alpha1.ReplicaRecreation{{ReplicaIndex: 1, Attempt: 1}}
		}, want: []int{0}},
		{name: "none while suspended", change: func(p *copsev1alpha1.PodCliqueSet) { p.Spec.Suspend = ptr.To(true) }},
		{name: "none once ended", change: func(p *copsev1alpha1.PodCliqueSet) { p.Status.Phase = copsev1alpha1.PodCliqueSetPhaseFailed }},
		{name: "none for Inference (Grove makes a deleted PodClique again)", change: func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.WorkloadType = copsev1alpha1.WorkloadTypeInference
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pcs := groupedTraining()
			pcs.Status.CreatedReplicaIndexes = "0-1"
			if tt.change != nil {
				tt.change(pcs)
			}
			if got := replicasToCheckForDeletions(pcs, lifecycle.RecordsOf(pcs)); !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCreatedReplicas(t *testing.T) {
	pcs := groupedTraining()
	pcs.Spec.Replicas = 3
	pcs.Status.CreatedReplicaIndexes = "0-1"
	replicas := []replicaAssessment{{index: 0}, {index: 1}, {index: 2, complete: true}}
	// Replica 0 lost a member (incomplete, still recorded); replica 1 is
	// being recreated; replica 2's run just became whole.
	got := createdReplicas(pcs, lifecycle.RecordsOf(pcs), replicas, map[int]bool{1: true}).String()
	if got != "0,2" {
		t.Errorf("got %q, want \"0,2\"", got)
	}
}

func TestAssessReplicasBreachesAReplicaThatLostAMember(t *testing.T) {
	pcs, obs := trainingJob(metav1.ConditionFalse)
	at := t0.Add(-time.Minute)
	obs.deletedMembers = map[int]deletedMembers{0: {names: []string{"job-0-worker"}, at: at}}
	a := assessReplicas(pcs, obs)[0]
	if !a.breached || !a.breachedSince.Equal(at) || a.available {
		t.Errorf("breached %v since %v available %v; want breached since %v, not available", a.breached, a.breachedSince, a.available, at)
	}
	if want := []string{"job-0-worker (deleted from outside)"}; !slices.Equal(a.breachedBy, want) {
		t.Errorf("breachedBy %v, want %v", a.breachedBy, want)
	}
}

func itoa(i int) string { return string(rune('0' + i)) }
