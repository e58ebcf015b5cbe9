// Package rules holds the field checks that more than one of copse's
// validating webhooks applies: replica bounds, names, uniqueness. Each check
// is a pure function returning field errors whose messages name the rule, so
// that a rejected request tells the user what to change.
package rules

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ReplicasAtLeastOne requires a replica count of 1 or more: a clique or
// scaling group with no replicas would be a gang without members.
func ReplicasAtLeastOne(replicas int32, path *field.Path) field.ErrorList {
	if replicas < 1 {
		return field.ErrorList{field.Invalid(path, replicas, "must be at least 1")}
	}
	return nil
}

// MinAvailableWithinReplicas requires 1 <= minAvailable <= replicas. A nil
// minAvailable is not checked: the defaulting webhook sets it, and where it
// is unset it means "all replicas". replicasPath names the field the upper
// bound comes from, so the message says which replicas it was compared with.
func MinAvailableWithinReplicas(minAvailable *int32, replicas int32, minAvailablePath, replicasPath *field.Path) field.ErrorList {
	if minAvailable == nil {
		return nil
	}
	if *minAvailable < 1 {
		return field.ErrorList{field.Invalid(minAvailablePath, *minAvailable, "must be at least 1")}
	}
	if *minAvailable > replicas {
		return field.ErrorList{field.Invalid(minAvailablePath, *minAvailable,
			fmt.Sprintf("must not be greater than %s (%d)", replicasPath, replicas))}
	}
	return nil
}

// AutoScalingWithinBounds checks an autoscaler's range against the object it
// scales: minReplicas must keep at least minAvailable replicas, since
// scaling below it would break the gang, and maxReplicas must admit both
// minReplicas and the current replicas.
func AutoScalingWithinBounds(minReplicas *int32, maxReplicas, replicas, minAvailable int32,
	configPath, minAvailablePath, replicasPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if minReplicas != nil && *minReplicas < minAvailable {
		errs = append(errs, field.Invalid(configPath.Child("minReplicas"), *minReplicas,
			fmt.Sprintf("must not be less than %s (%d): scaling below it would break the gang", minAvailablePath, minAvailable)))
	}
	switch {
	case minReplicas != nil && maxReplicas < *minReplicas:
		errs = append(errs, field.Invalid(configPath.Child("maxReplicas"), maxReplicas,
			fmt.Sprintf("must not be less than %s (%d)", configPath.Child("minReplicas"), *minReplicas)))
	case maxReplicas < replicas:
		errs = append(errs, field.Invalid(configPath.Child("maxReplicas"), maxReplicas,
			fmt.Sprintf("must not be less than %s (%d)", replicasPath, replicas)))
	}
	return errs
}
