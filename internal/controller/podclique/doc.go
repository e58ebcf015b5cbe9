// Package podclique is the PodClique controller: it keeps a PodClique's pods
// at spec.replicas, one pod per index, replaces pods that end, and writes the
// PodClique's status.
//
// The reconciler is a thin shell around pure decisions. Reconcile gathers
// the PodClique, its pods and its PodCliqueSet from the cache (observe),
// syncs the expectations store, and hands plain values to planPods,
// decideCreation and computeStatus; it writes the status and then applies
// their results (act). Everything that decides (which indices to create,
// which pods to delete, whether to replace an ended pod, whether any pod
// may be created now and why not, the status and its conditions) is a
// function of values, tested with tables.
//
// "May this clique create pods now" is one answer, decideCreation over a
// creationState (maycreate.go): the replica's answer (lifecycle.MayCreatePods)
// and the clique's own causes (being deleted, labels, completion, start
// order, ResourceClaims, the base gang's placement, the API server's
// refusals with back-off), decided before the status write, which carries it
// as the PodCreationBlocked condition.
//
// For a Training workload (GREP-0285) pods that exit 0 count as healthy and
// are never deleted, a failed pod is a breach as soon as too few healthy pods
// remain, a clique whose every index exited 0 gets the sticky Succeeded
// condition, and no pod is created once the clique succeeded or the
// workload ended.
//
// docs/podclique.md describes the behaviour for users.
package podclique
