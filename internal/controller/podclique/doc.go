// Package podclique is the PodClique controller: it keeps a PodClique's pods
// at spec.replicas, one pod per index, replaces pods that end, and writes the
// PodClique's status.
//
// A pass is observe -> plan -> execute -> settle. observe (observe*.go)
// makes every read: the PodClique's pods, its PodCliqueSet, its start
// order, and what the writes the plan would make depend on (claims, the
// base gang, the API server's word past the cache). planPass (decide.go)
// is pure: from those reads, the status, its events, the clique's claims
// and the pod writes, as one children.PassPlan. children.Writer.Execute
// makes every write, status first; settleWrites (settle.go) turns what the
// writes did into events and the creation attempt's record. Everything
// that decides (which indices to create, which pods to delete, whether to
// replace an ended pod, whether any pod may be created now and why not,
// the status and its conditions) is a function of values, tested with
// tables and fuzzed.
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
