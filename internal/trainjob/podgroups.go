package trainjob

import (
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/naming"
)

// The pod groups of a TrainJob with podGroupPolicy.workload (KEP-3015).
const (
	// TrainerGroup is the gang of every pod that trains: the trainer step's
	// job, and with MPI the launcher and node jobs. It is placed
	// all-or-nothing.
	TrainerGroup = "trainer"
	// InitializerGroup holds every other pod (the dataset and model
	// initializers): scheduled one by one, so initializers never hold
	// nodes while waiting for each other or for the trainer's GPUs.
	InitializerGroup = "initializer"
)

// PodGroupPlan is one pod group of a TrainJob: its template name in the
// Workload, its PodGroup's name, its gang size (0 for a basic group), and the
// node label key all its pods must share a value of ("" for none).
type PodGroupPlan struct {
	Template    string
	Name        string
	MinCount    int32
	TopologyKey string
}

// ApplyPodGroupPolicy puts every pod template of the plan into its pod group:
// for Workload-API gang scheduling, the TrainJob's Workload PodGroups, which
// it records; for Kubeflow's coscheduling and volcano, the TrainJob's
// PodGroup of that scheduler (markSchedulerPodGroupMembers), which
// BuildSchedulerPodGroup makes.
func ApplyPodGroupPolicy(p *Plan) {
	markSchedulerPodGroupMembers(p)
	if p.PodGroupPolicy == nil || p.PodGroupPolicy.Workload == nil {
		return
	}
	trainerPods, others := int32(0), false
	for i := range p.Spec.ReplicatedJobs {
		rjob := &p.Spec.ReplicatedJobs[i]
		group := InitializerGroup
		if p.trains(p.PodSets[i]) {
			group = TrainerGroup
			trainerPods += p.PodSets[i].Count * max(rjob.Replicas, 1)
		} else {
			others = true
		}
		rjob.Template.Spec.Template.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(PodGroupName(p.TrainJob, group))}
	}
	if others {
		p.PodGroups = append(p.PodGroups, PodGroupPlan{Template: InitializerGroup, Name: PodGroupName(p.TrainJob, InitializerGroup)})
	}
	if trainerPods > 0 {
		// The topology constraint packs the gang that trains; the
		// initializers run before it and are placed where they fit.
		var key string
		if c := p.PodGroupPolicy.Workload.TopologyConstraint; c != nil {
			key = c.Level
		}
		p.PodGroups = append(p.PodGroups, PodGroupPlan{Template: TrainerGroup, Name: PodGroupName(p.TrainJob, TrainerGroup),
			MinCount: trainerPods, TopologyKey: key})
	}
}

// trains reports whether a replicated job's pods train: the trainer step,
// or with MPI the launcher and the nodes it starts.
func (p *Plan) trains(podSet PodSet) bool {
	if podSet.Ancestor == AncestorTrainer {
		return true
	}
	mpi := p.MLPolicy != nil && p.MLPolicy.MPI != nil
	return mpi && (podSet.Name == NodeName || podSet.Name == LauncherName)
}

// PodGroupName names a TrainJob's pod group: <trainjob>-<group>
// (naming.TrainJobPodGroup).
func PodGroupName(trainJob *trainerv1alpha1.TrainJob, group string) string {
	return naming.TrainJobPodGroup(trainJob.Name, group)
}

// BuildWorkload is the TrainJob's Workload, <trainjob>.trainjob
// (naming.TrainJobWorkload, apart from every PodCliqueSet's): one pod-group
// template per group, controlled by the TrainJob. Nil without Workload-API
// gang scheduling.
func BuildWorkload(p *Plan) *schedulingv1beta1.Workload {
	if len(p.PodGroups) == 0 {
		return nil
	}
	workload := &schedulingv1beta1.Workload{
		TypeMeta: metav1.TypeMeta{APIVersion: schedulingv1beta1.SchemeGroupVersion.String(), Kind: "Workload"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            naming.TrainJobWorkload(p.TrainJob.Name),
			Namespace:       p.TrainJob.Namespace,
			Labels:          ownedLabels(p.TrainJob),
			OwnerReferences: []metav1.OwnerReference{ControllerReference(p.TrainJob)},
		},
		Spec: schedulingv1beta1.WorkloadSpec{
			ControllerRef: &schedulingv1beta1.TypedLocalObjectReference{
				APIGroup: trainerv1alpha1.GroupName, Kind: "TrainJob", Name: p.TrainJob.Name,
			},
		},
	}
	for _, group := range p.PodGroups {
		workload.Spec.PodGroupTemplates = append(workload.Spec.PodGroupTemplates, schedulingv1beta1.PodGroupTemplate{
			Name: group.Template, SchedulingPolicy: schedulingPolicy(group), SchedulingConstraints: schedulingConstraints(group),
		})
	}
	return workload
}

// BuildPodGroups are the TrainJob's PodGroups, one per group, controlled by
// the TrainJob and also owned by the Workload (KEP-3015's owner graph).
// workloadUID is the Workload's UID, known once it exists.
func BuildPodGroups(p *Plan, workloadUID string) []*schedulingv1beta1.PodGroup {
	var out []*schedulingv1beta1.PodGroup
	for _, group := range p.PodGroups {
		out = append(out, &schedulingv1beta1.PodGroup{
			TypeMeta: metav1.TypeMeta{APIVersion: schedulingv1beta1.SchemeGroupVersion.String(), Kind: "PodGroup"},
			ObjectMeta: metav1.ObjectMeta{
				Name:      group.Name,
				Namespace: p.TrainJob.Namespace,
				Labels:    ownedLabels(p.TrainJob),
				OwnerReferences: []metav1.OwnerReference{
					ControllerReference(p.TrainJob),
					{APIVersion: schedulingv1beta1.SchemeGroupVersion.String(), Kind: "Workload", Name: naming.TrainJobWorkload(p.TrainJob.Name), UID: types.UID(workloadUID)},
				},
			},
			Spec: schedulingv1beta1.PodGroupSpec{
				WorkloadRef:           &schedulingv1beta1.WorkloadReference{WorkloadName: naming.TrainJobWorkload(p.TrainJob.Name), TemplateName: group.Template},
				SchedulingPolicy:      schedulingPolicy(group),
				SchedulingConstraints: schedulingConstraints(group),
			},
		})
	}
	return out
}

func schedulingPolicy(group PodGroupPlan) schedulingv1beta1.PodGroupSchedulingPolicy {
	if group.MinCount == 0 {
		return schedulingv1beta1.PodGroupSchedulingPolicy{Basic: &schedulingv1beta1.BasicSchedulingPolicy{}}
	}
	return schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: group.MinCount}}
}

// schedulingConstraints is the group's required topology: the kube-scheduler
// (TopologyAwareWorkloadScheduling) places all its pods in one domain of the
// key, or none of them.
func schedulingConstraints(group PodGroupPlan) *schedulingv1beta1.PodGroupSchedulingConstraints {
	if group.TopologyKey == "" {
		return nil
	}
	return &schedulingv1beta1.PodGroupSchedulingConstraints{Topology: []schedulingv1beta1.TopologyConstraint{{Key: group.TopologyKey}}}
}

// SetPodGroupWorkloadUID gives a PodGroup built before its Workload existed
// (BuildPodGroups with no UID) the Workload's UID in its owner reference.
func SetPodGroupWorkloadUID(podGroup *schedulingv1beta1.PodGroup, workloadUID types.UID) {
	for i := range podGroup.OwnerReferences {
		if ref := &podGroup.OwnerReferences[i]; ref.Kind == "Workload" && ref.APIVersion == schedulingv1beta1.SchemeGroupVersion.String() {
			ref.UID = workloadUID
		}
	}
}
