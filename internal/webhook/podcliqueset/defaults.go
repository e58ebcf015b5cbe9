// Package podcliqueset holds the admission rules of the PodCliqueSet: the
// defaults the mutating webhook applies and the checks the validating
// webhook runs on create and update. The rules are pure functions of the
// objects, so they are tested without an API server; handlers.go adapts them
// to controller-runtime's admission interfaces.
package podcliqueset

import (
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// Default fills every unset field of pcs that has a default, leaving the
// fields the user set alone. It is idempotent, so it is safe on update too.
// The defaults live in api/core/v1alpha1 (derived.go, ApplyDefaults), their
// one home, so that the controllers treat an object the webhook never saw
// exactly as one it defaulted.
//
// The CRD schema already defaults some of these fields when the API server
// decodes the object; they are set here as well so that the result does not
// depend on which of the two ran.
func Default(pcs *copsev1alpha1.PodCliqueSet) {
	pcs.ApplyDefaults()
}
