package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Condition types of a TrainJob, Kubeflow Trainer's, so tools that read
// Trainer's conditions read copse's. A running TrainJob has none of the
// terminal ones; Complete and Failed carry the JobSet's reason and message
// (on the PodCliqueSet backend, the reason JobSet gives the same outcome).
const (
	TrainJobSuspended = "Suspended"
	TrainJobComplete  = "Complete"
	TrainJobFailed    = "Failed"
)

// Condition reasons copse sets itself (the others come from the JobSet).
const (
	TrainJobSuspendedReason           = "Suspended"
	TrainJobResumedReason             = "Resumed"
	TrainJobRuntimeNotSupportedReason = "TrainingRuntimeNotSupported"
	TrainJobDeadlineExceededReason    = "DeadlineExceeded"
)

// TrainJobTopologyLevelsUnavailable is copse's condition on a TrainJob on the
// PodCliqueSet backend whose runtime's
// podGroupPolicy.workload.topologyConstraint.level is the key of no
// ClusterTopologyBinding level: True (reason
// TrainJobTopologyLevelUnresolvedReason) while its PodCliqueSet cannot be
// created for that reason, False (TrainJobTopologyLevelResolvedReason) once
// a binding has the key. Not terminal: copse retries.
const (
	TrainJobTopologyLevelsUnavailable     = "TopologyLevelsUnavailable"
	TrainJobTopologyLevelUnresolvedReason = "TopologyLevelUnresolved"
	TrainJobTopologyLevelResolvedReason   = "TopologyLevelResolved"
)

// Condition reasons and the condition of the backend object (the JobSet or
// PodCliqueSet), copse's:
//   - Failed, reason TrainJobBackendRejectedReason: the API server refused
//     to create or update the backend object for a reason that cannot pass
//     by itself (the object is invalid, or a webhook denied it); the message
//     quotes the API server.
//   - Failed, reason TrainJobBackendDeletedReason: the PodCliqueSet was
//     deleted from outside before the TrainJob finished. It held the run's
//     state (restart count, the exit-0 records), so it is not created again.
//   - TrainJobBackendRefused (True): the API server refused the backend
//     object for a reason that may pass (quota, a conflict, unavailable), or
//     an object of its name and kind exists that the TrainJob does not
//     control. copse retries; the condition is removed once the object is
//     created or updated.
const (
	TrainJobBackendRejectedReason = "BackendRejected"
	TrainJobBackendDeletedReason  = "BackendDeleted"
	TrainJobBackendRefused        = "BackendRefused"
)

// The values spec.managedBy accepts. A TrainJob managed by MultiKueue runs on
// a worker cluster; the copse of the management cluster leaves it alone.
const (
	ManagedByTrainJobController = "trainer.kubeflow.org/trainjob-controller"
	ManagedByMultiKueue         = "kueue.x-k8s.io/multikueue"
)

// TrainJob runs one training job from a TrainingRuntime or
// ClusterTrainingRuntime. copse turns it into a JobSet owned by the TrainJob,
// as Kubeflow Trainer does.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:resource:path=trainjobs,shortName=tj
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.conditions[-1:].type`,description="The last condition: Suspended, Complete or Failed"
// +kubebuilder:printcolumn:name="Runtime",type=string,JSONPath=`.spec.runtimeRef.name`,description="The TrainingRuntime or ClusterTrainingRuntime it runs"
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.status.numNodes`,description="Trainer nodes, from the TrainJob or its runtime"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')", message="metadata.name must match RFC 1035 DNS label format"
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63", message="metadata.name must be no more than 63 characters"
type TrainJob struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec TrainJobSpec `json:"spec,omitzero"`
	// +optional
	Status TrainJobStatus `json:"status,omitzero"`
}

// TrainJobSpec is what the data scientist asks for: a runtime, and the
// initializer and trainer settings that override it.
type TrainJobSpec struct {
	// runtimeRef names the runtime this TrainJob runs.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf", message="field is immutable"
	// +required
	RuntimeRef RuntimeRef `json:"runtimeRef,omitzero"`

	// initializer overrides the runtime's dataset and model initializers.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf", message="field is immutable"
	// +optional
	Initializer *Initializer `json:"initializer,omitempty"`

	// trainer overrides the runtime's trainer: image, command, args, env,
	// node count, resources per node and processes per node.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf", message="field is immutable"
	// +optional
	Trainer *Trainer `json:"trainer,omitempty"`

	// runtimePatches are changes to the runtime's template, one entry per
	// manager (e.g. Kueue), applied in order. They may change only while the
	// TrainJob is suspended, before or after the change.
	// +listType=map
	// +listMapKey=manager
	// +kubebuilder:validation:MaxItems=16
	// +optional
	RuntimePatches []RuntimePatch `json:"runtimePatches,omitempty"`

	// suspend stops the TrainJob: its JobSet is suspended and its pods end.
	// Resuming starts them again, and restarts the activeDeadlineSeconds timer.
	// +kubebuilder:default=false
	// +optional
	Suspend *bool `json:"suspend,omitempty"`

	// activeDeadlineSeconds bounds how long the TrainJob may run, counted from
	// its creation or its last resume; time suspended does not count. Past it
	// the TrainJob fails with reason DeadlineExceeded and its JobSet is
	// deleted.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf", message="field is immutable"
	// +optional
	ActiveDeadlineSeconds int64 `json:"activeDeadlineSeconds,omitempty"`

	// managedBy names the controller that reconciles this TrainJob:
	// trainer.kubeflow.org/trainjob-controller (copse, the default) or
	// kueue.x-k8s.io/multikueue.
	// +kubebuilder:default="trainer.kubeflow.org/trainjob-controller"
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self in ['trainer.kubeflow.org/trainjob-controller', 'kueue.x-k8s.io/multikueue']", message="ManagedBy must be trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue if set"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf", message="field is immutable"
	// +optional
	ManagedBy *string `json:"managedBy,omitempty"`
}

// RuntimeRef names a TrainingRuntime (in the TrainJob's namespace) or a
// ClusterTrainingRuntime.
type RuntimeRef struct {
	// name of the runtime.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name,omitempty"`

	// apiGroup of the runtime: trainer.kubeflow.org.
	// +kubebuilder:default="trainer.kubeflow.org"
	// +kubebuilder:validation:MaxLength=253
	// +optional
	APIGroup *string `json:"apiGroup,omitempty"`

	// kind of the runtime: ClusterTrainingRuntime (the default) or
	// TrainingRuntime.
	// +kubebuilder:default="ClusterTrainingRuntime"
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Kind *string `json:"kind,omitempty"`
}

// Initializer overrides the runtime's dataset and model initializers.
type Initializer struct {
	// +optional
	Dataset *DatasetInitializer `json:"dataset,omitempty"`
	// +optional
	Model *ModelInitializer `json:"model,omitempty"`
}

// DatasetInitializer overrides the dataset-initializer container.
type DatasetInitializer struct {
	// storageUri is where the dataset comes from (e.g. hf://org/set, s3://bucket/path).
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self == '' || self.matches('^[A-Za-z][A-Za-z0-9+.-]*://.+$')", message="storageUri may be empty, or it must be a valid URI (scheme://...)"
	// +optional
	StorageUri *string `json:"storageUri,omitempty"`

	// env is added to the dataset-initializer container.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`

	// secretRef names a Secret in the TrainJob's namespace whose keys become
	// environment variables of the initializer.
	// +optional
	SecretRef *corev1.LocalObjectReference `json:"secretRef,omitempty"`
}

// ModelInitializer overrides the model-initializer container.
type ModelInitializer struct {
	// storageUri is where the model comes from (e.g. hf://org/model).
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self == '' || self.matches('^[A-Za-z][A-Za-z0-9+.-]*://.+$')", message="storageUri may be empty, or it must be a valid URI (scheme://...)"
	// +optional
	StorageUri *string `json:"storageUri,omitempty"`

	// env is added to the model-initializer container.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`

	// secretRef names a Secret whose keys become environment variables of the
	// initializer.
	// +optional
	SecretRef *corev1.LocalObjectReference `json:"secretRef,omitempty"`
}

// Trainer overrides the runtime's trainer container ("node").
type Trainer struct {
	// image of the trainer container.
	// +kubebuilder:validation:MaxLength=500
	// +optional
	Image *string `json:"image,omitempty"`

	// command of the trainer container.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=128
	// +kubebuilder:validation:items:MaxLength=1048576
	// +optional
	Command []string `json:"command,omitempty"`

	// args of the trainer container.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=128
	// +kubebuilder:validation:items:MaxLength=1048576
	// +optional
	Args []string `json:"args,omitempty"`

	// env is added to the trainer container. The names the ML policy sets
	// (PET_*, OMPI_MCA_*) are reserved.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`

	// numNodes overrides the runtime's mlPolicy.numNodes.
	// +optional
	NumNodes *int32 `json:"numNodes,omitempty"`

	// resourcesPerNode replaces the trainer container's resources.
	// +optional
	ResourcesPerNode *corev1.ResourceRequirements `json:"resourcesPerNode,omitempty"`

	// numProcPerNode is the number of training processes per node; the ML
	// policy decides what unset means.
	// +optional
	NumProcPerNode *int32 `json:"numProcPerNode,omitempty"`
}

// RuntimePatch is one manager's change to the runtime's template.
type RuntimePatch struct {
	// manager identifies who wrote the patch, e.g. kueue.x-k8s.io/manager.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf", message="field is immutable"
	// +required
	Manager string `json:"manager,omitempty"`

	// time the patch last changed; set by the API server's admission.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`

	// trainingRuntimeSpec holds the changes.
	// +optional
	TrainingRuntimeSpec *TrainingRuntimeSpecPatch `json:"trainingRuntimeSpec,omitempty"`
}

// TrainingRuntimeSpecPatch changes a runtime's template.
type TrainingRuntimeSpecPatch struct {
	// +optional
	Template *JobSetTemplatePatch `json:"template,omitempty"`
}

// JobSetTemplatePatch changes the JobSet's labels and annotations and its
// replicated jobs.
type JobSetTemplatePatch struct {
	// metadata: only labels and annotations are applied.
	// +optional
	Metadata *metav1.ObjectMeta `json:"metadata,omitempty"`
	// +optional
	Spec *JobSetSpecPatch `json:"spec,omitempty"`
}

// JobSetSpecPatch changes replicated jobs by name.
type JobSetSpecPatch struct {
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=100
	// +optional
	ReplicatedJobs []ReplicatedJobPatch `json:"replicatedJobs,omitempty"`
}

// ReplicatedJobPatch changes the replicated job of the same name.
type ReplicatedJobPatch struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name,omitempty"`
	// +optional
	Template *JobTemplatePatch `json:"template,omitempty"`
}

// JobTemplatePatch changes a Job template.
type JobTemplatePatch struct {
	// metadata: only labels and annotations are applied.
	// +optional
	Metadata *metav1.ObjectMeta `json:"metadata,omitempty"`
	// +optional
	Spec *JobSpecPatch `json:"spec,omitempty"`
}

// JobSpecPatch changes a Job's pod template.
type JobSpecPatch struct {
	// +optional
	Template *PodTemplatePatch `json:"template,omitempty"`
}

// PodTemplatePatch changes a pod template.
type PodTemplatePatch struct {
	// metadata: only labels and annotations are applied.
	// +optional
	Metadata *metav1.ObjectMeta `json:"metadata,omitempty"`
	// +optional
	Spec *PodSpecPatch `json:"spec,omitempty"`
}

// PodSpecPatch is the part of a pod spec a runtime patch may change.
type PodSpecPatch struct {
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf", message="field is immutable"
	// +optional
	ServiceAccountName *string `json:"serviceAccountName,omitempty"`

	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	// +kubebuilder:validation:XValidation:rule="self == oldSelf", message="field is immutable"
	// +optional
	Volumes []corev1.Volume `json:"volumes,omitempty"`

	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self == oldSelf", message="field is immutable"
	// +optional
	InitContainers []ContainerPatch `json:"initContainers,omitempty"`

	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self == oldSelf", message="field is immutable"
	// +optional
	Containers []ContainerPatch `json:"containers,omitempty"`

	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self == oldSelf", message="field is immutable"
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// +kubebuilder:validation:XValidation:rule="self == oldSelf", message="field is immutable"
	// +optional
	SecurityContext *corev1.PodSecurityContext `json:"securityContext,omitempty"`

	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// +listType=atomic
	// +kubebuilder:validation:MaxItems=128
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	SchedulingGates []corev1.PodSchedulingGate `json:"schedulingGates,omitempty"`

	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:XValidation:rule="self == oldSelf", message="field is immutable"
	// +optional
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`
}

// ContainerPatch changes the container of the same name.
type ContainerPatch struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name,omitempty"`

	// env is added to the container. It may not target the node,
	// dataset-initializer or model-initializer containers: their env comes
	// from the trainer and initializer fields.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`

	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	// +optional
	VolumeMounts []corev1.VolumeMount `json:"volumeMounts,omitempty"`

	// +optional
	SecurityContext *corev1.SecurityContext `json:"securityContext,omitempty"`
}

// TrainJobStatus is Kubeflow Trainer's status plus the resolved node count.
//
// +kubebuilder:validation:MinProperties=1
type TrainJobStatus struct {
	// conditions: Suspended, Complete, Failed (Kubeflow Trainer's), and
	// copse's TopologyLevelsUnavailable and BackendRefused.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// jobsStatus mirrors the JobSet's replicated-job status, one entry per
	// replicated job.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=100
	// +optional
	JobsStatus []JobStatus `json:"jobsStatus,omitempty"`

	// trainerStatus is the progress the training code reports (Kubeflow's
	// runtime status API). copse keeps what is written here.
	// +optional
	TrainerStatus *TrainerStatus `json:"trainerStatus,omitempty"`

	// numNodes is the number of trainer nodes: trainer.numNodes, else the
	// runtime's mlPolicy.numNodes, else 1. copse's addition, for the NODES
	// column.
	// +kubebuilder:validation:Minimum=0
	// +optional
	NumNodes *int32 `json:"numNodes,omitempty"`

	// backend is the object the TrainJob runs as (its JobSet or
	// PodCliqueSet), recorded the first time copse sees it exist. copse's
	// addition: it tells a backend object deleted from outside from one not
	// created yet, without trusting a cache. A PodCliqueSet that is gone once
	// recorded fails the TrainJob (reason BackendDeleted); a JobSet is
	// created again, as Kubeflow Trainer does.
	// +optional
	Backend *BackendStatus `json:"backend,omitempty"`
}

// BackendStatus names the object a TrainJob runs as.
type BackendStatus struct {
	// kind is JobSet or PodCliqueSet.
	// +kubebuilder:validation:Enum=JobSet;PodCliqueSet
	// +required
	Kind string `json:"kind"`
	// name of the object (the TrainJob's own).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	Name string `json:"name"`
	// uid of the object copse last saw.
	// +optional
	UID types.UID `json:"uid,omitempty"`
}

// JobStatus counts the Jobs of one replicated job by state.
type JobStatus struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +required
	Ready *int32 `json:"ready,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +required
	Succeeded *int32 `json:"succeeded,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +required
	Failed *int32 `json:"failed,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +required
	Active *int32 `json:"active,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +required
	Suspended *int32 `json:"suspended,omitempty"`
}

// TrainerStatus is the training progress the training code reports.
//
// +kubebuilder:validation:XValidation:rule="has(self.lastUpdatedTime)", message="lastUpdatedTime is required when trainerStatus is present"
type TrainerStatus struct {
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	ProgressPercentage *int32 `json:"progressPercentage,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	EstimatedRemainingSeconds *int32 `json:"estimatedRemainingSeconds,omitempty"`
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	// +optional
	Metrics []Metric `json:"metrics,omitempty"`
	// +optional
	LastUpdatedTime metav1.Time `json:"lastUpdatedTime,omitempty"`
}

// Metric is one named training metric.
type Metric struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +required
	Name string `json:"name,omitempty"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +required
	Value string `json:"value,omitempty"`
}

// TrainJobList is a list of TrainJobs.
//
// +kubebuilder:object:root=true
type TrainJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TrainJob `json:"items"`
}
