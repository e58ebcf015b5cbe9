package kueue

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/testfixtures"
)

// The fixtures: Training PodCliqueSet "llm" of testfixtures (2 replicas;
// standalone clique "leader" of 1 pod, scaling group "decode" of "prefill"
// (2 pods) and "worker" (3 pods)) in LocalQueue "team-a", its Workload,
// and the ResourceFlavor "gpu-a" Kueue admits it to.

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const (
	queueName    = "team-a"
	clusterQ     = "cluster-gpu"
	flavorName   = "gpu-a"
	flavorLabel  = "example.com/pool"
	flavorValue  = "a"
	flavorTaint  = "example.com/reserved"
	workloadName = "podcliqueset-llm"
)

// queued is the PodCliqueSet as the webhook admits it: labelled, suspended,
// every container requesting a CPU.
func queued() *copsev1alpha1.PodCliqueSet {
	pcs := testfixtures.PodCliqueSet(copsev1alpha1.WorkloadTypeTraining)
	pcs.Generation = 3
	pcs.Labels = map[string]string{QueueNameLabel: queueName}
	pcs.Spec.Suspend = ptr.To(true)
	for _, clique := range pcs.Spec.Template.Cliques {
		clique.Labels = map[string]string{"app": clique.Name}
		clique.Spec.PodSpec.Containers = []corev1.Container{{Name: "main", Image: "train:1", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
		}}}
	}
	return pcs
}

func running(pcs *copsev1alpha1.PodCliqueSet) *copsev1alpha1.PodCliqueSet {
	pcs = pcs.DeepCopy()
	pcs.Spec.Suspend = ptr.To(false)
	pcs.Status.Phase = copsev1alpha1.PodCliqueSetPhaseRunning
	pcs.Status.StartTime = &metav1.Time{Time: now.Add(-time.Hour)}
	return pcs
}

// workloadOf is the Workload copse creates for pcs, as stored.
func workloadOf(pcs *copsev1alpha1.PodCliqueSet) *kueue.Workload {
	podSets, err := PodSets(pcs, nil, 0)
	if err != nil {
		panic(err)
	}
	wl := BuildWorkload(pcs, podSets, Priority{})
	wl.UID, wl.Generation, wl.ResourceVersion = "wl-uid", 1, "7"
	return wl
}

func withCondition(wl *kueue.Workload, conditionType string, status metav1.ConditionStatus, reason, message string) *kueue.Workload {
	wl = wl.DeepCopy()
	meta.SetStatusCondition(&wl.Status.Conditions, metav1.Condition{Type: conditionType, Status: status, Reason: reason, Message: message,
		LastTransitionTime: metav1.NewTime(now.Add(-10 * time.Minute))})
	return wl
}

// pendingIn is wl as Kueue's scheduler leaves it when quota is short.
func pendingIn(wl *kueue.Workload) *kueue.Workload {
	return withCondition(wl, kueue.WorkloadQuotaReserved, metav1.ConditionFalse, "Pending",
		"couldn't assign flavors to pod set leader: insufficient unused quota for cpu in flavor gpu-a, 2 more needed")
}

// reserved is wl with quota reserved in clusterQ, every pod set on flavorName.
func reserved(wl *kueue.Workload) *kueue.Workload {
	wl = withCondition(wl, kueue.WorkloadQuotaReserved, metav1.ConditionTrue, "QuotaReserved", "Quota reserved in ClusterQueue "+clusterQ)
	wl.Status.Admission = &kueue.Admission{ClusterQueue: clusterQ}
	for _, podSet := range wl.Spec.PodSets {
		wl.Status.Admission.PodSetAssignments = append(wl.Status.Admission.PodSetAssignments, kueue.PodSetAssignment{
			Name: podSet.Name, Count: ptr.To(podSet.Count),
			Flavors: map[corev1.ResourceName]kueue.ResourceFlavorReference{corev1.ResourceCPU: flavorName},
		})
	}
	return wl
}

// admitted is wl reserved and admitted, PodsReady as a fresh admission has it.
func admitted(wl *kueue.Workload) *kueue.Workload {
	wl = withCondition(reserved(wl), kueue.WorkloadAdmitted, metav1.ConditionTrue, "Admitted", "The workload is admitted")
	return podsReady(wl, metav1.ConditionFalse, kueue.WorkloadWaitForStart)
}

func podsReady(wl *kueue.Workload, status metav1.ConditionStatus, reason string) *kueue.Workload {
	return withCondition(wl, kueue.WorkloadPodsReady, status, reason, "")
}

func evicted(wl *kueue.Workload, reason string) *kueue.Workload {
	return withCondition(wl, kueue.WorkloadEvicted, metav1.ConditionTrue, reason, "Preempted to accommodate a workload (UID: x) due to prioritization in the ClusterQueue")
}

func finished(wl *kueue.Workload, reason string) *kueue.Workload {
	return withCondition(wl, kueue.WorkloadFinished, metav1.ConditionTrue, reason, "the admission of Workload podcliqueset-llm cannot be applied")
}

func flavors() Flavors {
	return Flavors{flavorName: &kueue.ResourceFlavorSpec{
		NodeLabels:  map[string]string{flavorLabel: flavorValue},
		Tolerations: []corev1.Toleration{{Key: flavorTaint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
	}}
}

// started is pcs as Start leaves it when admitted to flavorName.
func started(pcs *copsev1alpha1.PodCliqueSet) *copsev1alpha1.PodCliqueSet {
	infos, err := AdmissionInfos(reserved(workloadOf(pcs)), flavors())
	if err != nil {
		panic(err)
	}
	out, err := Merge(running(pcs), infos)
	if err != nil {
		panic(err)
	}
	return out
}
