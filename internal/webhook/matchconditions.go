package webhook

import admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

// SpecChangedCondition is the CEL expression of the match condition every
// copse webhook is registered with: only creations, and updates that change
// the object's spec, its grove.io/mnnvl-group annotation or its
// kueue.x-k8s.io/queue-name label, reach the operator.
//
// Why: copse's webhooks judge specs, and the metadata that is part of the
// contract: an MNNVL group (fixed at creation because ComputeDomains are made
// for it) and a Kueue queue (which a PodCliqueSet joins or leaves only while
// suspended). Without this condition, a stopped operator (failurePolicy
// Fail) would block every metadata update of its kinds — removing a
// finalizer, adding a label, the garbage collector's owner-reference edits —
// and so wedge deletions cluster-wide. With it, the API server answers those
// requests itself and only spec changes (and changes of that annotation and
// that label) wait for the operator.
const SpecChangedCondition = "request.operation == 'CREATE' || !has(oldObject.spec) || !has(object.spec) || object.spec != oldObject.spec" +
	" || oldObject.metadata.?annotations[?'grove.io/mnnvl-group'] != object.metadata.?annotations[?'grove.io/mnnvl-group']" +
	" || oldObject.metadata.?labels[?'kueue.x-k8s.io/queue-name'] != object.metadata.?labels[?'kueue.x-k8s.io/queue-name']"

// MatchConditionName names the match condition.
const MatchConditionName = "spec-or-contract-metadata-changed"

// MatchConditions are the conditions to register every webhook with.
func MatchConditions() []admissionregistrationv1.MatchCondition {
	return []admissionregistrationv1.MatchCondition{{Name: MatchConditionName, Expression: SpecChangedCondition}}
}
