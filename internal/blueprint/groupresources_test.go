package blueprint

import (
	"slices"
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	resourcev1 "k8s.io/api/resource/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/resourcesharing"
)

func objectNames(objs []client.Object) []string {
	out := []string{}
	for _, o := range objs {
		out = append(out, o.GetName())
	}
	return out
}

// sharingPCS is testPCS with a claim template "gpu" shared by the scaling
// group "serve" (AllReplicas and PerReplica) and by the clique "decode"
// (PerReplica).
func sharingPCS() *copsev1alpha1.PodCliqueSet {
	pcs := testPCS()
	pcs.Spec.Template.ResourceClaimTemplates = []grovecorev1alpha1.ResourceClaimTemplateConfig{{Name: "gpu"}}
	pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].ResourceSharing = []grovecorev1alpha1.PCSGResourceSharingSpec{
		{ResourceSharingSpec: grovecorev1alpha1.ResourceSharingSpec{Name: "gpu", Scope: grovecorev1alpha1.ResourceSharingScopeAllReplicas}},
		{ResourceSharingSpec: grovecorev1alpha1.ResourceSharingSpec{Name: "gpu", Scope: grovecorev1alpha1.ResourceSharingScopePerReplica}},
	}
	pcs.Spec.Template.Cliques[1].ResourceSharing = []grovecorev1alpha1.ResourceSharingSpec{
		{Name: "gpu", Scope: grovecorev1alpha1.ResourceSharingScopePerReplica},
	}
	return pcs
}

// The scaling group's table: its claims first (shared, and per group
// replica), then one PodClique per member clique and group replica; the
// PodCliques go with a recreated group replica, the claims stay.
func TestGroupResources(t *testing.T) {
	pcs := sharingPCS()
	pcsg := ScalingGroup(pcs, 0, pcs.Spec.Template.PodCliqueScalingGroupConfigs[0], 1)
	config := resourcesharing.ScalingGroupConfig(pcs, 0, pcsg.Name)
	in := func(j int) GroupInputs {
		return GroupInputs{PodCliqueSet: pcs, ScalingGroup: pcsg, Config: config, Replica: j}
	}
	rows := GroupResources()
	if kinds := []string{rows[0].Kind, rows[1].Kind}; !slices.Equal(kinds, []string{"ResourceClaim", "PodClique"}) {
		t.Fatalf("rows %v: want the claims before the PodCliques", kinds)
	}
	claims, cliques := rows[0], rows[1]
	if got := objectNames(claims.Shared(in(children.NoReplica))); !slices.Equal(got, []string{"llm-0-serve-all-gpu"}) {
		t.Errorf("shared claims %v", got)
	}
	if got := objectNames(claims.Desired(in(2))); !slices.Equal(got, []string{"llm-0-serve-2-gpu"}) {
		t.Errorf("group replica 2's claims %v", got)
	}
	if got := objectNames(claims.Desired(GroupInputs{PodCliqueSet: pcs, ScalingGroup: pcsg, Replica: 2})); len(got) != 0 {
		t.Errorf("a group not in the template has no claims, got %v", got)
	}
	if got := objectNames(cliques.Desired(in(1))); !slices.Equal(got, []string{"llm-0-serve-1-decode"}) {
		t.Errorf("group replica 1's PodCliques %v", got)
	}
	if cliques.Shared != nil || claims.Refresh != nil || cliques.Refresh == nil {
		t.Error("PodCliques are per group replica and follow the template; claims are never updated")
	}
	for _, reason := range []copsev1alpha1.RecreationReason{copsev1alpha1.RecreationReasonGangTermination, copsev1alpha1.RecreationReasonTrainingRestart} {
		if !cliques.DeletedBy(reason) || claims.DeletedBy(reason) {
			t.Errorf("%s: a recreation deletes the PodCliques and keeps the claims", reason)
		}
	}
	// A member clique missing from the template gets no PodClique.
	pcsg.Spec.CliqueNames = append(pcsg.Spec.CliqueNames, "gone")
	if got := objectNames(cliques.Desired(in(0))); !slices.Equal(got, []string{"llm-0-serve-0-decode"}) {
		t.Errorf("PodCliques with a member missing from the template %v", got)
	}
}

// The clique's table: its claims, shared and per pod index.
func TestCliqueResources(t *testing.T) {
	pcs := sharingPCS()
	pclq := &copsev1alpha1.PodClique{}
	pclq.Name = "llm-0-serve-1-decode"
	rows := CliqueResources()
	if len(rows) != 1 || rows[0].Kind != "ResourceClaim" {
		t.Fatalf("rows %+v", rows)
	}
	row := rows[0]
	in := CliqueInputs{PodCliqueSet: pcs, PodClique: pclq, Template: pcs.Spec.Template.Cliques[1], Index: 3}
	got := row.Desired(in)
	if names := objectNames(got); !slices.Equal(names, []string{"llm-0-serve-1-decode-3-gpu"}) {
		t.Errorf("pod index 3's claims %v", names)
	}
	if _, ok := got[0].(*resourcev1.ResourceClaim); !ok {
		t.Errorf("not a ResourceClaim: %T", got[0])
	}
	in.Index = children.NoReplica
	if names := objectNames(row.Shared(in)); len(names) != 0 {
		t.Errorf("no AllReplicas entry, yet shared claims %v", names)
	}
	in.Template = nil
	if names := objectNames(row.Desired(in)); len(names) != 0 {
		t.Errorf("a clique not in the template has no claims, got %v", names)
	}
}
