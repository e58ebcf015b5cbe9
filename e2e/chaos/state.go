package chaos

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
	copsekueue "github.com/copse-dev/copse/internal/kueue"
	"github.com/copse-dev/copse/internal/labels"
)

// unit is an object the harness follows with its pods: a workload's
// PodCliqueSet or TrainJob, or a preemptor.
type unit struct {
	Kind      Kind
	Backend   trainerv1alpha1.RuntimeBackend
	Namespace string
	Name      string
	// Queued: it waits for Kueue's admission.
	Queued bool
}

func (u unit) String() string { return fmt.Sprintf("%s %s/%s", u.Kind, u.Namespace, u.Name) }

// jobSetPods: its pods are a JobSet's.
func (u unit) jobSetPods() bool { return u.Kind == KindTrainJob && u.Backend == jobSetBackend }

// podSelector selects the unit's pods in its namespace.
func (u unit) podSelector() client.MatchingLabels {
	if u.jobSetPods() {
		return client.MatchingLabels{jobsetv1alpha2.JobSetNameKey: u.Name}
	}
	return client.MatchingLabels{labels.PartOfKey: u.Name}
}

// unitState is what the harness's cache holds of a unit at one moment.
type unitState struct {
	// PCS is the unit's PodCliqueSet, or its TrainJob's on the
	// PodCliqueSet backend.
	PCS      *copsev1alpha1.PodCliqueSet
	TrainJob *trainerv1alpha1.TrainJob
	JobSet   *jobsetv1alpha2.JobSet
	// Kueue is the Kueue Workload of a queued unit.
	Kueue *kueue.Workload
	Pods  []corev1.Pod
}

// readUnit reads the unit from c (the harness's cache); an object that
// does not exist is left nil.
func readUnit(ctx context.Context, c client.Reader, u unit) (unitState, error) {
	var s unitState
	key := client.ObjectKey{Namespace: u.Namespace, Name: u.Name}
	get := func(obj client.Object) (bool, error) {
		err := c.Get(ctx, key, obj)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	}
	if u.Kind == KindTrainJob {
		tj := &trainerv1alpha1.TrainJob{}
		if ok, err := get(tj); err != nil {
			return s, err
		} else if ok {
			s.TrainJob = tj
		}
		if u.Backend == jobSetBackend {
			js := &jobsetv1alpha2.JobSet{}
			if ok, err := get(js); err != nil {
				return s, err
			} else if ok {
				s.JobSet = js
			}
		}
	}
	if u.Kind == KindPodCliqueSet || u.Backend == pcsBackend {
		pcs := &copsev1alpha1.PodCliqueSet{}
		if ok, err := get(pcs); err != nil {
			return s, err
		} else if ok {
			s.PCS = pcs
		}
	}
	if u.Queued {
		var workloads kueue.WorkloadList
		if err := c.List(ctx, &workloads, client.InNamespace(u.Namespace)); err != nil {
			return s, err
		}
		for i := range workloads.Items {
			wl := &workloads.Items[i]
			owned := (u.Kind == KindPodCliqueSet && s.PCS != nil && metav1.IsControlledBy(wl, s.PCS) && wl.Name == copsekueue.WorkloadName(u.Name)) ||
				(u.Kind == KindTrainJob && s.TrainJob != nil && metav1.IsControlledBy(wl, s.TrainJob))
			if owned {
				s.Kueue = wl
			}
		}
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(u.Namespace), u.podSelector()); err != nil {
		return s, err
	}
	s.Pods = pods.Items
	return s, nil
}

// exists: the object the user created is there.
func (s unitState) exists(u unit) bool {
	if u.Kind == KindTrainJob {
		return s.TrainJob != nil
	}
	return s.PCS != nil
}

func conditionTrue(conditions []metav1.Condition, t string) *metav1.Condition {
	if c := meta.FindStatusCondition(conditions, t); c != nil && c.Status == metav1.ConditionTrue {
		return c
	}
	return nil
}

// failedReason is the reason of the PodCliqueSet's Failed condition when
// it is True, else "".
func failedReason(pcs *copsev1alpha1.PodCliqueSet) string {
	if c := conditionTrue(pcs.Status.Conditions, copsev1alpha1.ConditionTypeFailed); c != nil {
		return c.Reason
	}
	return ""
}

func endOf(pcs *copsev1alpha1.PodCliqueSet) End {
	return End{State: string(pcs.Status.Phase), Reason: failedReason(pcs), RestartCount: pcs.Status.RestartCount,
		Uncounted: pcs.Status.UncountedRestarts}
}

// backendUncounted is the part of backendRestarts that spent no unit of
// maxRestarts (JobSet's restarts minus its restartsCountTowardsMax), -1
// when the TrainJob has no backend.
func (s unitState) backendUncounted() int32 {
	switch {
	case s.PCS != nil:
		return s.PCS.Status.UncountedRestarts
	case s.JobSet != nil:
		return s.JobSet.Status.Restarts - s.JobSet.Status.RestartsCountTowardsMax
	}
	return -1
}

// backendRestarts is the restarts the TrainJob's backend reports, -1 when
// it has none.
func (s unitState) backendRestarts() int32 {
	switch {
	case s.PCS != nil:
		return s.PCS.Status.RestartCount
	case s.JobSet != nil:
		return s.JobSet.Status.Restarts
	}
	return -1
}

// terminal returns the unit's end once it has one: a PodCliqueSet's
// terminal phase, a TrainJob's Complete or Failed condition (with the
// restarts its backend reports now; -1 when it has none left).
func (s unitState) terminal(u unit) (End, bool) {
	if u.Kind == KindPodCliqueSet {
		if s.PCS != nil && s.PCS.Status.Phase.IsTerminal() {
			return endOf(s.PCS), true
		}
		return End{}, false
	}
	if s.TrainJob == nil {
		return End{}, false
	}
	for _, t := range []string{trainerv1alpha1.TrainJobComplete, trainerv1alpha1.TrainJobFailed} {
		if c := conditionTrue(s.TrainJob.Status.Conditions, t); c != nil {
			return End{State: t, Reason: c.Reason, RestartCount: s.backendRestarts()}, true
		}
	}
	return End{}, false
}

// blockedBy returns the reason of the condition that says the unit cannot
// progress, if it has one: a queued PodCliqueSet whose Admitted condition
// quotes Kueue's missing quota, a TrainJob whose topology level no binding
// has.
func (s unitState) blockedBy(u unit) (string, bool) {
	switch {
	case u.Kind == KindPodCliqueSet && s.PCS != nil:
		c := meta.FindStatusCondition(s.PCS.Status.Conditions, copsev1alpha1.ConditionTypeAdmitted)
		if c != nil && c.Status == metav1.ConditionFalse && c.Reason == copsev1alpha1.ReasonPending && strings.Contains(c.Message, "insufficient") {
			return c.Reason, true
		}
	case u.Kind == KindTrainJob && s.TrainJob != nil:
		if c := conditionTrue(s.TrainJob.Status.Conditions, trainerv1alpha1.TrainJobTopologyLevelsUnavailable); c != nil &&
			c.Reason == trainerv1alpha1.TrainJobTopologyLevelUnresolvedReason {
			return c.Reason, true
		}
	}
	return "", false
}

// ended: the workload has ended or is ending (its pods are being
// terminated for good).
func (s unitState) ended(u unit) bool {
	if u.Kind == KindTrainJob {
		return s.TrainJob != nil && (conditionTrue(s.TrainJob.Status.Conditions, trainerv1alpha1.TrainJobComplete) != nil ||
			conditionTrue(s.TrainJob.Status.Conditions, trainerv1alpha1.TrainJobFailed) != nil)
	}
	return s.PCS != nil && (s.PCS.Status.Phase.IsTerminal() || failedReason(s.PCS) != "" ||
		conditionTrue(s.PCS.Status.Conditions, copsev1alpha1.ConditionTypeSuccessCriteriaMet) != nil)
}

// suspended: the user's object is suspended.
func (s unitState) suspended(u unit) bool {
	if u.Kind == KindTrainJob {
		return s.TrainJob != nil && ptr.Deref(s.TrainJob.Spec.Suspend, false)
	}
	return s.PCS != nil && s.PCS.IsSuspended()
}

// admitted: the unit's Kueue Workload is admitted and not evicted.
func (s unitState) admitted() bool {
	return s.Kueue != nil && conditionTrue(s.Kueue.Status.Conditions, kueue.WorkloadAdmitted) != nil &&
		conditionTrue(s.Kueue.Status.Conditions, kueue.WorkloadEvicted) == nil
}

// quotaReserved: the unit's Kueue Workload holds quota.
func (s unitState) quotaReserved() bool {
	return s.Kueue != nil && conditionTrue(s.Kueue.Status.Conditions, kueue.WorkloadQuotaReserved) != nil &&
		conditionTrue(s.Kueue.Status.Conditions, kueue.WorkloadFinished) == nil
}

// running says whether the unit may hold pods, and if not, why.
func (s unitState) running(u unit) (bool, string) {
	switch {
	case !s.exists(u):
		return false, "gone"
	case s.ended(u):
		return false, "ended"
	case s.suspended(u):
		return false, "suspended"
	case u.Queued && !s.admitted():
		return false, "not admitted"
	}
	return true, ""
}

// holdsNode: the pod has not ended (it may be terminating).
func holdsNode(p *corev1.Pod) bool { return !framework.IsTerminal(p) }

func asksForGPUs(p *corev1.Pod) bool {
	for _, c := range p.Spec.Containers {
		if q, ok := c.Resources.Limits[cluster.ResourceGPU]; ok && !q.IsZero() {
			return true
		}
		if q, ok := c.Resources.Requests[cluster.ResourceGPU]; ok && !q.IsZero() {
			return true
		}
	}
	return false
}

// sample is what s says for the invariants.
func (s unitState) sample(u unit, at time.Time) Sample {
	running, why := s.running(u)
	out := Sample{At: at, Running: running, Why: why, Queued: u.Queued, QuotaReserved: s.quotaReserved()}
	for i := range s.Pods {
		p := &s.Pods[i]
		if !holdsNode(p) {
			continue
		}
		out.LivePods++
		if p.Spec.NodeName != "" && asksForGPUs(p) {
			out.GPUPods = append(out.GPUPods, p.Name)
		}
	}
	sort.Strings(out.GPUPods)
	return out
}

// detail is the part of a unit's state that explains where it stands, for
// a violation's message.
func (s unitState) detail(u unit) string {
	var parts []string
	if s.TrainJob != nil {
		part := fmt.Sprintf("TrainJob suspend %t", ptr.Deref(s.TrainJob.Spec.Suspend, false))
		for _, c := range s.TrainJob.Status.Conditions {
			part += fmt.Sprintf(", %s=%s (%s: %s)", c.Type, c.Status, c.Reason, truncate(c.Message))
		}
		parts = append(parts, part)
	} else if u.Kind == KindTrainJob {
		parts = append(parts, "no TrainJob")
	}
	if s.PCS != nil {
		parts = append(parts, "PodCliqueSet "+pcsDetail(s.PCS))
	} else if u.Kind == KindPodCliqueSet || u.Backend == pcsBackend {
		parts = append(parts, "no PodCliqueSet")
	}
	if s.JobSet != nil {
		part := fmt.Sprintf("JobSet suspend %t restarts %d", ptr.Deref(s.JobSet.Spec.Suspend, false), s.JobSet.Status.Restarts)
		for _, c := range s.JobSet.Status.Conditions {
			part += fmt.Sprintf(", %s=%s (%s)", c.Type, c.Status, c.Reason)
		}
		parts = append(parts, part)
	} else if u.jobSetPods() {
		parts = append(parts, "no JobSet")
	}
	if s.Kueue != nil {
		part := fmt.Sprintf("Kueue Workload %s active %t", s.Kueue.Name, ptr.Deref(s.Kueue.Spec.Active, true))
		for _, c := range s.Kueue.Status.Conditions {
			part += fmt.Sprintf(", %s=%s (%s: %s)", c.Type, c.Status, c.Reason, truncate(c.Message))
		}
		parts = append(parts, part)
	} else if u.Queued {
		parts = append(parts, "no Kueue Workload")
	}
	phases := map[string]int{}
	for i := range s.Pods {
		p := &s.Pods[i]
		key := string(p.Status.Phase)
		if p.DeletionTimestamp != nil {
			key += "(terminating)"
		} else if p.Status.Phase == corev1.PodPending && p.Spec.NodeName == "" {
			key += "(unscheduled)"
		}
		phases[key]++
	}
	var ps []string
	for k, n := range phases {
		ps = append(ps, fmt.Sprintf("%d %s", n, k))
	}
	sort.Strings(ps)
	parts = append(parts, "pods: "+strings.Join(ps, ", "))
	return strings.Join(parts, "; ")
}

// pcsDetail is the part of a PodCliqueSet's status that explains its end.
func pcsDetail(pcs *copsev1alpha1.PodCliqueSet) string {
	st := pcs.Status
	s := fmt.Sprintf("phase %q, suspend %t, restartCount %d", st.Phase, pcs.IsSuspended(), st.RestartCount)
	for _, c := range st.Conditions {
		switch c.Type {
		case copsev1alpha1.ConditionTypeFailed, copsev1alpha1.ConditionTypeSuccessCriteriaMet, copsev1alpha1.ConditionTypeSuspended,
			copsev1alpha1.ConditionTypeAdmitted, copsev1alpha1.ConditionTypeTerminationOverdue, copsev1alpha1.ConditionTypeTopologyLevelsUnavailable,
			copsev1alpha1.ConditionTypePodGangsScheduled:
			s += fmt.Sprintf(", %s=%s (%s: %s)", c.Type, c.Status, c.Reason, truncate(c.Message))
		}
	}
	for _, rec := range st.ReplicaRecreations {
		done := "in progress"
		if rec.CompletedAt != nil {
			done = "completed"
		}
		s += fmt.Sprintf(", replica %d attempt %d (%s) %s", rec.ReplicaIndex, rec.Attempt, rec.Reason, done)
	}
	if st.LastFailure != nil {
		s += ", last failure: " + st.LastFailure.Summary
	}
	return s
}

func truncate(s string) string {
	const most = 200
	if len(s) > most {
		return s[:most] + "..."
	}
	return s
}
