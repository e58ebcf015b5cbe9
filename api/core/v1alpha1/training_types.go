package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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
//
// +kubebuilder:validation:XValidation:rule="(has(self.restartStrategy) ? self.restartStrategy : 'Recreate') == (has(oldSelf.restartStrategy) ? oldSelf.restartStrategy : 'Recreate')",message="spec.trainingSpec.restartStrategy is immutable: the pods of an InPlace workload carry the restart agent and startup gate it needs",fieldPath=".restartStrategy",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!has(self.failurePolicy) || !has(self.failurePolicy.rules) || !self.failurePolicy.rules.exists(r, r.action == 'Ignore') || has(self.maxRuntime)",message="spec.trainingSpec.maxRuntime is required when a failurePolicy rule has action Ignore: ignored failures are replaced without limit, and maxRuntime bounds them",fieldPath=".maxRuntime",reason=FieldValueRequired
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

	// FailurePolicy tells failures apart: rules, matched against the pod
	// that failed first, decide whether it fails the workload at once,
	// restarts its replica (spending one of maxRestarts, the default), restarts
	// it without spending the budget (infrastructure: preemption, a drained
	// or lost node), or is ignored (the pod is replaced, nothing restarts).
	// Unset: every failure restarts its replica and counts.
	// +optional
	FailurePolicy *TrainingFailurePolicy `json:"failurePolicy,omitempty"`

	// RestartStrategy is how a replica restarts. Recreate (the default)
	// deletes every pod of the replica, its gangs and ComputeDomains, and
	// creates them again. InPlace keeps the replica where it is: the
	// containers of its healthy pods restart in their pods, on their nodes
	// (the kubelet's RestartAllContainers), with the same gangs and
	// ComputeDomains; only pods that ended, are being deleted or lost their
	// node are made again. A barrier (every pod's startup gate) holds the new
	// attempt's containers until no pod of the replica runs the old one.
	// Suspensions and gang terminations always recreate.
	// +optional
	RestartStrategy TrainingRestartStrategy `json:"restartStrategy,omitempty"`
}

// TrainingRestartStrategy says how a Training replica restarts.
// +kubebuilder:validation:Enum=Recreate;InPlace
type TrainingRestartStrategy string

const (
	// TrainingRestartRecreate deletes the replica's pods and makes them again.
	TrainingRestartRecreate TrainingRestartStrategy = "Recreate"
	// TrainingRestartInPlace restarts the containers of the replica's pods
	// where they run, and remakes only the pods that cannot be kept.
	TrainingRestartInPlace TrainingRestartStrategy = "InPlace"
)

// TrainingFailurePolicy holds the failure rules of a Training workload.
//
// +kubebuilder:validation:XValidation:rule="!has(self.rules) || self.rules.all(r, self.rules.exists_one(o, o.name == r.name))",message="spec.trainingSpec.failurePolicy.rules[].name must be unique",fieldPath=".rules",reason=FieldValueInvalid
type TrainingFailurePolicy struct {
	// Rules are tried in order against a failed pod; the first that matches
	// decides, and a failure no rule matches restarts its replica and counts
	// (RestartReplica). A rule matches when the pod's clique is one of its
	// targetCliques (empty: any) and every requirement it sets holds
	// (onExitCodes, onPodConditions); a rule without requirements matches
	// every failure of its target cliques.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Rules []FailureRule `json:"rules,omitempty"`

	// MaxUncountedRestarts bounds the restarts of rules with action
	// RestartReplicaWithoutCount, across all replicas: the failure that
	// would need one more fails the workload with reason
	// MaxUncountedRestartsExceeded, so a broken fleet cannot restart a
	// workload for ever.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=0
	MaxUncountedRestarts *int32 `json:"maxUncountedRestarts,omitempty"`
}

// FailureRuleAction is what a matched failure does.
// +kubebuilder:validation:Enum=FailWorkload;RestartReplica;RestartReplicaWithoutCount;Ignore
type FailureRuleAction string

const (
	// FailureActionFailWorkload fails the workload at once, without a
	// restart (reason FailedByRule, the message naming the rule).
	FailureActionFailWorkload FailureRuleAction = "FailWorkload"
	// FailureActionRestartReplica restarts the pod's replica and spends one
	// of trainingSpec.maxRestarts; what every unmatched failure does.
	FailureActionRestartReplica FailureRuleAction = "RestartReplica"
	// FailureActionRestartReplicaWithoutCount restarts the pod's replica
	// without spending maxRestarts, within failurePolicy.maxUncountedRestarts.
	FailureActionRestartReplicaWithoutCount FailureRuleAction = "RestartReplicaWithoutCount"
	// FailureActionIgnore replaces the failed pod (same index, after the
	// replacement back-off) and never judges it again: it does not count
	// against its clique's tolerance, is never a replica's root cause, and
	// spends no budget. Only for cliques that tolerate failures
	// (minAvailable below replicas): a clique that falls below minAvailable
	// is breached as any clique is. Requires trainingSpec.maxRuntime, which
	// bounds a pod that keeps failing this way.
	FailureActionIgnore FailureRuleAction = "Ignore"
)

// FailureRule is one rule of a TrainingFailurePolicy.
//
// +kubebuilder:validation:XValidation:rule="!has(self.onExitCodes) || self.onExitCodes.operator != 'In' || !self.onExitCodes.values.exists(v, v == 0)",message="onExitCodes.values must not contain 0 with operator In: a container that exited 0 did not fail",fieldPath=".onExitCodes.values",reason=FieldValueInvalid
type FailureRule struct {
	// Name identifies the rule in status (lastFailure.rule,
	// failureRuleMatches), conditions and events.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// Action is what a failure the rule matches does.
	Action FailureRuleAction `json:"action"`
	// TargetCliques limits the rule to pods of these clique templates
	// (spec.template.cliques[].name); empty: every clique.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	TargetCliques []string `json:"targetCliques,omitempty"`
	// OnExitCodes matches the exit codes of the pod's terminated
	// containers (init containers included; a container that exited 0 is
	// never considered). A container killed for memory (OOMKilled) has exit
	// code 137, as does one killed at the end of its grace period.
	// +optional
	OnExitCodes *ExitCodesRequirement `json:"onExitCodes,omitempty"`
	// OnPodConditions matches when the pod has any of these conditions.
	// DisruptionTarget is set by Kubernetes on a pod preempted, evicted
	// (node drain, API-initiated or taint-based eviction) or removed by the
	// pod garbage collector because its node is gone.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	OnPodConditions []PodConditionRequirement `json:"onPodConditions,omitempty"`
}

// ExitCodesOperator is In or NotIn.
// +kubebuilder:validation:Enum=In;NotIn
type ExitCodesOperator string

const (
	// ExitCodesIn: some considered container exited with one of the values.
	ExitCodesIn ExitCodesOperator = "In"
	// ExitCodesNotIn: some considered container exited with a code not
	// among the values.
	ExitCodesNotIn ExitCodesOperator = "NotIn"
)

// ExitCodesRequirement matches container exit codes, as a Job's
// podFailurePolicy onExitCodes does.
type ExitCodesRequirement struct {
	// ContainerName restricts the requirement to one container (an app or
	// init container); unset: every container.
	// +optional
	ContainerName *string `json:"containerName,omitempty"`
	// Operator relates the exit codes to the values.
	Operator ExitCodesOperator `json:"operator"`
	// Values are exit codes.
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=255
	Values []int32 `json:"values"`
}

// PodConditionRequirement matches one pod condition.
//
// +kubebuilder:validation:XValidation:rule="size(self.type) > 0",message="onPodConditions[].type must not be empty",fieldPath=".type",reason=FieldValueRequired
type PodConditionRequirement struct {
	// Type is the pod condition type, e.g. DisruptionTarget.
	Type corev1.PodConditionType `json:"type"`
	// Status is the condition's status to match.
	// +optional
	// +kubebuilder:default=True
	// +kubebuilder:validation:Enum=True;False;Unknown
	Status corev1.ConditionStatus `json:"status,omitempty"`
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
	// ReasonFailedByRule: a failurePolicy rule with action FailWorkload
	// matched a failure; the message names the rule.
	ReasonFailedByRule = "FailedByRule"
	// ReasonMaxUncountedRestartsExceeded: a failure matched a rule with
	// action RestartReplicaWithoutCount after
	// failurePolicy.maxUncountedRestarts such restarts.
	ReasonMaxUncountedRestartsExceeded = "MaxUncountedRestartsExceeded"

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
	// ReasonWaitingForPreviousAttempt: the replica restarts in place and a
	// pod of it still runs the previous attempt; the clique's startup gates
	// stay closed (the barrier between attempts).
	ReasonWaitingForPreviousAttempt = "WaitingForPreviousAttempt"
)

// OutcomeFinalizer is on every pod of a Training PodClique until the pod's
// outcome is recorded in its PodClique's status (succeededIndexes, or a
// counted replacement), or the pod is no longer to be accounted for (its
// replica restarts, its workload ended, its PodClique is gone). A pod that
// exited 0 thus cannot vanish before copse knows that its index is done.
const OutcomeFinalizer = "copse.dev/outcome"
