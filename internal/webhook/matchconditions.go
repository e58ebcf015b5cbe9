package webhook

import admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

// SpecChangedCondition is the CEL expression of the match condition every
// copse webhook is registered with: only creations, and updates that change
// the object's spec or its grove.io/mnnvl-group annotation, reach the
// operator.
//
// Why: copse's webhooks judge specs, and the one annotation that is part of
// the contract (an MNNVL group, fixed at creation because ComputeDomains are
// made for it). Without this condition, a stopped operator (failurePolicy
// Fail) would block every metadata update of its kinds — removing a
// finalizer, adding a label, the garbage collector's owner-reference edits —
// and so wedge deletions cluster-wide. With it, the API server answers those
// requests itself and only spec changes (and MNNVL group changes) wait for
// the operator.
const SpecChangedCondition = "request.operation == 'CREATE' || !has(oldObject.spec) || !has(object.spec) || object.spec != oldObject.spec" +
	" || oldObject.metadata.?annotations[?'grove.io/mnnvl-group'] != object.metadata.?annotations[?'grove.io/mnnvl-group']"

// MatchConditions are the conditions to register every webhook with.
func MatchConditions() []admissionregistrationv1.MatchCondition {
	return []admissionregistrationv1.MatchCondition{{Name: "spec-or-mnnvl-group-changed", Expression: SpecChangedCondition}}
}
