// Package labels defines the labels copse puts on every object it creates,
// and the selectors controllers use to find them. Objects are always found
// by label, never by parsing or suffix-matching their names.
//
// The keys are Grove's (github.com/ai-dynamo/grove/operator/api/common), so
// tooling written for Grove selects copse's objects too.
package labels

import (
	"strconv"

	grovecommon "github.com/ai-dynamo/grove/operator/api/common"
	"k8s.io/apimachinery/pkg/labels"
)

// Label keys. All but CliqueTemplateKey and AttemptKey are Grove's.
const (
	ManagedByKey           = grovecommon.LabelManagedByKey
	PartOfKey              = grovecommon.LabelPartOfKey // the PodCliqueSet's name
	ComponentKey           = grovecommon.LabelComponentKey
	ReplicaKey             = grovecommon.LabelPodCliqueSetReplicaIndex
	PodCliqueKey           = grovecommon.LabelPodClique
	ScalingGroupKey        = grovecommon.LabelPodCliqueScalingGroup // the PodCliqueScalingGroup object's name
	ScalingGroupReplicaKey = grovecommon.LabelPodCliqueScalingGroupReplicaIndex
	PodIndexKey            = grovecommon.LabelPodCliquePodIndex
	PodGangKey             = grovecommon.LabelPodGang // the gang (PodGroup) a PodClique's pods join
	PodTemplateHashKey     = grovecommon.LabelPodTemplateHash
	AppNameKey             = grovecommon.LabelAppNameKey // an object's own name, on HorizontalPodAutoscalers as Grove sets it
	// CliqueTemplateKey is the clique's name in the PodCliqueSet template
	// ("worker"), as opposed to PodCliqueKey, the PodClique object's name.
	CliqueTemplateKey = "copse.dev/clique"
	// AttemptKey is the run of its replica an object or pod belongs to: 0
	// for the first run, n after the replica's n-th recreation (a Training
	// restart or a gang termination). Every object of a run carries it:
	// PodCliqueScalingGroups, PodCliques, PodGroups and pods.
	AttemptKey = "copse.dev/attempt"
)

// StartupGateAnnotation holds a pod's startup gate state,
// StartupGateClosed or StartupGateOpen: the gate init container reads it
// through a downward-API volume and lets the pod's containers start once it
// is open.
const StartupGateAnnotation = "copse.dev/startup-gate"

// RestartsAtMoveAnnotation, on a pod a restart in place kept, holds how
// many times the kubelet had restarted its containers when copse moved it
// to its attempt (podstate.ContainerRestarts): a container that has not
// restarted since still runs, or ran, the previous attempt's process, so
// its outcome is that attempt's, not the new one's.
const RestartsAtMoveAnnotation = "copse.dev/restarts-at-move"

// The states of a pod's startup gate (StartupGateAnnotation).
const (
	StartupGateClosed = "closed"
	StartupGateOpen   = "open"
)

// StartupGateContainer is the name of the startup gate's init container,
// whose status tells whether a pod's containers are held at the gate.
const StartupGateContainer = "copse-startup-gate"

// RestartAgentContainer is the name of the restart agent's sidecar (a
// restart in place, blueprint.RestartAgent).
const RestartAgentContainer = "copse-restart-agent"

// IsCopseContainer reports whether a container is one copse adds to a pod
// (the startup gate, the restart agent): its exits are copse's mechanism,
// never the workload's outcome, so failure rules and failure reasons do not
// see them.
func IsCopseContainer(name string) bool {
	return name == StartupGateContainer || name == RestartAgentContainer
}

// TemplateReplicasAnnotation, on a PodClique or PodCliqueScalingGroup,
// holds the replica count of the PodCliqueSet template that copse last
// applied to it. A template count different from it is a change of the
// template, applied to spec.replicas; otherwise spec.replicas is left to
// whoever scaled the object (kubectl scale, an autoscaler).
const TemplateReplicasAnnotation = "copse.dev/template-replicas"

// ReplicaDomainKeyAnnotation, on a grouped PodClique of a PodCliqueSet
// replica packed with pack.required, is the node label key of the replica's
// level: the pods of the clique, when its scaling-group replica is a scaled
// gang, are created in the base gang's domain of that key
// (blueprint.BaseGangHoldKey). It is the PodClique's bookkeeping, not copied
// to pods.
const ReplicaDomainKeyAnnotation = "copse.dev/replica-domain-key"

// ManagedByValue marks objects copse manages.
const ManagedByValue = "copse-operator"

// Component values, one per kind of generated object.
const (
	ComponentHeadlessService  = grovecommon.LabelComponentNamePodCliqueSetReplicaHeadlessService
	ComponentPodCliqueOfSet   = grovecommon.LabelComponentNamePodCliqueSetPodClique
	ComponentPodCliqueOfGroup = grovecommon.LabelComponentNamePodCliqueScalingGroupPodClique
	ComponentScalingGroup     = grovecommon.LabelComponentNamePodCliqueScalingGroup
	ComponentAutoscaler       = grovecommon.LabelComponentNameHorizontalPodAutoscaler
	// ComponentResourceClaim marks the ResourceClaims of resourceSharing,
	// at every level.
	ComponentResourceClaim = grovecommon.LabelComponentNameResourceClaim
	// ComponentPodGroup and ComponentWorkload are copse's own: Grove has no
	// Workload API objects.
	ComponentPodGroup = "podgroup"
	ComponentWorkload = "workload"
)

// ForPodCliqueSet are the labels of every object generated for a PodCliqueSet.
func ForPodCliqueSet(pcsName string) map[string]string {
	return map[string]string{ManagedByKey: ManagedByValue, PartOfKey: pcsName}
}

// ForReplica adds the replica index to ForPodCliqueSet.
func ForReplica(pcsName string, replica int) map[string]string {
	l := ForPodCliqueSet(pcsName)
	l[ReplicaKey] = strconv.Itoa(replica)
	return l
}

// SelectPodCliqueSet selects every object generated for a PodCliqueSet.
func SelectPodCliqueSet(pcsName string) labels.Selector {
	return labels.SelectorFromSet(ForPodCliqueSet(pcsName))
}

// Merge returns a new map with the entries of every map, later maps winning.
// Used to put copse's labels over the user's template labels, so that a
// user label can never hijack a selector.
func Merge(maps ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// Index reads an integer label such as ReplicaKey. ok is false when the
// label is absent or not a non-negative integer.
func Index(objLabels map[string]string, key string) (index int, ok bool) {
	raw, present := objLabels[key]
	if !present {
		return 0, false
	}
	index, err := strconv.Atoi(raw)
	if err != nil || index < 0 {
		return 0, false
	}
	return index, true
}
