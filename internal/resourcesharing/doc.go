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
// Everything here is a pure function of plain values: the claims of each
// level, per replica of its owner and shared by them, which the resource
// tables of the three levels build (blueprint's claim rows, kept by
// internal/children), and the references a pod decorator adds to pods.
// internal/claimtemplates reads the ResourceClaimTemplate objects references
// name.
package resourcesharing
