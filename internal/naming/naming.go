// Package naming generates the names of the objects copse creates for a
// PodCliqueSet, and checks that every generated name stays legal.
//
// Names are generated, never parsed: controllers find objects by label
// (package labels). The formats match Grove's so that existing tooling and
// habits carry over:
//
//	replica service      <pcs>-<r>
//	standalone clique    <pcs>-<r>-<clique>
//	scaling group        <pcs>-<r>-<group>
//	grouped clique       <pcs>-<r>-<group>-<j>-<clique>
//	pod hostname         <podclique>-<index>
//	base gang (PodGroup) <pcs>-<r>
//	scaled gang          <pcs>-<r>-<group>-<j>
//	shared claim         <owner>-all-<template>     (resourceSharing, scope AllReplicas)
//	replica claim        <owner>-<i>-<template>     (resourceSharing, scope PerReplica)
//	Workload             <pcs>                      (scheduler backend workload)
//
// A TrainJob on the JobSet backend names its objects after itself; where a
// PodCliqueSet's objects of the same kind share the namespace, the two sets
// of names are disjoint by construction (see kinds.go and package mnnvl):
//
//	Workload             <trainjob>.trainjob
//	PodGroup             <trainjob>-trainer, <trainjob>-initializer
//	ComputeDomain        <trainjob>-mnnvl           (mnnvl.TrainJobComputeDomainName)
package naming

import (
	"fmt"
	"strconv"
)

// ReplicaService is the headless Service of one PodCliqueSet replica; pods
// use it as their subdomain.
func ReplicaService(pcs string, replica int) string {
	return pcs + "-" + strconv.Itoa(replica)
}

// StandalonePodClique is a clique that belongs to no scaling group.
func StandalonePodClique(pcs string, replica int, clique string) string {
	return fmt.Sprintf("%s-%d-%s", pcs, replica, clique)
}

// ScalingGroup is the PodCliqueScalingGroup of one PodCliqueSet replica.
func ScalingGroup(pcs string, replica int, group string) string {
	return fmt.Sprintf("%s-%d-%s", pcs, replica, group)
}

// GroupedPodClique is a clique of replica groupReplica of a scaling group.
// scalingGroup is the PodCliqueScalingGroup object's name.
func GroupedPodClique(scalingGroup string, groupReplica int, clique string) string {
	return fmt.Sprintf("%s-%d-%s", scalingGroup, groupReplica, clique)
}

// PodHostname is the hostname of the pod with the given index in a PodClique.
func PodHostname(podClique string, index int) string {
	return podClique + "-" + strconv.Itoa(index)
}

// PodGenerateName is the prefix of a PodClique's pod names. Pods get a
// random suffix, so a replacement never waits for its terminating
// predecessor to release the name.
func PodGenerateName(podClique string) string {
	return podClique + "-"
}

// BaseGang is the gang (PodGroup) of a replica: its standalone cliques and
// its scaling groups' first minAvailable replicas.
func BaseGang(pcs string, replica int) string {
	return ReplicaService(pcs, replica)
}

// ScaledGang is the gang of a scaling-group replica above minAvailable,
// which is scheduled on its own.
func ScaledGang(scalingGroup string, groupReplica int) string {
	return scalingGroup + "-" + strconv.Itoa(groupReplica)
}

// PreludeGang is the group (PodGroup) of a Training replica's cliques that
// other cliques wait on to succeed (trainingSpec.startsAfterSucceeded): they
// are scheduled apart from the replica's gang, without gang policy.
func PreludeGang(pcs string, replica int) string {
	return ReplicaService(pcs, replica) + "-prelude"
}

// HeadlessServiceFQDN is the DNS name of a replica's headless Service.
func HeadlessServiceFQDN(service, namespace string) string {
	return fmt.Sprintf("%s.%s.svc.cluster.local", service, namespace)
}

// SharedClaim is the ResourceClaim of a resourceSharing entry with scope
// AllReplicas: one for the owner (the PodCliqueSet, a PodCliqueScalingGroup
// or a PodClique object, by its name), shared by all its replicas. The
// literal "all" keeps it apart from every PerReplica name, as in Grove.
func SharedClaim(owner, template string) string {
	return owner + "-all-" + template
}

// ReplicaClaim is the ResourceClaim of a resourceSharing entry with scope
// PerReplica for replica index of its owner: a PodCliqueSet replica, a
// scaling-group replica or a pod index of a PodClique.
func ReplicaClaim(owner string, index int, template string) string {
	return owner + "-" + strconv.Itoa(index) + "-" + template
}
