package podcliqueset

import (
	"context"
	"fmt"
	"slices"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/claimtemplates"
	"github.com/copse-dev/copse/internal/kueue"
	"github.com/copse-dev/copse/internal/kueueinputs"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/naming"
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
	// PodClique their label names. They are values: a replica or run with
	// nothing observed reads as empty (replicas[r].runs[a].pods), so the
	// later steps index them without a lookup function.
	children     children.Observed
	replicas     map[int]replicaObjects
	podsByClique map[string][]podstate.Summary
	// activePods are the pods that have not ended, terminating ones
	// included: until they are gone they still hold their GPUs.
	activePods []podstate.Summary
	// objectUIDs are the UIDs of every observed object of the resource table.
	objectUIDs map[types.UID]bool
	// groupReplicas and groupMinAvailable are the scaling groups' live
	// replica counts and minAvailable, by object name.
	groupReplicas, groupMinAvailable map[string]int32

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
	runs map[int]runObjects
	// groupReplicas are the live replica counts of the replica's scaling
	// groups, by their template's group name; members is how many
	// PodCliques and scaling groups its run should have with them, and
	// baseMembers how many PodCliques its base gang has (countMembers).
	groupReplicas        map[string]int32
	members, baseMembers int
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
	return out.categorise().countMembers(pcs), nil
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
	o.replicas = map[int]replicaObjects{}
	o.podsByClique = map[string][]podstate.Summary{}
	o.objectUIDs = map[types.UID]bool{}
	o.groupReplicas, o.groupMinAvailable = map[string]int32{}, map[string]int32{}
	// file adds an object or pod of replica's run attempt: among every
	// run's, and its own.
	file := func(replica, attempt int, add func(*runObjects)) {
		entry := o.replicas[replica]
		add(&entry.runObjects)
		if entry.runs == nil {
			entry.runs = map[int]runObjects{}
		}
		run := entry.runs[attempt]
		add(&run)
		entry.runs[attempt] = run
		o.replicas[replica] = entry
	}
	for _, g := range o.scalingGroups {
		replica, attempt := runOf(g)
		file(replica, attempt, func(b *runObjects) { b.scalingGroups = append(b.scalingGroups, g) })
		o.groupReplicas[g.Name], o.groupMinAvailable[g.Name] = g.Spec.Replicas, g.MinAvailable()
	}
	for _, pclq := range o.podCliques {
		replica, attempt := runOf(pclq)
		file(replica, attempt, func(b *runObjects) { b.podCliques = append(b.podCliques, pclq) })
	}
	for kind, objs := range o.byKind {
		for _, obj := range objs {
			replica, attempt := runOf(obj)
			o.children.Add(kind, replica, obj)
			o.objectUIDs[obj.GetUID()] = true
			file(replica, attempt, func(b *runObjects) {
				if b.byKind == nil {
					b.byKind = map[string][]client.Object{}
				}
				b.byKind[kind] = append(b.byKind[kind], obj)
			})
		}
	}
	for _, p := range o.pods {
		o.podsByClique[p.PodClique] = append(o.podsByClique[p.PodClique], p)
		file(p.Replica, p.Attempt, func(b *runObjects) { b.pods = append(b.pods, p) })
		if p.HoldsNode() {
			o.activePods = append(o.activePods, p)
		}
	}
	return o
}

// countMembers files, for each replica, its scaling groups' live replica
// counts by their template's group name and, from them, how many members
// its run should have and how many PodCliques its base gang has: every
// replica below spec.replicas gets them, observed or not. It returns o.
func (o *observed) countMembers(pcs *copsev1alpha1.PodCliqueSet) *observed {
	for r := range int(pcs.Spec.Replicas) {
		if _, ok := o.replicas[r]; !ok {
			o.replicas[r] = replicaObjects{}
		}
	}
	for r, entry := range o.replicas {
		entry.groupReplicas = map[string]int32{}
		for _, g := range entry.scalingGroups {
			entry.groupReplicas[templateGroupName(pcs, g.Name, r)] = g.Spec.Replicas
		}
		entry.members = pcs.MembersPerReplica(entry.groupReplicas)
		entry.baseMembers = expectedBaseMembers(pcs, entry.groupReplicas)
		o.replicas[r] = entry
	}
	return o
}

// runOf reads an object's replica index and attempt labels: its replica is
// children.NoReplica when it has none, which matches no replica; its attempt
// 0 when it has none.
func runOf(obj client.Object) (replica, attempt int) {
	objLabels := obj.GetLabels()
	replica, ok := labels.Index(objLabels, labels.ReplicaKey)
	if !ok {
		replica = children.NoReplica
	}
	attempt, _ = labels.Index(objLabels, labels.AttemptKey)
	return replica, attempt
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
		run := entry.runs[int(o.records.Attempt(replica))]
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

// admission is a queued PodCliqueSet's Admitted condition as this pass
// computes it. The kueueworkload controller takes the steps of Kueue's
// protocol (docs/kueue.md); the condition those steps lead to is written
// here, with the rest of the status, so PodCliqueSet status has one writer.
type admission struct {
	// tracked: the PodCliqueSet takes part in the protocol (kueue.Tracked,
	// with kueue.enabled); otherwise the condition is left as it is.
	tracked bool
	// condition is the Admitted condition; nil removes it.
	condition *metav1.Condition
}

// observeAdmission reads what Kueue's protocol decides on for a queued
// PodCliqueSet (kueueinputs.Gather: its Workload, the flavors, the
// priority, the refusal recorded on it), with the packing and the pods
// observe already has, and computes its Admitted condition
// (kueue.AdmittedCondition, pure).
func (r *Reconciler) observeAdmission(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, obs *observed, now time.Time) (admission, error) {
	if !r.Kueue || !kueue.Tracked(pcs) {
		return admission{}, nil
	}
	in, err := kueueinputs.Gather(ctx, r.Client, client.ObjectKeyFromObject(pcs), pcs, kueueinputs.Facts{
		Packing:    obs.packing,
		PodsRemain: kueue.PodsRemain(pcs, len(obs.activePods)),
		MaxPodSets: r.KueueMaxPodSets,
		Now:        now,
	})
	if err != nil {
		return admission{}, fmt.Errorf("gather the Kueue inputs of the Admitted condition: %w", err)
	}
	return admission{tracked: true, condition: kueue.AdmittedCondition(in)}, nil
}

// observeDeletedMembers finds the members of whole Training runs that were
// deleted from outside. The cache alone cannot tell a deletion from an
// informer that lags behind another, so each member the cache misses is
// read from the API server: it counts as deleted only when the server has
// no live one of the current run either.
func (r *Reconciler) observeDeletedMembers(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, obs *observed, now time.Time) error {
	for _, replica := range replicasToCheckForDeletions(pcs, obs.records) {
		attempt := obs.records.Attempt(replica)
		var gone []string
		for _, name := range missingRunMembers(pcs, obs, replica, attempt) {
			deleted, err := r.deletedOnServer(ctx, pcs, name, attempt)
			if err != nil {
				return err
			}
			if deleted {
				gone = append(gone, name)
			}
		}
		if len(gone) > 0 {
			if obs.deletedMembers == nil {
				obs.deletedMembers = map[int]deletedMembers{}
			}
			obs.deletedMembers[replica] = deletedMembers{names: gone, at: now}
		}
	}
	return nil
}

// deletedOnServer reports whether the member name of pcs's current run
// (attempt) is gone on the API server: not found, being deleted, or of
// another run. It tries a PodClique first, then a PodCliqueScalingGroup.
func (r *Reconciler) deletedOnServer(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, name string, attempt int32) (bool, error) {
	for _, obj := range []client.Object{&copsev1alpha1.PodClique{}, &copsev1alpha1.PodCliqueScalingGroup{}} {
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: pcs.Namespace, Name: name}, obj)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return false, fmt.Errorf("read %s/%s from the API server: %w", pcs.Namespace, name, err)
		}
		_, current := runOf(obj)
		return !obj.GetDeletionTimestamp().IsZero() || current != int(attempt), nil
	}
	return true, nil
}

// observeLostNodes finds the nodes of the pods a restart in place may keep,
// and records those that are gone or being deleted: their pods cannot
// restart where they are. The restart may be decided in this very pass, so
// every active pod's node is read (from the cache's metadata of nodes)
// while the workload restarts in place and has not ended. A kept pod whose
// node goes later is deleted by the pod garbage collector, a failure of the
// new attempt.
func (r *Reconciler) observeLostNodes(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, obs *observed) error {
	if !obs.records.Training || !pcs.RestartsInPlace() || obs.records.Ended {
		return nil
	}
	for _, p := range obs.pods {
		if p.Node == "" || !p.Active() {
			continue
		}
		if _, seen := obs.lostNodes[p.Node]; seen {
			continue
		}
		lost, err := r.nodeLost(ctx, p.Node)
		if err != nil {
			return err
		}
		if obs.lostNodes == nil {
			obs.lostNodes = map[string]bool{}
		}
		obs.lostNodes[p.Node] = lost
	}
	return nil
}

// nodeLost reports whether the node is gone or being deleted, from the
// cache's metadata of nodes.
func (r *Reconciler) nodeLost(ctx context.Context, name string) (bool, error) {
	node := &metav1.PartialObjectMetadata{}
	node.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("reading node %s: %w", name, err)
	}
	return !node.DeletionTimestamp.IsZero(), nil
}

// deletedMembers are the members of one Training replica's run that were
// deleted from outside, and when this controller confirmed it.
type deletedMembers struct {
	names []string
	at    time.Time
}

// runMemberNames are the PodCliqueScalingGroups and PodCliques one replica
// of a Training workload is made of: its sizes never change, so the names
// follow from the template.
func runMemberNames(pcs *copsev1alpha1.PodCliqueSet, replica int) []string {
	var out []string
	for _, clique := range pcs.StandaloneCliques() {
		out = append(out, naming.StandalonePodClique(pcs.Name, replica, clique.Name))
	}
	for _, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		group := naming.ScalingGroup(pcs.Name, replica, g.Name)
		out = append(out, group)
		for j := range int(copsev1alpha1.ScalingGroupReplicas(g)) {
			for _, clique := range g.CliqueNames {
				out = append(out, naming.GroupedPodClique(group, j, clique))
			}
		}
	}
	return out
}

// missingRunMembers are the members of replica's current run (attempt)
// that the cache does not show alive: absent, being deleted, or (for a
// PodClique) controlled by none of the observed owners.
func missingRunMembers(pcs *copsev1alpha1.PodCliqueSet, obs *observed, replica int, attempt int32) []string {
	alive := map[string]bool{}
	run := obs.replicas[replica].runs[int(attempt)]
	for _, g := range run.scalingGroups {
		if g.DeletionTimestamp.IsZero() {
			alive[g.Name] = true
		}
	}
	for _, pclq := range run.podCliques {
		if pclq.DeletionTimestamp.IsZero() {
			alive[pclq.Name] = true
		}
	}
	var out []string
	for _, name := range runMemberNames(pcs, replica) {
		if !alive[name] {
			out = append(out, name)
		}
	}
	return out
}

// replicasToCheckForDeletions are the Training replicas whose current run
// was whole (status.createdReplicaIndexes) and may have lost a member since:
// not being recreated, not succeeded, not suspended, the workload not
// ended. Others get no decision that a deletion could change.
func replicasToCheckForDeletions(pcs *copsev1alpha1.PodCliqueSet, rec lifecycle.Records) []int {
	if !rec.Training || rec.Suspended || rec.Ended {
		return nil
	}
	var out []int
	for r := range int(pcs.Spec.Replicas) {
		if state := rec.Replica(r, -1); state.RunCreated && !state.Succeeded && !state.Recreating {
			out = append(out, r)
		}
	}
	return out
}

// templateGroupName finds the template name of scaling group object name
// in replica r; "" when no template group has that name.
func templateGroupName(pcs *copsev1alpha1.PodCliqueSet, name string, r int) string {
	i := slices.IndexFunc(pcs.Spec.Template.PodCliqueScalingGroupConfigs, func(g grovecorev1alpha1.PodCliqueScalingGroupConfig) bool {
		return naming.ScalingGroup(pcs.Name, r, g.Name) == name
	})
	if i < 0 {
		return ""
	}
	return pcs.Spec.Template.PodCliqueScalingGroupConfigs[i].Name
}

// expectedBaseMembers is how many PodCliques a replica's base gang has:
// every standalone clique, and every member clique of the group replicas
// below the group's minAvailable.
func expectedBaseMembers(pcs *copsev1alpha1.PodCliqueSet, groupReplicas map[string]int32) int {
	n := len(pcs.StandaloneCliques())
	for _, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		replicas, ok := groupReplicas[g.Name]
		if !ok {
			replicas = copsev1alpha1.ScalingGroupReplicas(g)
		}
		n += int(min(replicas, copsev1alpha1.ScalingGroupMinAvailable(g))) * len(g.CliqueNames)
	}
	return n
}
