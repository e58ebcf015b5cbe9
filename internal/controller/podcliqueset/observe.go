package podcliqueset

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/claimtemplates"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/podstate"
	"github.com/copse-dev/copse/internal/resourcesharing"
	"github.com/copse-dev/copse/internal/topology"
)

// observed is what exists for a PodCliqueSet, as the cache shows it: the
// objects and pods as listed, and the same sorted once by replica and by
// run (categorise), which is what the later steps read.
type observed struct {
	// byKind holds, per row of the resource table, the objects controlled
	// by the PodCliqueSet or by one of its scaling groups.
	byKind map[string][]client.Object
	// podCliques and scalingGroups are the typed views of their rows;
	// podCliques holds standalone and grouped PodCliques alike.
	podCliques    []*copsev1alpha1.PodClique
	scalingGroups []*copsev1alpha1.PodCliqueScalingGroup
	// pods are every pod labelled as part of the PodCliqueSet.
	pods []podstate.Summary

	// The index, built by categorise: children holds byKind by replica
	// (children.NoReplica: of none), replicas the objects and pods of each
	// replica, of every run and by run, and podsByClique the pods by the
	// PodClique their label names.
	children     children.Observed
	replicas     map[int]*replicaObjects
	podsByClique map[string][]podstate.Summary

	// packing is the topology packing objects built this pass get
	// (topology.Lookup); packingProblems are the constraints left out of it.
	packing         topology.Resolved
	packingProblems []topology.Problem
	// claimTemplates are the ResourceClaimTemplate objects resourceSharing
	// names; missingClaimTemplates those that do not exist yet.
	claimTemplates        resourcesharing.External
	missingClaimTemplates []types.NamespacedName
	// deletedMembers holds, per Training replica, the members of its whole
	// run that were deleted from outside (observeDeletedMembers).
	deletedMembers map[int]deletedMembers
	// lostNodes holds the nodes of the pods a restart in place may keep,
	// true for those gone or being deleted (observeLostNodes).
	lostNodes map[string]bool
	// admission is a queued PodCliqueSet's Admitted condition
	// (observeAdmission).
	admission admission
	// records are the PodCliqueSet's records as read (lifecycle.RecordsOf):
	// ended, suspended, each replica's attempt, parsed once for the pass.
	records lifecycle.Records
}

// facts are everything one pass decides on: the PodCliqueSet as read, what
// exists for it, and the time the pass runs at. Nothing after observe reads
// the API.
type facts struct {
	pcs *copsev1alpha1.PodCliqueSet
	obs *observed
	now time.Time
}

// observe makes every read of the pass: the resource table's objects and
// the pods (observeChildren), the API server's word on the members of
// whole Training runs the cache misses (observeDeletedMembers), Kueue's
// protocol inputs (observeAdmission) and the nodes of the pods a restart in
// place may keep (observeLostNodes).
func (r *Reconciler) observe(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, now time.Time) (facts, error) {
	obs, err := r.observeChildren(ctx, pcs)
	if err != nil {
		return facts{}, fmt.Errorf("observe children: %w", err)
	}
	obs.records = lifecycle.RecordsOf(pcs)
	if err := r.observeDeletedMembers(ctx, pcs, obs, now); err != nil {
		return facts{}, fmt.Errorf("check the runs for members deleted from outside: %w", err)
	}
	if obs.admission, err = r.observeAdmission(ctx, pcs, obs, now); err != nil {
		return facts{}, err
	}
	if err := r.observeLostNodes(ctx, pcs, obs); err != nil {
		return facts{}, fmt.Errorf("check the nodes of the pods a restart in place keeps: %w", err)
	}
	return facts{pcs: pcs, obs: obs, now: now}, nil
}

// runObjects are the observed objects and pods of one replica, of one run
// or of every run, in the order they were listed.
type runObjects struct {
	byKind        map[string][]client.Object
	podCliques    []*copsev1alpha1.PodClique
	scalingGroups []*copsev1alpha1.PodCliqueScalingGroup
	pods          []podstate.Summary
}

// replicaObjects are one replica's: every run's objects and pods, and each
// run's apart, by attempt.
type replicaObjects struct {
	runObjects
	runs map[int]*runObjects
}

// observeChildren lists every row of the resource table and the pods, keeps the
// objects controlled by the PodCliqueSet or by one of its scaling groups
// (grouped PodCliques are theirs), reads the ClusterTopologyBinding the
// constraints name and the ResourceClaimTemplates resourceSharing names,
// and categorises what it found once.
func (r *Reconciler) observeChildren(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet) (*observed, error) {
	packing, problems, err := topology.Lookup(ctx, r.Client, r.APIReader, pcs, r.TopologyAwareScheduling)
	if err != nil {
		return nil, err
	}
	templates, missing, err := claimtemplates.Read(ctx, r.Client, pcs)
	if err != nil {
		return nil, err
	}
	selector := labels.SelectPodCliqueSet(pcs.Name)
	listed, err := children.List(ctx, r.Client, r.resources(), pcs.Namespace, selector)
	if err != nil {
		return nil, err
	}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(pcs.Namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}

	out := &observed{byKind: map[string][]client.Object{}, packing: packing, packingProblems: problems,
		claimTemplates: templates, missingClaimTemplates: missing}
	owners := map[types.UID]bool{pcs.UID: true}
	for _, obj := range children.ControlledBy(listed[scalingGroupKind], owners) {
		owners[obj.GetUID()] = true
	}
	for _, row := range r.resources() {
		out.byKind[row.Kind] = children.ControlledBy(listed[row.Kind], owners)
		for _, obj := range out.byKind[row.Kind] {
			switch o := obj.(type) {
			case *copsev1alpha1.PodCliqueScalingGroup:
				out.scalingGroups = append(out.scalingGroups, o)
			case *copsev1alpha1.PodClique:
				out.podCliques = append(out.podCliques, o)
			}
		}
	}
	out.pods = make([]podstate.Summary, 0, len(pods.Items))
	for i := range pods.Items {
		out.pods = append(out.pods, podstate.Of(&pods.Items[i]))
	}
	return out.categorise(), nil
}

// scalingGroupKind is the resource table row of PodCliqueScalingGroups,
// whose objects control the grouped PodCliques.
const scalingGroupKind = "PodCliqueScalingGroup"

// resources is the resource table: the optional features' rows, copse's
// rows and the scheduler backend's.
func (r *Reconciler) resources() []blueprint.ReplicaResource {
	rows := append([]blueprint.ReplicaResource(nil), r.Resources...)
	rows = append(rows, blueprint.ReplicaResources()...)
	return append(rows, r.Backend.ReplicaResources()...)
}

// categorise builds the index from what was listed: it reads each object's
// replica and attempt labels once (a pod's podstate.Of read them), so that
// no later step parses a label again. It returns o.
func (o *observed) categorise() *observed {
	o.children = children.Observed{}
	o.replicas = map[int]*replicaObjects{}
	o.podsByClique = map[string][]podstate.Summary{}
	for _, g := range o.scalingGroups {
		o.replicaOf(replicaLabel(g)).add(attemptLabel(g), func(b *runObjects) { b.scalingGroups = append(b.scalingGroups, g) })
	}
	for _, pclq := range o.podCliques {
		o.replicaOf(replicaLabel(pclq)).add(attemptLabel(pclq), func(b *runObjects) { b.podCliques = append(b.podCliques, pclq) })
	}
	for kind, objs := range o.byKind {
		for _, obj := range objs {
			replica := replicaLabel(obj)
			o.children.Add(kind, replica, obj)
			o.replicaOf(replica).add(attemptLabel(obj), func(b *runObjects) {
				if b.byKind == nil {
					b.byKind = map[string][]client.Object{}
				}
				b.byKind[kind] = append(b.byKind[kind], obj)
			})
		}
	}
	for _, p := range o.pods {
		o.podsByClique[p.PodClique] = append(o.podsByClique[p.PodClique], p)
		o.replicaOf(p.Replica).add(p.Attempt, func(b *runObjects) { b.pods = append(b.pods, p) })
	}
	return o
}

// replicaOf is the index entry of replica, made on first use.
func (o *observed) replicaOf(replica int) *replicaObjects {
	entry := o.replicas[replica]
	if entry == nil {
		entry = &replicaObjects{runs: map[int]*runObjects{}}
		o.replicas[replica] = entry
	}
	return entry
}

// add files an object or pod of run attempt: among every run's, and its own.
func (e *replicaObjects) add(attempt int, file func(*runObjects)) {
	file(&e.runObjects)
	run := e.runs[attempt]
	if run == nil {
		run = &runObjects{}
		e.runs[attempt] = run
	}
	file(run)
}

// replica is what was observed of replica, of every run; empty when nothing.
func (o *observed) replica(replica int) *replicaObjects {
	if entry := o.replicas[replica]; entry != nil {
		return entry
	}
	return &replicaObjects{}
}

// run is what was observed of the replica's run attempt; empty when nothing.
func (e *replicaObjects) run(attempt int) *runObjects {
	if run := e.runs[attempt]; run != nil {
		return run
	}
	return &runObjects{}
}

// groupReplicas are the live replica counts of the scaling groups, by
// object name, for building gangs.
func (o *observed) groupReplicas() map[string]int32 {
	out := map[string]int32{}
	for _, g := range o.scalingGroups {
		out[g.Name] = g.Spec.Replicas
	}
	return out
}

// activePods are the pods that have not ended, terminating ones included:
// until they are gone they still hold their GPUs.
func (o *observed) activePods() []podstate.Summary {
	var out []podstate.Summary
	for _, p := range o.pods {
		if p.HoldsNode() {
			out = append(out, p)
		}
	}
	return out
}

// replicaLabel reads an object's replica index label; children.NoReplica
// when it has none, which matches no replica.
func replicaLabel(obj client.Object) int {
	if i, ok := labels.Index(obj.GetLabels(), labels.ReplicaKey); ok {
		return i
	}
	return children.NoReplica
}

// attemptLabel reads an object's attempt label; 0 when it has none.
func attemptLabel(obj client.Object) int {
	i, _ := labels.Index(obj.GetLabels(), labels.AttemptKey)
	return i
}

// uids are the UIDs of every observed object of the resource table.
func (o *observed) uids() map[types.UID]bool {
	out := map[types.UID]bool{}
	for _, objs := range o.byKind {
		for _, obj := range objs {
			out[obj.GetUID()] = true
		}
	}
	return out
}

// currentRuns holds the replicas that still have objects of their current
// run that a suspension deletes (rows, a kind that makes pods) or pods of
// it.
func (o *observed) currentRuns(rows []blueprint.ReplicaResource) map[int]bool {
	out := map[int]bool{}
	for replica, entry := range o.replicas {
		if replica == children.NoReplica {
			continue
		}
		run := entry.run(int(o.records.Attempt(replica)))
		if len(run.pods) > 0 {
			out[replica] = true
		}
		for _, row := range rows {
			if row.DeletedBy(copsev1alpha1.RecreationReasonSuspension) && len(run.byKind[row.Kind]) > 0 {
				out[replica] = true
			}
		}
	}
	return out
}

// groupMinAvailable is each scaling group's minAvailable, by object name.
func (o *observed) groupMinAvailable() map[string]int32 {
	out := map[string]int32{}
	for _, g := range o.scalingGroups {
		out[g.Name] = g.MinAvailable()
	}
	return out
}

// groupReplicasByTemplate are the live replica counts of replica r's
// scaling groups, by their template's group name.
func (o *observed) groupReplicasByTemplate(pcs *copsev1alpha1.PodCliqueSet, r int) map[string]int32 {
	out := map[string]int32{}
	for _, g := range o.replica(r).scalingGroups {
		out[templateGroupName(pcs, g.Name, r)] = g.Spec.Replicas
	}
	return out
}
