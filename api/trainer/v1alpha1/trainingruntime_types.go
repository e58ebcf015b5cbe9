package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// The kinds a TrainJob's runtimeRef may name.
const (
	TrainingRuntimeKind        = "TrainingRuntime"
	ClusterTrainingRuntimeKind = "ClusterTrainingRuntime"
)

// ClusterTrainingRuntime is a training runtime any namespace's TrainJobs may
// reference.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:scope=Cluster,path=clustertrainingruntimes,shortName=ctr
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterTrainingRuntime struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +optional
	Spec TrainingRuntimeSpec `json:"spec,omitzero"`
}

// ClusterTrainingRuntimeList is a list of ClusterTrainingRuntimes.
//
// +kubebuilder:object:root=true
type ClusterTrainingRuntimeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterTrainingRuntime `json:"items"`
}

// TrainingRuntime is a training runtime the TrainJobs of its own namespace may
// reference.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:path=trainingruntimes,shortName=tr
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type TrainingRuntime struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +optional
	Spec TrainingRuntimeSpec `json:"spec,omitempty,omitzero"`
}

// TrainingRuntimeList is a list of TrainingRuntimes.
//
// +kubebuilder:object:root=true
type TrainingRuntimeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TrainingRuntime `json:"items"`
}

// TrainingRuntimeSpec is Kubeflow Trainer v2.3.0's TrainingRuntimeSpec with
// KEP-2899's ttlSecondsAfterFinished and KEP-3015's podGroupPolicy.workload.
//
// A TrainJob's lifetime and its gang belong to the TrainJob: a JobSet- or
// Job-level TTL or deadline in the template would end the job behind the
// TrainJob's back, and a scheduling group set by hand would bypass the
// PodGroups copse creates, so the template may hold none of them.
//
// +kubebuilder:validation:MinProperties=1
// +kubebuilder:validation:XValidation:rule="!has(self.template.spec) || !has(self.template.spec.ttlSecondsAfterFinished)", message="template.spec.ttlSecondsAfterFinished must not be set: a JobSet-level TTL deletes the JobSet under its TrainJob; use spec.ttlSecondsAfterFinished", fieldPath=".template.spec.ttlSecondsAfterFinished"
// +kubebuilder:validation:XValidation:rule="!has(self.template.spec) || !has(self.template.spec.replicatedJobs) || self.template.spec.replicatedJobs.all(rj, !has(rj.template.spec) || !has(rj.template.spec.activeDeadlineSeconds))", message="template.spec.replicatedJobs[].template.spec.activeDeadlineSeconds must not be set: a Job-level deadline ends pods behind the TrainJob's activeDeadlineSeconds", fieldPath=".template.spec.replicatedJobs"
// +kubebuilder:validation:XValidation:rule="!has(self.template.spec) || !has(self.template.spec.replicatedJobs) || self.template.spec.replicatedJobs.all(rj, !has(rj.template.spec) || !has(rj.template.spec.ttlSecondsAfterFinished))", message="template.spec.replicatedJobs[].template.spec.ttlSecondsAfterFinished must not be set: a Job-level TTL deletes Jobs under their TrainJob; use spec.ttlSecondsAfterFinished", fieldPath=".template.spec.replicatedJobs"
// +kubebuilder:validation:XValidation:rule="!has(self.template.spec) || !has(self.template.spec.replicatedJobs) || self.template.spec.replicatedJobs.all(rj, !has(rj.template.spec) || (!has(rj.template.spec.scheduling) && (!has(rj.template.spec.template.spec) || !has(rj.template.spec.template.spec.schedulingGroup))))", message="template.spec.replicatedJobs[].template.spec.scheduling and .template.spec.schedulingGroup must not be set: copse creates the Workload and PodGroups from podGroupPolicy.workload", fieldPath=".template.spec.replicatedJobs"
type TrainingRuntimeSpec struct {
	// mlPolicy is Kubeflow Trainer's ML policy: numNodes and at most one of
	// torch, mpi, flux, jax, xgboost.
	// +optional
	MLPolicy *MLPolicy `json:"mlPolicy,omitempty"`

	// podGroupPolicy chooses gang scheduling: coscheduling, volcano, or
	// copse's workload (the Kubernetes Workload API), at most one.
	// +optional
	PodGroupPolicy *PodGroupPolicy `json:"podGroupPolicy,omitempty"`

	// template is the JobSet a TrainJob of this runtime becomes.
	// +optional
	Template JobSetTemplateSpec `json:"template,omitzero"`

	// ttlSecondsAfterFinished deletes a TrainJob of this runtime, and
	// everything it owns, that long after it completed or failed (KEP-2899):
	// 0 deletes it as soon as it finishes; unset keeps it. The TrainJob's
	// runtime snapshot is read, so later edits of the runtime do not change
	// the TTL of TrainJobs already created.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`

	// backend is what a TrainJob of this runtime becomes (copse's
	// extension): JobSet (unset means JobSet, as Kubeflow Trainer) or
	// PodCliqueSet, one Training PodCliqueSet with a clique per replicated
	// job. TrainJobs are written the same way for both. The TrainJob's
	// runtime snapshot is read, so a later change does not move TrainJobs
	// already created.
	// +optional
	Backend RuntimeBackend `json:"backend,omitempty"`
}

// RuntimeBackend is the kind a TrainJob is built into.
// +kubebuilder:validation:Enum=JobSet;PodCliqueSet
type RuntimeBackend string

const (
	// RuntimeBackendJobSet builds a JobSet, as Kubeflow Trainer does.
	RuntimeBackendJobSet RuntimeBackend = "JobSet"
	// RuntimeBackendPodCliqueSet builds one Training PodCliqueSet.
	RuntimeBackendPodCliqueSet RuntimeBackend = "PodCliqueSet"
)

// JobSetTemplateSpec is the JobSet a TrainJob becomes. Its name and namespace
// are the TrainJob's.
//
// +kubebuilder:validation:MinProperties=1
type JobSetTemplateSpec struct {
	// metadata: the JobSet's labels and annotations.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec of the JobSet.
	// +optional
	Spec jobsetv1alpha2.JobSetSpec `json:"spec,omitempty"`
}

// PodGroupPolicy chooses how the TrainJob's pods are gang-scheduled: Kubeflow
// Trainer's coscheduling or volcano, or copse's workload.
//
// +kubebuilder:validation:XValidation:rule="[has(self.coscheduling), has(self.volcano), has(self.workload)].filter(x, x).size() <= 1", message="podGroupPolicy: only one of coscheduling, volcano and workload may be set"
type PodGroupPolicy struct {
	// coscheduling gang-schedules with the scheduler-plugins coscheduling
	// plugin (a scheduling.x-k8s.io PodGroup).
	// +optional
	Coscheduling *CoschedulingPodGroupPolicySource `json:"coscheduling,omitempty"`

	// volcano gang-schedules with the Volcano scheduler.
	// +optional
	Volcano *VolcanoPodGroupPolicySource `json:"volcano,omitempty"`

	// workload gang-schedules on the Kubernetes Workload API
	// (scheduling.k8s.io/v1beta1, KEP-3015): copse creates a Workload and its
	// PodGroups before any pod, a gang of every trainer node (for MPI the
	// launcher too) and a non-gang group for the initializers, and puts each
	// pod in its group.
	// +optional
	Workload *WorkloadPodGroupPolicySource `json:"workload,omitempty"`
}

// CoschedulingPodGroupPolicySource configures the coscheduling plugin. The
// PodGroup's minMember is always the number of pods.
type CoschedulingPodGroupPolicySource struct {
	// scheduleTimeoutSeconds bounds how long the gang may wait to be placed.
	// +kubebuilder:default=60
	// +optional
	ScheduleTimeoutSeconds *int32 `json:"scheduleTimeoutSeconds,omitempty"`
}

// VolcanoPodGroupPolicySource configures the Volcano gang scheduler.
type VolcanoPodGroupPolicySource struct {
	// networkTopology is Volcano's network-topology constraint for the gang.
	// +optional
	NetworkTopology *VolcanoNetworkTopology `json:"networkTopology,omitempty"`
}

// VolcanoNetworkTopology has the JSON shape of Volcano's NetworkTopologySpec
// (volcano.sh/apis scheduling/v1beta1).
type VolcanoNetworkTopology struct {
	// mode: hard or soft.
	// +kubebuilder:validation:Enum=hard;soft
	// +kubebuilder:default=hard
	// +optional
	Mode string `json:"mode,omitempty"`

	// highestTierAllowed is the highest network tier the gang may span.
	// +kubebuilder:default=1
	// +optional
	HighestTierAllowed *int `json:"highestTierAllowed,omitempty"`
}

// WorkloadPodGroupPolicySource configures Workload-API gang scheduling. The
// gang's minCount is always the trainer's node count.
type WorkloadPodGroupPolicySource struct {
	// topologyConstraint packs the trainer gang into one topology domain,
	// as KEP-3015 sketches under Future Plans. It applies on both backends.
	// +optional
	TopologyConstraint *WorkloadTopologyConstraint `json:"topologyConstraint,omitempty"`
}

// WorkloadTopologyConstraint is a required topology level for a gang.
type WorkloadTopologyConstraint struct {
	// level is the node label key whose value names the domain every pod
	// of the gang must share, e.g. topology.kubernetes.io/rack or
	// nvidia.com/gpu.clique. On the PodCliqueSet backend the key must be a
	// level of a ClusterTopologyBinding.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:XValidation:rule="!format.qualifiedName().validate(self).hasValue()",message="level must be a node label key (a qualified name, e.g. topology.kubernetes.io/rack)"
	// +required
	Level string `json:"level"`
}

// MLPolicy holds the ML-framework settings of a runtime: the node count and at
// most one framework.
//
// +kubebuilder:validation:XValidation:rule="[has(self.torch), has(self.mpi), has(self.jax), has(self.xgboost), has(self.flux)].filter(x, x).size() <= 1", message="Only one of the policy can be configured"
type MLPolicy struct {
	// numNodes is the number of trainer nodes. Defaults to 1.
	// +optional
	NumNodes *int32 `json:"numNodes,omitempty"`

	// +optional
	Torch *TorchMLPolicySource `json:"torch,omitempty"`
	// +optional
	MPI *MPIMLPolicySource `json:"mpi,omitempty"`
	// +optional
	Flux *FluxMLPolicySource `json:"flux,omitempty"`
	// +optional
	JAX *JAXMLPolicySource `json:"jax,omitempty"`
	// +optional
	XGBoost *XGBoostMLPolicySource `json:"xgboost,omitempty"`
}

// TorchMLPolicySource configures PyTorch (torchrun) training.
type TorchMLPolicySource struct {
	// envInjection names more containers that get the PET_* variables; the
	// trainer's node container always gets them.
	// +optional
	EnvInjection *EnvInjection `json:"envInjection,omitempty"`
}

// EnvInjection lists the containers that get a framework's variables.
type EnvInjection struct {
	// +listType=map
	// +listMapKey=jobName
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Targets []EnvInjectionTarget `json:"targets,omitempty"`
}

// EnvInjectionTarget names containers of one replicated job.
type EnvInjectionTarget struct {
	// jobName is the replicated job, e.g. node.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	JobName string `json:"jobName,omitempty"`

	// containerNames are the containers of that job; node, which always gets
	// the variables, may not be listed.
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="!self.exists(c, c == 'node')", message="containerNames must not include the main node container because PET_* envs are always injected into it"
	// +required
	ContainerNames []string `json:"containerNames,omitempty"`
}

// JAXMLPolicySource configures JAX distributed training. It has no fields.
type JAXMLPolicySource struct{}

// XGBoostMLPolicySource configures XGBoost (Rabit) training. It has no
// fields: one worker per GPU, or per node without GPUs.
type XGBoostMLPolicySource struct{}

// MPIMLPolicySource configures MPI training.
type MPIMLPolicySource struct {
	// numProcPerNode is the number of slots per node in the hostfile.
	// +kubebuilder:default=1
	// +optional
	NumProcPerNode *int32 `json:"numProcPerNode,omitempty"`

	// mpiImplementation: OpenMPI.
	// +kubebuilder:default=OpenMPI
	// +kubebuilder:validation:Enum=OpenMPI;""
	// +optional
	MPIImplementation *MPIImplementation `json:"mpiImplementation,omitempty"`

	// sshAuthMountPath is where the SSH keys are mounted.
	// +kubebuilder:default=/root/.ssh
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	SSHAuthMountPath *string `json:"sshAuthMountPath,omitempty"`

	// runLauncherAsNode makes the launcher one of the training nodes.
	// +kubebuilder:default=false
	// +optional
	RunLauncherAsNode *bool `json:"runLauncherAsNode,omitempty"`
}

// MPIImplementation names an MPI implementation.
type MPIImplementation string

// The MPI implementations Kubeflow names; only OpenMPI is accepted.
const (
	MPIImplementationOpenMPI MPIImplementation = "OpenMPI"
	MPIImplementationIntel   MPIImplementation = "Intel"
	MPIImplementationMPICH   MPIImplementation = "MPICH"
)

// FluxMLPolicySource configures Flux framework training.
type FluxMLPolicySource struct {
	// numProcPerNode is the number of processes per node.
	// +kubebuilder:default=1
	// +kubebuilder:validation:XValidation:rule="self >= 1", message="NumProcPerNode in fluxPolicy must be >= 1"
	// +optional
	NumProcPerNode *int32 `json:"numProcPerNode,omitempty"`
}
