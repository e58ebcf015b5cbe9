package podcliqueset

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/google/go-cmp/cmp"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/fuzzinput"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/podstate"
	"github.com/copse-dev/copse/internal/scheduler"
)

// Flags of FuzzPlanPass's workload.
const (
	planInPlace = 1 << iota
	planSuspended
	planFailed
	planTerminal
	planRecreating
	planRecreationInPlace
	planSuccessCriteriaMet
)

var planPhases = []corev1.PodPhase{corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed}

// planFactsOf builds a pass's facts from a fuzz input: the one-replica
// Training job of trainingJob with its records (flags, a recreation of
// attempt 1), up to six pods of attempts 0 and 1 on three nodes, and which
// of those nodes are lost.
func planFactsOf(flags, lost byte, podBytes []byte) facts {
	src := fuzzinput.New(podBytes)
	var pods []podstate.Summary
	for i := range min(len(podBytes)/2, 6) {
		b := src.Byte()
		p := summary(i, planPhases[int(b)&3], t0.Add(-time.Hour), time.Time{})
		if p.Terminal() {
			p.FinishedAt = t0.Add(-time.Minute)
		}
		p.Attempt = int(b>>2) & 1
		p.Terminating = b&0x10 != 0
		p.DeletionDeadline = t0.Add(time.Duration(int(b>>5)-4) * time.Minute)
		p.HasOutcomeFinalizer = b&0x80 == 0
		p.Node = fmt.Sprintf("node-%d", int(src.Byte())%3)
		pods = append(pods, p)
	}
	pcs, obs := trainingJob(metav1.ConditionFalse, pods...)
	if flags&planInPlace != 0 {
		pcs.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{RestartStrategy: copsev1alpha1.TrainingRestartInPlace}
	}
	pcs.Spec.Suspend = ptr.To(flags&planSuspended != 0)
	if flags&planFailed != 0 {
		meta.SetStatusCondition(&pcs.Status.Conditions, metav1.Condition{Type: copsev1alpha1.ConditionTypeFailed, Status: metav1.ConditionTrue,
			Reason: copsev1alpha1.ReasonMaxRestartsExceeded, LastTransitionTime: metav1.NewTime(t0)})
	}
	if flags&planSuccessCriteriaMet != 0 {
		meta.SetStatusCondition(&pcs.Status.Conditions, metav1.Condition{Type: copsev1alpha1.ConditionTypeSuccessCriteriaMet, Status: metav1.ConditionTrue,
			Reason: copsev1alpha1.ReasonSuccessPolicy, LastTransitionTime: metav1.NewTime(t0)})
	}
	if flags&planTerminal != 0 {
		pcs.Status.Phase = copsev1alpha1.PodCliqueSetPhaseFailed
	}
	if flags&planRecreating != 0 {
		pcs.Status.ReplicaRecreations = []copsev1alpha1.ReplicaRecreation{{ReplicaIndex: 0, Attempt: 1,
			Reason: copsev1alpha1.RecreationReasonTrainingRestart, StartedAt: metav1.NewTime(t0.Add(-time.Minute)),
			InPlace: flags&planRecreationInPlace != 0, Deleting: []types.UID{"pclq"}}}
	}
	for n := range 3 {
		if lost&(1<<n) != 0 {
			if obs.lostNodes == nil {
				obs.lostNodes = map[string]bool{}
			}
			obs.lostNodes[fmt.Sprintf("node-%d", n)] = true
		}
	}
	obs.records = lifecycle.RecordsOf(pcs) // as observe reads them
	return facts{pcs: pcs, obs: obs, now: t0}
}

// FuzzPlanPass decides whole passes and checks what no plan may do, whatever
// the facts: differ between two decisions on the same facts; touch a pod the
// pass did not observe, or one pod twice; write anything but finalizer
// releases for a terminal workload; move a pod outside a restart in place
// that is under way, or delete its run's recorded objects while a kept pod
// still has them as its controller; delete a pod at once whose node is not
// lost; or write pods of a workload that has not ended and is neither
// recreating, suspended nor rolling out.
func FuzzPlanPass(f *testing.F) {
	f.Add(byte(0), byte(0), []byte{1, 0, 1, 1})
	f.Add(byte(planInPlace|planRecreating|planRecreationInPlace), byte(1), []byte{1, 0, 5, 1, 3, 2})
	f.Add(byte(planFailed), byte(0), []byte{1, 0, 3, 1, 2, 2})
	f.Add(byte(planTerminal|planFailed), byte(0), []byte{2, 0, 3, 1})
	f.Add(byte(planSuspended|planRecreating), byte(2), []byte{0x11, 1, 5, 2})
	cfg := passConfig{rows: (&Reconciler{Backend: scheduler.None{}}).resources()}
	f.Fuzz(func(t *testing.T, flags, lost byte, podBytes []byte) {
		plan := planPass(planFactsOf(flags, lost, podBytes), cfg)
		again := planPass(planFactsOf(flags, lost, podBytes), cfg)
		if !reflect.DeepEqual(plan.Pods, again.Pods) || !reflect.DeepEqual(plan.Deletes, again.Deletes) ||
			!reflect.DeepEqual(plan.Status, again.Status) || !reflect.DeepEqual(plan.Events, again.Events) {
			t.Fatalf("two decisions on the same facts differ:\n%s", cmp.Diff(plan.Status, again.Status))
		}
		f := planFactsOf(flags, lost, podBytes)
		planned := plan.Status.(*copsev1alpha1.PodCliqueSet)
		observed := map[types.UID]podstate.Summary{}
		for _, p := range f.obs.pods {
			observed[p.UID] = p
		}
		written := map[types.UID]children.PodOp{}
		moved := false
		for _, w := range plan.Pods {
			if _, ok := observed[w.Pod.UID]; !ok {
				t.Fatalf("a write of a pod the pass did not observe: %+v", w)
			}
			if op, twice := written[w.Pod.UID]; twice {
				t.Fatalf("pod %s written twice (%s, %s)", w.Pod.Name, op, w.Op)
			}
			written[w.Pod.UID] = w.Op
			if planned.Status.Phase.IsTerminal() && w.Op != children.PodRelease {
				t.Fatalf("a terminal workload gets a %s write", w.Op)
			}
			switch w.Op {
			case children.PodMove:
				moved = true
				rec := planned.Status.ReplicaRecreations
				if len(rec) != 1 || !rec[0].InPlace || rec[0].CompletedAt != nil || w.Pod.Attempt >= int(rec[0].Attempt) || w.Attempt != int(rec[0].Attempt) {
					t.Fatalf("pod %s moved outside a restart in place under way: %+v", w.Pod.Name, rec)
				}
			case children.PodDeleteNow:
				if !f.obs.lostNodes[w.Pod.Node] {
					t.Fatalf("pod %s deleted at once on node %s, which is not lost", w.Pod.Name, w.Pod.Node)
				}
			}
		}
		if moved && len(plan.Deletes) > 0 {
			t.Fatalf("the old run's objects are deleted while kept pods still have them as controller: %+v", plan.Deletes)
		}
		if planned.Status.Phase.IsTerminal() && (len(plan.Deletes) > 0 || len(plan.Objects) > 0) {
			t.Fatalf("a terminal workload gets object writes")
		}
	})
}
