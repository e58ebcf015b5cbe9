package v1alpha1

import (
	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodCliqueSet is a set of gangs of pods (one gang per replica), each made of
// PodCliques and PodCliqueScalingGroups. With workloadType Training it is a
// finite workload that ends Succeeded or Failed.
//
// packDomain is deprecated in Grove and refused on new objects; copse keeps
// that rule so that it accepts exactly what Grove accepts.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.hpaPodSelector
// +kubebuilder:resource:shortName={pcs}
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.workloadType`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.availableReplicas`
// +kubebuilder:printcolumn:name="Updated",type=integer,JSONPath=`.status.updatedReplicas`
// +kubebuilder:printcolumn:name="Restarts",type=integer,JSONPath=`.status.restartCount`
// +kubebuilder:printcolumn:name="Counted",type=integer,JSONPath=`.status.restartsCountTowardsMax`
// +kubebuilder:printcolumn:name="Rule",type=string,JSONPath=`.status.lastFailure.rule`,priority=1
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Failed")].reason`
// +kubebuilder:printcolumn:name="Last-Failure",type=string,JSONPath=`.status.lastFailure.summary`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || !self.spec.template.?topologyConstraint.?packDomain.hasValue()",message="packDomain is deprecated and cannot be used on new workloads; use pack.required",fieldPath=".spec.template.topologyConstraint.packDomain",optionalOldSelf=true,reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || !has(self.spec.template.cliques) || !self.spec.template.cliques.exists(c, c.?topologyConstraint.?packDomain.hasValue())",message="packDomain is deprecated and cannot be used on new workloads; use pack.required (in spec.template.cliques[].topologyConstraint)",fieldPath=".spec.template.cliques",optionalOldSelf=true,reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || !has(self.spec.template.podCliqueScalingGroups) || !self.spec.template.podCliqueScalingGroups.exists(g, g.?topologyConstraint.?packDomain.hasValue())",message="packDomain is deprecated and cannot be used on new workloads; use pack.required (in spec.template.podCliqueScalingGroups[].topologyConstraint)",fieldPath=".spec.template.podCliqueScalingGroups",optionalOldSelf=true,reason=FieldValueForbidden
type PodCliqueSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state: Grove's PodCliqueSet spec plus the training fields.
	Spec PodCliqueSetSpec `json:"spec"`
	// Status is the observed state.
	// +optional
	Status PodCliqueSetStatus `json:"status,omitempty"`
}

// PodCliqueSetList is a list of PodCliqueSets.
//
// +kubebuilder:object:root=true
type PodCliqueSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the PodCliqueSets.
	Items []PodCliqueSet `json:"items"`
}

// PodCliqueSetSpec is Grove's PodCliqueSetSpec plus the GREP-0285 fields.
//
// The training rules below live in the CRD so that they hold even when the
// operator's webhook is down; the webhook adds the ones CEL cannot express.
//
// +kubebuilder:validation:XValidation:rule="self.workloadType == 'Training' || !has(self.trainingSpec)",message="spec.trainingSpec is allowed only when spec.workloadType is Training",fieldPath=".trainingSpec",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="self.workloadType != 'Training' || (has(self.replicas) && self.replicas >= 1)",message="spec.replicas must be at least 1 when spec.workloadType is Training: a Training workload without replicas can never succeed",fieldPath=".replicas",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="self.workloadType != 'Training' || oldSelf.workloadType != 'Training' || self.replicas == oldSelf.replicas",message="spec.replicas is immutable when spec.workloadType is Training",fieldPath=".replicas",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="self.workloadType != 'Training' || !has(self.template.cliques) || self.template.cliques.all(c, !has(c.spec.autoScalingConfig))",message="spec.template.cliques[].spec.autoScalingConfig is not allowed when spec.workloadType is Training",fieldPath=".template.cliques",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="self.workloadType != 'Training' || !has(self.template.podCliqueScalingGroups) || self.template.podCliqueScalingGroups.all(g, !has(g.scaleConfig))",message="spec.template.podCliqueScalingGroups[].scaleConfig is not allowed when spec.workloadType is Training",fieldPath=".template.podCliqueScalingGroups",reason=FieldValueForbidden
type PodCliqueSetSpec struct {
	grovecorev1alpha1.PodCliqueSetSpec `json:",inline"`

	// WorkloadType selects the lifecycle. Inference (the default) runs until
	// deleted and replaces failed pods, as Grove does. Training is finite: pods
	// that exit 0 are not recreated, failures restart whole replicas within
	// trainingSpec.maxRestarts, and the PodCliqueSet ends Succeeded or Failed.
	// Immutable.
	// +optional
	// +kubebuilder:default=Inference
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.workloadType is immutable"
	WorkloadType WorkloadType `json:"workloadType,omitempty"`

	// TrainingSpec bounds a Training workload. Allowed only with workloadType Training.
	// +optional
	TrainingSpec *TrainingSpec `json:"trainingSpec,omitempty"`

	// Suspend, when true, removes every pod of the replicas that have not
	// succeeded and creates none until it is false again (copse's extension;
	// Grove has no suspension). A suspended replica's run ends as a
	// recreation with reason Suspension, which consumes no restart: on
	// resume the replica runs afresh, and restartCount is kept. The gangs
	// (PodGroups) stay. A Training workload's startTime is cleared once the
	// suspension has removed every pod and set again when the resumed
	// workload starts, so time spent suspended (queued) never counts against
	// trainingSpec.maxRuntime. Kueue and TrainJobs suspend PodCliqueSets.
	// +optional
	Suspend *bool `json:"suspend,omitempty"`
}

// PodCliqueSetStatus is Grove's PodCliqueSetStatus plus the GREP-0285 fields.
type PodCliqueSetStatus struct {
	grovecorev1alpha1.PodCliqueSetStatus `json:",inline"`

	// Phase is the lifecycle phase. Pending and Running apply to every
	// PodCliqueSet; Succeeded and Failed only to Training workloads, where they
	// are terminal.
	// +optional
	Phase PodCliqueSetPhase `json:"phase,omitempty"`

	// RestartCount is the number of replica restarts of a Training
	// workload, summed over all replicas: those that spent the budget and
	// those a failurePolicy rule made without counting.
	// +optional
	// +kubebuilder:validation:Minimum=0
	RestartCount int32 `json:"restartCount,omitempty"`

	// RestartsCountTowardsMax is the part of restartCount that spent
	// trainingSpec.maxRestarts (restartCount - uncountedRestarts).
	// +optional
	// +kubebuilder:validation:Minimum=0
	RestartsCountTowardsMax int32 `json:"restartsCountTowardsMax,omitempty"`

	// UncountedRestarts is the part of restartCount made by failurePolicy
	// rules with action RestartReplicaWithoutCount; compared with
	// failurePolicy.maxUncountedRestarts.
	// +optional
	// +kubebuilder:validation:Minimum=0
	UncountedRestarts int32 `json:"uncountedRestarts,omitempty"`

	// FailureRuleMatches counts, per failurePolicy rule, the replica
	// failures it decided (a restart, or failing the workload). Failures it
	// ignored are counted in their PodClique's status.podReplacements.
	// +optional
	// +listType=map
	// +listMapKey=rule
	FailureRuleMatches []FailureRuleMatch `json:"failureRuleMatches,omitempty"`

	// StartTime is when the phase first became Running. Restarts do not reset
	// it: trainingSpec.maxRuntime is a wall-clock deadline from this instant.
	// A suspension clears it once no pod is left; the resumed workload sets
	// it again when it starts, never earlier than the resume.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// CompletionTime is when a Training workload reached its end, as it
	// happened, not when the operator noticed: for Succeeded, the last pod's
	// exit 0 (every clique completed) or the moment its success policy was
	// met; for Failed, when the failure was decided. Written once, in the
	// same status write as the terminal phase.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// ReplicaRecreations holds, per replica, the latest recreation: its
	// PodCliques, PodCliqueScalingGroups and gangs deleted so that they are
	// created afresh, after a gang termination or a Training restart. The
	// entry is written before the first deletion and marked completed once
	// every object it names is gone, so a crash in between neither repeats
	// nor loses the recreation. It stays afterwards: its attempt is the run
	// the replica's objects belong to.
	// +optional
	// +listType=map
	// +listMapKey=replicaIndex
	ReplicaRecreations []ReplicaRecreation `json:"replicaRecreations,omitempty"`
	// LastFailure is the root cause of the latest replica failure of a
	// Training workload: the first pod of the failed replica to fail, with
	// its container, exit code, reason and node.
	// +optional
	LastFailure *PodFailure `json:"lastFailure,omitempty"`
	// SucceededReplicaIndexes are the replicas of a Training workload that
	// succeeded in their current run: they met trainingSpec.successPolicy,
	// or, without one, every pod of theirs exited 0. In the compact form
	// of the Job API's completedIndexes ("0,2-3"). Such a replica keeps its
	// result: it gets no new pods and is never restarted, and a suspension
	// ends its lingering pods instead of recreating it.
	// +optional
	SucceededReplicaIndexes string `json:"succeededReplicaIndexes,omitempty"`
	// CreatedReplicaIndexes are the replicas of a Training workload whose
	// current run has had every PodClique and PodCliqueScalingGroup it is
	// made of, in the compact index form. A member missing afterwards was
	// deleted from outside: the replica is restarted for it (a breach,
	// counted against trainingSpec.maxRestarts), never given a fresh member
	// that would run again indices that exited 0. A recreation clears the
	// replica's entry until its new run is whole.
	// +optional
	CreatedReplicaIndexes string `json:"createdReplicaIndexes,omitempty"`
}

// PodFailure describes one failed pod: why a replica restarted or a
// workload failed.
type PodFailure struct {
	// Summary is one line for people and for kubectl's columns, e.g.
	// "job-0-worker-3: container train exited 137 (OOMKilled) on node gpu-7".
	Summary string `json:"summary"`
	// ReplicaIndex is the PodCliqueSet replica of the pod.
	// +kubebuilder:validation:Minimum=0
	ReplicaIndex int32 `json:"replicaIndex"`
	// Attempt is the run of the replica the pod belonged to.
	// +optional
	Attempt int32 `json:"attempt,omitempty"`
	// PodClique is the pod's PodClique.
	PodClique string `json:"podClique"`
	// Pod is the pod's name.
	Pod string `json:"pod"`
	// Node is the node the pod ran on; empty if it was never scheduled.
	// +optional
	Node string `json:"node,omitempty"`
	// Container is the first container that terminated with a non-zero exit
	// code; empty when the pod failed as a whole (e.g. evicted).
	// +optional
	Container string `json:"container,omitempty"`
	// ExitCode is the container's exit code.
	// +optional
	ExitCode *int32 `json:"exitCode,omitempty"`
	// Reason is the container's termination reason (e.g. OOMKilled, Error),
	// or the pod's (e.g. Evicted, DeadlineExceeded).
	// +optional
	Reason string `json:"reason,omitempty"`
	// FinishedAt is when the pod failed.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
	// Rule is the trainingSpec.failurePolicy rule that matched the failure;
	// empty when none did.
	// +optional
	Rule string `json:"rule,omitempty"`
	// Action is what the failure did: the matched rule's action, or
	// RestartReplica when no rule matched.
	// +optional
	Action FailureRuleAction `json:"action,omitempty"`
}

// FailureRuleMatch counts the failures one failurePolicy rule decided.
type FailureRuleMatch struct {
	// Rule is the rule's name.
	Rule string `json:"rule"`
	// Action is the rule's action when it last matched.
	Action FailureRuleAction `json:"action"`
	// Count is how many replica failures it decided.
	// +kubebuilder:validation:Minimum=0
	Count int32 `json:"count"`
}

// RecreationReason says why a replica is recreated.
// +kubebuilder:validation:Enum=GangTermination;TrainingRestart;UncountedRestart;Suspension;IncompletePlacement;InPlaceRestartTimeout
type RecreationReason string

const (
	// RecreationReasonGangTermination: the replica stayed below minAvailable
	// for longer than terminationDelay.
	RecreationReasonGangTermination RecreationReason = "GangTermination"
	// RecreationReasonTrainingRestart: a Training replica failed and its
	// restart consumed one unit of trainingSpec.maxRestarts.
	RecreationReasonTrainingRestart RecreationReason = "TrainingRestart"
	// RecreationReasonUncountedRestart: a Training replica failed, a
	// failurePolicy rule with action RestartReplicaWithoutCount matched, and
	// its restart spends no unit of trainingSpec.maxRestarts.
	RecreationReasonUncountedRestart RecreationReason = "UncountedRestart"
	// RecreationReasonSuspension: spec.suspend became true; the replica's
	// run ends without consuming a restart and starts afresh on resume.
	RecreationReasonSuspension RecreationReason = "Suspension"
	// RecreationReasonIncompletePlacement: a gang of the replica was placed
	// with a clique below its minAvailable for longer than the operator's
	// scheduler.incompleteGangTimeout; its pods are recreated, and placed
	// again, without consuming a restart.
	RecreationReasonIncompletePlacement RecreationReason = "IncompletePlacement"
	// RecreationReasonInPlaceRestartTimeout: a restart in place did not lift
	// its barrier within the operator's scheduler.inPlaceRestartTimeout (a
	// kept pod's containers were never restarted); the replica is recreated
	// without consuming a restart.
	RecreationReasonInPlaceRestartTimeout RecreationReason = "InPlaceRestartTimeout"
)

// IsRestart reports whether the recreation is a Training restart, counted
// or not: the only recreations a failure makes, and the only ones that
// rerun what a replica already did.
func (r RecreationReason) IsRestart() bool {
	return r == RecreationReasonTrainingRestart || r == RecreationReasonUncountedRestart
}

// ReplicaRecreation is the durable record of one replica being recreated.
type ReplicaRecreation struct {
	// ReplicaIndex is the PodCliqueSet replica being recreated.
	// +kubebuilder:validation:Minimum=0
	ReplicaIndex int32 `json:"replicaIndex"`
	// Reason says why.
	Reason RecreationReason `json:"reason"`
	// Attempt is the run the recreated replica starts: the replica's
	// previous attempt plus one (its first run is attempt 0). Every object
	// and pod of the new run carries it in the copse.dev/attempt label, so
	// pods of different runs of one replica are told apart by label.
	// +optional
	Attempt int32 `json:"attempt,omitempty"`
	// StartedAt is when the recreation was decided.
	StartedAt metav1.Time `json:"startedAt"`
	// CompletedAt is when the last object and the last pod of the old
	// replica were gone; the new replica's objects, gangs and pods are
	// created only after it is set, so two runs of a replica never overlap.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
	// Deleting lists the UIDs of the objects that make up the old replica:
	// PodCliques, PodCliqueScalingGroups, gang objects and the other
	// per-replica objects. Each is deleted with a UID precondition, so an
	// object created after the decision is never deleted by it. The old
	// run's pods are not listed: they are the replica's pods whose
	// copse.dev/attempt label is below Attempt.
	// +optional
	// +listType=set
	Deleting []types.UID `json:"deleting,omitempty"`
	// InPlace: the restart keeps the replica's pods that can be kept
	// (trainingSpec.restartStrategy InPlace when it was decided). The
	// recorded PodCliques and scaling groups are deleted orphaning their
	// pods, the gangs and ComputeDomains stay, and the new run's PodCliques
	// adopt the kept pods, whose containers restart in place; only the old
	// run's pods that ended, are being deleted or lost their node are
	// deleted. CompletedAt is set when the recorded objects are gone and
	// those pods with them.
	// +optional
	InPlace bool `json:"inPlace,omitempty"`
	// BarrierLiftedAt (InPlace) is when no pod of the replica ran the old
	// attempt any more: every pod was adopted into the new run and held at
	// its startup gate, or made anew. The new run's startup gates open only
	// after it is set.
	// +optional
	BarrierLiftedAt *metav1.Time `json:"barrierLiftedAt,omitempty"`
}
