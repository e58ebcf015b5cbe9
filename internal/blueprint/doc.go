// Package blueprint builds the objects copse creates for a PodCliqueSet from
// its template: per replica a headless Service, PodCliqueScalingGroups,
// PodCliques and gangs, and the pods of each PodClique. The functions are
// pure: controllers compare their output with what exists.
//
// Two seams let other parts of copse extend what is built without editing
// the builders:
//
//   - ReplicaResources is the table of the kinds the PodCliqueSet controller
//     keeps per replica; a new per-replica kind is one more row.
//   - PodDecorator is a pure function that finishes a pod after Pod built it
//     (gang membership, a finalizer, a claim); a new pod change is one more
//     decorator in the list the PodClique controller applies.
package blueprint
