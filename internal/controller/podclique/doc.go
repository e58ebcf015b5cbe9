// Package podclique is the PodClique controller: it keeps a PodClique's pods
// at spec.replicas, one pod per index, replaces pods that end, and writes the
// PodClique's status.
//
// The reconciler is a thin shell around pure decisions. Reconcile reads the
// PodClique, its pods and its PodCliqueSet from the cache, syncs the
// expectations store, and hands plain values to planPods and computeStatus;
// it then applies their results. Everything that decides (which indices to
// create, which pods to delete, whether to replace an ended pod, the status
// and its conditions) is a function of values, tested with tables.
//
// docs/podclique.md describes the behaviour for users.
package podclique
