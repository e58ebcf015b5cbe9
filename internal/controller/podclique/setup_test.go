package podclique

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/event"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
)

// TestSetupWithManager registers the controller with a manager that is never
// started, so no API server is needed; it proves the watches resolve against
// the scheme and that unset fields are filled from the manager.
func TestSetupWithManager(t *testing.T) {
	mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, ctrl.Options{
		Scheme:     testScheme(t),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{MaxConcurrentReconciles: 4}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	if r.Client == nil || r.Scheme == nil || r.Recorder == nil || r.Expectations == nil || r.APIReader == nil {
		t.Errorf("fields not filled from the manager: %+v", r)
	}
}

// TestPodCliqueSetChangeReachesItsPodCliques: a change of a PodCliqueSet
// that can let its cliques have pods (a recreation completed) reaches every
// PodClique of that PodCliqueSet, and no other; other changes reach none.
func TestPodCliqueSetChangeReachesItsPodCliques(t *testing.T) {
	scheme := testScheme(t)
	clique := func(name, partOf string) *copsev1alpha1.PodClique {
		return &copsev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{labels.PartOfKey: partOf}}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		clique("job-0-a", "job"), clique("job-0-b", "job"), clique("other-0-a", "other")).Build()
	r := &Reconciler{Client: c}

	old := &copsev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "job"}}
	old.Spec.WorkloadType = copsev1alpha1.WorkloadTypeTraining
	old.Status.ReplicaRecreations = []copsev1alpha1.ReplicaRecreation{{ReplicaIndex: 0, Attempt: 1}}
	completed, relabelled := old.DeepCopy(), old.DeepCopy()
	completed.Status.ReplicaRecreations[0].CompletedAt = ptr.To(metav1.Now())
	relabelled.Labels = map[string]string{"team": "a"}

	pred := mayCreatePodsChanged()
	if !pred.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: completed}) {
		t.Error("a completed recreation does not pass")
	}
	if pred.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: relabelled}) {
		t.Error("a label change passes")
	}
	var got []string
	for _, req := range r.cliquesOf(context.Background(), completed) {
		got = append(got, req.Name)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"job-0-a", "job-0-b"}) {
		t.Errorf("requests for %v, want job-0-a and job-0-b", got)
	}
}
