package blueprint

import (
	resourcev1 "k8s.io/api/resource/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/copse-dev/copse/internal/resourcesharing"
)

// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaims,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaimtemplates,verbs=get;list;watch

// ResourceClaims is the resource table's row for the PodCliqueSet level of
// resourceSharing: per replica the claims of its PerReplica entries
// (<pcs>-<r>-<template>), and shared by all replicas those of its
// AllReplicas entries (<pcs>-all-<template>). Like Grove's, they outlive
// recreations of the replica (the new run's pods use the same claims) and
// go when the replica is scaled in or the PodCliqueSet is deleted. The
// scaling-group and clique levels are the PodCliqueScalingGroup and
// PodClique controllers' (they own those claims).
func ResourceClaims() ReplicaResource {
	return ReplicaResource{
		Kind:      "ResourceClaim",
		NewObject: func() client.Object { return &resourcev1.ResourceClaim{} },
		NewList:   func() client.ObjectList { return &resourcev1.ResourceClaimList{} },
		Desired: func(in ReplicaInputs) []client.Object {
			return objects(resourcesharing.PodCliqueSetReplica(in.PodCliqueSet, in.Replica, in.ClaimTemplates))
		},
		Shared: func(in ReplicaInputs) []client.Object {
			return objects(resourcesharing.PodCliqueSetShared(in.PodCliqueSet, in.ClaimTemplates))
		},
		RecreatedWithReplica: false,
	}
}

func objects(claims []*resourcev1.ResourceClaim) []client.Object {
	out := make([]client.Object, 0, len(claims))
	for _, c := range claims {
		out = append(out, c)
	}
	return out
}
