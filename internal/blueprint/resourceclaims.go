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
// scaling-group and clique levels are the rows below, kept by the
// PodCliqueScalingGroup and PodClique controllers (they own those claims).
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

// GroupResourceClaims is the row of the scaling-group level of
// resourceSharing, owned by the PodCliqueScalingGroup (so they go with it):
// per group replica the claims of its PerReplica entries
// (<pcsg>-<j>-<template>), and shared by the group those of its AllReplicas
// entries (<pcsg>-all-<template>). A recreated group replica keeps its
// claims; a scaled-in one loses them. A claim whose template does not exist
// yet is left out until it does (the controller reports it), and the pods
// that need it wait in the PodClique controller.
func GroupResourceClaims() GroupResource {
	return GroupResource{
		Kind:      "ResourceClaim",
		NewObject: func() client.Object { return &resourcev1.ResourceClaim{} },
		NewList:   func() client.ObjectList { return &resourcev1.ResourceClaimList{} },
		Desired: func(in GroupInputs) []client.Object {
			if in.Config == nil {
				return nil
			}
			return objects(resourcesharing.ScalingGroupReplica(in.PodCliqueSet, in.Config, in.ScalingGroup.Name, in.Replica, in.ClaimTemplates))
		},
		Shared: func(in GroupInputs) []client.Object {
			if in.Config == nil {
				return nil
			}
			return objects(resourcesharing.ScalingGroupShared(in.PodCliqueSet, in.Config, in.ScalingGroup.Name, in.ClaimTemplates))
		},
	}
}

// CliqueResourceClaims is the row of the clique level of resourceSharing,
// owned by the PodClique (so they go with it): per pod index the claims of
// its PerReplica entries (<pclq>-<i>-<template>), and shared by its pods
// those of its AllReplicas entries (<pclq>-all-<template>). The pods that
// refer to a claim wait for it (the PodClique controller's claimsReady).
func CliqueResourceClaims() CliqueResource {
	return CliqueResource{
		Kind:      "ResourceClaim",
		NewObject: func() client.Object { return &resourcev1.ResourceClaim{} },
		NewList:   func() client.ObjectList { return &resourcev1.ResourceClaimList{} },
		Desired: func(in CliqueInputs) []client.Object {
			if in.Template == nil {
				return nil
			}
			return objects(resourcesharing.PodCliqueReplica(in.PodCliqueSet, in.Template, in.PodClique.Name, in.Index, in.ClaimTemplates))
		},
		Shared: func(in CliqueInputs) []client.Object {
			if in.Template == nil {
				return nil
			}
			return objects(resourcesharing.PodCliqueShared(in.PodCliqueSet, in.Template, in.PodClique.Name, in.ClaimTemplates))
		},
	}
}

func objects(claims []*resourcev1.ResourceClaim) []client.Object {
	out := make([]client.Object, 0, len(claims))
	for _, c := range claims {
		out = append(out, c)
	}
	return out
}
