package podclique

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/fuzzinput"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/podstate"
	"github.com/copse-dev/copse/internal/testfixtures"
)

// passObservation builds what observe could have read, from fuzz bytes: a
// clique of up to 12 replicas, its owned pods and strays, the PodCliqueSet
// known or not, Training or Inference, and the facts read for the writes
// (the API server's word, the gang, the namespace, a restart in place's
// kept pods) set at random.
func passObservation(t *testing.T, data []byte) (*copsev1alpha1.PodClique, *observation, int) {
	src := fuzzinput.New(data)
	pclq := testfixtures.StandaloneClique(int32(src.IntIn(0, 12)))
	if src.Maybe(8) {
		pclq.DeletionTimestamp = &metav1.Time{Time: t0}
	}
	workload := copsev1alpha1.WorkloadTypeInference
	if src.Bool() {
		workload = copsev1alpha1.WorkloadTypeTraining
	}
	var pcs *copsev1alpha1.PodCliqueSet
	if !src.Maybe(6) {
		pcs = testfixtures.PodCliqueSet(workload)
	}
	o := &observation{key: "ml/" + pclq.Name, startWindow: 1 + src.Intn(children.MaxInFlight)}
	for _, p := range src.Pods(24, t0) {
		p.StartupGate = []string{"", labels.StartupGateClosed, labels.StartupGateOpen}[src.Intn(3)]
		switch src.Intn(6) {
		case 0:
			p.ControllerUID = "earlier-uid"
			o.strays = append(o.strays, p)
		case 1:
			p.ControllerUID, p.Attempt = "", 0 // kept by a restart in place
			o.strays = append(o.strays, p)
		default:
			p.ControllerUID = pclq.UID
			o.owned = append(o.owned, p)
		}
	}
	var err error
	if o.id, err = blueprint.IdentityOf(pclq); err != nil {
		t.Fatalf("the fixture's labels: %v", err)
	}
	replica := lifecycle.ReplicaStateOf(pcs, o.id.Replica, o.id.Attempt)
	replica.InPlace = src.Bool()
	o.pcs, o.workload = pcs, workloadStateOf(pcs, replica)
	if o.workload.training() {
		o.completion = lifecycle.CliqueCompletion(int(pclq.Spec.Replicas), pclq.Status.SucceededIndexes, pclq.Status.LastSucceededTime, o.owned)
	}
	o.startOrder = startOrder{gated: src.Bool(), inPlace: replica.InPlace, barrier: src.Maybe(4)}
	o.adopt, o.discard, o.strays = adoptionOf(pclq, o.id.Attempt, replica.InPlace, o.owned, o.strays)
	o.owned = append(o.owned, o.adopt...)
	o.owner = *metav1.NewControllerRef(pclq, copsev1alpha1.SchemeGroupVersion.WithKind("PodClique"))
	o.creation = creationState{going: pclq.DeletionTimestamp != nil, replica: lifecycle.MayCreatePods(replica),
		complete: o.workload.training() && cliqueComplete(pclq, o.completion), refusal: refusalRecordOf(&pclq.Status), now: t0}
	if src.Maybe(5) {
		o.serverBlocked = "the PodClique is being deleted"
	}
	o.gangPlaced, o.namespaceGoing = src.Bool(), src.Maybe(5)
	return pclq, o, src.IntIn(1, 30)
}

// FuzzPlanPass checks the PodClique's whole decision on any observation:
//
//   - it is deterministic: the same facts make the same status, events and
//     writes;
//   - every pod write but a creation names a pod the pass observed, and no
//     pod is written twice (the writes of one burst run at once);
//   - pods are created only when the creation decision lets them, the
//     PodCliqueSet is known and the API server does not forbid them; at
//     most the budget, each a distinct index below spec.replicas, built
//     with the clique as its controller;
//   - a clique being deleted creates no pod and opens no gate;
//   - the Training records only grow.
func FuzzPlanPass(f *testing.F) {
	for _, seed := range [][]byte{nil, {0}, {5, 1, 1, 7, 0, 3, 9}, {12, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pclq, o, budget := passObservation(t, data)
		cfg := passConfig{budget: budget}
		plan := planPass(pclq, o, cfg)
		again := planPass(pclq, o, cfg)
		if !reflect.DeepEqual(plan.Status, again.Status) || !reflect.DeepEqual(plan.Events, again.Events) || !reflect.DeepEqual(plan.Pods, again.Pods) {
			t.Fatalf("two plans from the same facts differ:\n%+v\n%+v", plan.Pods, again.Pods)
		}

		observed := map[types.UID]bool{}
		for _, p := range append(append(append([]podstate.Summary{}, o.owned...), o.strays...), o.discard...) {
			observed[p.UID] = true
		}
		written := map[types.UID]bool{}
		var created []int
		gates := 0
		for _, w := range plan.Pods {
			switch {
			case w.Op == children.PodCreate:
				created = append(created, w.Pod.Index)
				if ref := metav1.GetControllerOf(w.New); ref == nil || ref.UID != pclq.UID {
					t.Errorf("pod %s is created without the clique as its controller", w.New.Name)
				}
				if w.New.Labels[labels.PodCliqueKey] != pclq.Name {
					t.Errorf("pod %s is created without the clique's label", w.New.Name)
				}
				continue
			case !observed[w.Pod.UID]:
				t.Errorf("%s of pod %s, which the pass did not observe", w.Op, w.Pod.Name)
			case written[w.Pod.UID]:
				t.Errorf("pod %s is written twice in one pass (%s)", w.Pod.Name, w.Op)
			}
			written[w.Pod.UID] = true
			if w.Op == children.PodOpenGate {
				gates++
			}
		}

		mayCreate := plan.creation.create && o.pcs != nil && o.serverBlocked == ""
		if len(created) > 0 && !mayCreate {
			t.Errorf("%d pods created although the decision (%q), the PodCliqueSet (known %v) or the API server (%q) forbids them",
				len(created), plan.creation.reason, o.pcs != nil, o.serverBlocked)
		}
		if len(created) > budget {
			t.Errorf("%d pods created, beyond the budget of %d", len(created), budget)
		}
		seen := map[int]bool{}
		for _, index := range created {
			if seen[index] || index < 0 || index >= int(pclq.Spec.Replicas) {
				t.Errorf("created index %d: a duplicate or out of range (replicas %d)", index, pclq.Spec.Replicas)
			}
			seen[index] = true
		}
		if o.creation.going && (len(created) > 0 || gates > 0) {
			t.Errorf("a clique being deleted creates %d pods and opens %d gates", len(created), gates)
		}
		status := plan.Status.(*copsev1alpha1.PodClique).Status
		if status.PodReplacements < pclq.Status.PodReplacements {
			t.Errorf("podReplacements went from %d to %d", pclq.Status.PodReplacements, status.PodReplacements)
		}
	})
}
