package podcliqueset

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/labels"
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
