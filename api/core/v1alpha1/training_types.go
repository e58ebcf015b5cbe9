package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// WorkloadType tells whether a PodCliqueSet is a long-running service or a
// finite training job.
// +kubebuilder:validation:Enum=Inference;Training
type WorkloadType string

const (
	// WorkloadTypeInference runs pods until the PodCliqueSet is deleted and
	// replaces pods that exit. This is Grove's behaviour and the default.
	WorkloadTypeInference WorkloadType = "Inference"
	// WorkloadTypeTraining is a finite workload: pods that exit 0 are done,
	// failures restart whole replicas within a budget, and the PodCliqueSet
	// ends Succeeded or Failed.
	WorkloadTypeTraining WorkloadType = "Training"
)

// TrainingSpec bounds how long and how often a Training workload may run.
type TrainingSpec struct {
	// MaxRuntime is the longest the workload may run, measured from
	// status.startTime and including time spent restarting. When it elapses,
	// every pod is terminated and the PodCliqueSet becomes Failed with reason
	// MaxRuntimeExceeded. Unset means no limit.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="spec.trainingSpec.maxRuntime must be a positive duration, e.g. 24h or 90m"
	MaxRuntime *metav1.Duration `json:"maxRuntime,omitempty"`

	// MaxRestarts is the total number of replica restarts allowed across all
	// replicas. A restart deletes and recreates every pod of one replica. The
	// failure that would need restart number maxRestarts+1 fails the workload
	// with reason MaxRestartsExceeded. 0 means any failure is final.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	MaxRestarts *int32 `json:"maxRestarts,omitempty"`

	// SuccessPolicy lets the workload succeed before every clique has
	// (KEP-3998's semantics, with JobSet's operator and targets): when every
	// replica meets it, the SuccessCriteriaMet condition is set, the pods
	// still running are terminated, and the phase becomes Succeeded once they
	// are gone. A workload with SuccessCriteriaMet never becomes Failed.
	// Unset: the workload succeeds when every PodClique has succeeded.
	// +optional
	SuccessPolicy *SuccessPolicy `json:"successPolicy,omitempty"`

	// StartsAfterSucceeded holds back the pods of a clique until other
	// cliques of the same replica have succeeded, e.g. a trainer after its
	// dataset and model initializers (JobSet's dependsOn with status
	// Complete). Unlike Grove's startsAfter, which waits for readiness, the
	// waiting clique's pods are not even created, so they hold no
	// accelerators; the cliques waited for are scheduled in a gang of their
	// own with basic (non-gang) policy, apart from the replica's gang.
	// +optional
	// +listType=map
	// +listMapKey=clique
	StartsAfterSucceeded []CliqueSuccessDependency `json:"startsAfterSucceeded,omitempty"`
}

// SuccessPolicyOperator says how many of the target cliques must succeed.
// +kubebuilder:validation:Enum=All;Any
type SuccessPolicyOperator string

const (
	// SuccessPolicyOperatorAll: every target clique of the replica succeeded.
	SuccessPolicyOperatorAll SuccessPolicyOperator = "All"
	// SuccessPolicyOperatorAny: at least one target clique of the replica succeeded.
	SuccessPolicyOperatorAny SuccessPolicyOperator = "Any"
)

// SuccessPolicy says when a replica of a Training workload has succeeded.
type SuccessPolicy struct {
	// Operator: All (the default) or Any of the target cliques.
	// +optional
	// +kubebuilder:default=All
	Operator SuccessPolicyOperator `json:"operator,omitempty"`
	// TargetCliques names clique templates (spec.template.cliques[].name).
	// A replica meets the policy when All (or Any) of its PodCliques made
	// from these templates have succeeded, scaling-group instances
	// included. Empty means every clique.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	TargetCliques []string `json:"targetCliques,omitempty"`
}

// CliqueSuccessDependency makes one clique wait for others to succeed.
type CliqueSuccessDependency struct {
	// Clique is the clique template whose pods wait.
	// +kubebuilder:validation:MinLength=1
	Clique string `json:"clique"`
	// Cliques are the clique templates that must have succeeded first, in
	// the same replica.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +listType=set
	Cliques []string `json:"cliques"`
}

// PodCliqueSetPhase is the lifecycle phase of a PodCliqueSet.
// +kubebuilder:validation:Enum=Pending;Running;Succeeded;Failed
type PodCliqueSetPhase string

const (
	// PodCliqueSetPhasePending means no replica has its pods running yet,
	// or the PodCliqueSet is suspended and none of its pods is left.
	PodCliqueSetPhasePending PodCliqueSetPhase = "Pending"
	// PodCliqueSetPhaseRunning means at least one replica has its pods running.
	PodCliqueSetPhaseRunning PodCliqueSetPhase = "Running"
	// PodCliqueSetPhaseSucceeded means every replica completed: every
	// PodClique has the Succeeded condition, or, with
	// trainingSpec.successPolicy, every replica met the policy
	// (SuccessCriteriaMet) and no pod is left running. Training only;
	// terminal.
	PodCliqueSetPhaseSucceeded PodCliqueSetPhase = "Succeeded"
	// PodCliqueSetPhaseFailed means the restart budget or the runtime limit
	// was exceeded and every pod was terminated. Training only; terminal.
	PodCliqueSetPhaseFailed PodCliqueSetPhase = "Failed"
)

// IsTerminal reports whether no further transition can happen from phase.
func (p PodCliqueSetPhase) IsTerminal() bool {
	return p == PodCliqueSetPhaseSucceeded || p == PodCliqueSetPhaseFailed
}

// Condition types and reasons added by GREP-0285. Grove's own condition
// types (MinAvailableBreached, ...) are defined in Grove's constants package.
const (
	// ConditionTypeFailed is True on a PodCliqueSet that ended Failed; its
	// reason says why and its lastTransitionTime says when.
	ConditionTypeFailed = "Failed"
	// ReasonMaxRestartsExceeded: a failure needed a restart beyond trainingSpec.maxRestarts.
	ReasonMaxRestartsExceeded = "MaxRestartsExceeded"
	// ReasonMaxRuntimeExceeded: trainingSpec.maxRuntime elapsed before the workload finished.
	ReasonMaxRuntimeExceeded = "MaxRuntimeExceeded"

	// ConditionTypeSucceeded is True on a PodClique of a Training workload
	// once every one of its pods exited 0. It is written before any pod is
	// cleaned up, so completion survives an operator restart.
	ConditionTypeSucceeded = "Succeeded"
	// ReasonAllPodsSucceeded: every pod of the PodClique exited with code 0.
	ReasonAllPodsSucceeded = "AllPodsSucceeded"

	// ConditionTypeSuccessCriteriaMet is True on a Training PodCliqueSet
	// whose trainingSpec.successPolicy is met by every replica; its pods
	// still running are being terminated, and the phase becomes Succeeded
	// once they are gone. Written before any pod is terminated.
	ConditionTypeSuccessCriteriaMet = "SuccessCriteriaMet"
	// ReasonSuccessPolicy: the success policy is met.
	ReasonSuccessPolicy = "SuccessPolicy"

	// ConditionTypeSuspended is True on a PodCliqueSet with spec.suspend
	// true (reason Suspended) and False after a resume (reason Resumed).
	ConditionTypeSuspended = "Suspended"
	// ReasonSuspended: spec.suspend is true.
	ReasonSuspended = "Suspended"
	// ReasonResumed: spec.suspend became false again.
	ReasonResumed = "Resumed"

	// ConditionTypeTerminationOverdue is True on a PodCliqueSet while a pod
	// that the operator waits for (to finish a restart, or to end a failed
	// workload) is still terminating well past its grace period, e.g. on an
	// unreachable node. copse never force-deletes a pod; the message names
	// the pods and their nodes so that someone can act.
	ConditionTypeTerminationOverdue = "TerminationOverdue"
	// ReasonPodsStuckTerminating: at least one pod is overdue.
	ReasonPodsStuckTerminating = "PodsStuckTerminating"
	// ReasonNoPodOverdue: no pod the operator waits for is overdue.
	ReasonNoPodOverdue = "NoPodOverdue"

	// ConditionTypePodCreationRefused is True on a PodClique while the API
	// server refuses to create its pods (a ResourceQuota, a LimitRange,
	// another admission webhook); the message quotes the API server. The
	// controller retries with back-off and the condition turns False once a
	// pod is created again.
	ConditionTypePodCreationRefused = "PodCreationRefused"
	// ReasonCreationRefused: the last attempt to create a pod was refused.
	ReasonCreationRefused = "Refused"
	// ReasonCreationAccepted: pods are being created again.
	ReasonCreationAccepted = "Accepted"

	// ConditionTypePodCreationBlocked is on every PodClique whose
	// PodCliqueSet is known: True while the clique may not create pods, the
	// reason naming the first cause that holds, False (CreationAllowed) while
	// it may. The causes of its replica (the PodCliqueSet deleted, being
	// deleted or suspended, the workload ended, the replica succeeded,
	// recreated or waiting in a Kueue queue, the clique of an earlier run)
	// carry the reasons of internal/lifecycle's MayCreatePods; the clique's
	// own are below, plus AllPodsSucceeded, WaitingForSucceeded and Refused.
	ConditionTypePodCreationBlocked = "PodCreationBlocked"
	// ReasonCreationAllowed: nothing holds the clique's pods back.
	ReasonCreationAllowed = "CreationAllowed"
	// ReasonPodCliqueDeleting: the PodClique is being deleted.
	ReasonPodCliqueDeleting = "PodCliqueDeleting"
	// ReasonInvalidLabels: the PodClique's labels do not say which
	// PodCliqueSet, replica or scaling group it belongs to.
	ReasonInvalidLabels = "InvalidLabels"
	// ReasonWaitingForResourceClaims: the pods to create refer to
	// ResourceClaims (resourceSharing) that do not exist yet, belong to
	// another object or are being deleted; the message names them.
	ReasonWaitingForResourceClaims = "WaitingForResourceClaims"
	// ReasonWaitingForBaseGang: the clique's pods are held in the domain of
	// their replica's base gang (pack.required), which has no pod on a node
	// yet.
	ReasonWaitingForBaseGang = "WaitingForBaseGang"

	// ConditionTypeStartupBlocked is on a PodClique that starts after other
	// cliques of its replica (spec.template.cliqueStartupType, or
	// trainingSpec.startsAfterSucceeded): True while they hold it back, the
	// message naming them; False once they no longer do.
	ConditionTypeStartupBlocked = "StartupBlocked"
	// ReasonWaitingForSucceeded: no pod of the clique is created until the
	// named cliques have succeeded (trainingSpec.startsAfterSucceeded).
	ReasonWaitingForSucceeded = "WaitingForSucceeded"
	// ReasonWaitingForReady: the clique's pods are created, but their
	// startup gate keeps their containers from starting until the named
	// cliques are Ready (cliqueStartupType InOrder or Explicit).
	ReasonWaitingForReady = "WaitingForReady"
	// ReasonPredecessorsDone: the cliques it starts after are Ready (or
	// have succeeded).
	ReasonPredecessorsDone = "PredecessorsDone"
)

// OutcomeFinalizer is on every pod of a Training PodClique until the pod's
// outcome is recorded in its PodClique's status (succeededIndexes, or a
// counted replacement), or the pod is no longer to be accounted for (its
// replica restarts, its workload ended, its PodClique is gone). A pod that
// exited 0 thus cannot vanish before copse knows that its index is done.
const OutcomeFinalizer = "copse.dev/outcome"
