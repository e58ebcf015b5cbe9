// Package resourcesharing turns a PodCliqueSet's resourceSharing fields
// (Grove's GREP-390: spec.template.resourceClaimTemplates and
// resourceSharing at the PodCliqueSet, scaling-group and clique levels) into
// the ResourceClaims copse creates and the references its pods carry.
//
// Each level's claims are owned by the object of that level: the
// PodCliqueSet's by the PodCliqueSet, a scaling group's by its
// PodCliqueScalingGroup, a clique's by its PodClique. Scope AllReplicas is
// one claim per owner (<owner>-all-<template>), PerReplica one per replica of
// the owner (<owner>-<index>-<template>): a PodCliqueSet replica, a
// scaling-group replica, a pod index. Names and labels are Grove's.
//
// Everything here is a pure function of plain values, except Gather, which
// reads the ResourceClaimTemplate objects references name, and Converge,
// which writes one owner's claims; the PodCliqueSet, PodCliqueScalingGroup
// and PodClique controllers use them, and a pod decorator adds the
// references to pods.
package resourcesharing
