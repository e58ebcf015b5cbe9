package resourcesharing

import (
	"slices"
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
)

const (
	all = grovecorev1alpha1.ResourceSharingScopeAllReplicas
	per = grovecorev1alpha1.ResourceSharingScopePerReplica
)

func ref(name string, scope grovecorev1alpha1.ResourceSharingScope) grovecorev1alpha1.ResourceSharingSpec {
	return grovecorev1alpha1.ResourceSharingSpec{Name: name, Scope: scope}
}

func claimSpec(class string) resourcev1.ResourceClaimSpec {
	return resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
		Name: "dev", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: class},
	}}}}
}

// hierarchy has every level and filter: the PodCliqueSet's entries
// (broadcast, PerReplica, filtered to a clique, filtered to a group), a
// standalone clique "solo" with entries of both scopes (one external, in
// another namespace), a scaling group "sga" of "member" and "other" with
// entries of both scopes (one filtered to "member"), and "member"'s own.
func hierarchy() *copsev1alpha1.PodCliqueSet {
	pcs := &copsev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "rs"}}
	t := &pcs.Spec.Template
	for _, name := range []string{"everywhere", "replica", "solo-only", "group-only", "solo-pod", "group-wide", "group-replica", "member-only", "member-wide"} {
		t.ResourceClaimTemplates = append(t.ResourceClaimTemplates, grovecorev1alpha1.ResourceClaimTemplateConfig{
			Name: name, TemplateSpec: resourcev1.ResourceClaimTemplateSpec{Spec: claimSpec(name + "-class")},
		})
	}
	t.ResourceSharing = []grovecorev1alpha1.PCSResourceSharingSpec{
		{ResourceSharingSpec: ref("everywhere", all)},
		{ResourceSharingSpec: ref("replica", per)},
		{ResourceSharingSpec: ref("solo-only", per), Filter: &grovecorev1alpha1.PCSResourceSharingFilter{ChildCliqueNames: []string{"solo"}}},
		{ResourceSharingSpec: ref("group-only", all), Filter: &grovecorev1alpha1.PCSResourceSharingFilter{ChildScalingGroupNames: []string{"sga"}}},
	}
	t.Cliques = []*grovecorev1alpha1.PodCliqueTemplateSpec{
		{Name: "solo", ResourceSharing: []grovecorev1alpha1.ResourceSharingSpec{
			ref("solo-pod", per), {Name: "platform-pool", Namespace: "shared", Scope: all},
		}},
		{Name: "member", ResourceSharing: []grovecorev1alpha1.ResourceSharingSpec{ref("member-wide", all)}},
		{Name: "other"},
	}
	t.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{{
		Name: "sga", CliqueNames: []string{"member", "other"},
		ResourceSharing: []grovecorev1alpha1.PCSGResourceSharingSpec{
			{ResourceSharingSpec: ref("group-wide", all)},
			{ResourceSharingSpec: ref("group-replica", per)},
			{ResourceSharingSpec: ref("member-only", all), Filter: &grovecorev1alpha1.PCSGResourceSharingFilter{ChildCliqueNames: []string{"member"}}},
		},
	}}
	return pcs
}

var platformPool = types.NamespacedName{Namespace: "shared", Name: "platform-pool"}

func external() External {
	return External{platformPool: claimSpec("platform-class")}
}

func names(claims []*resourcev1.ResourceClaim) []string {
	out := make([]string, 0, len(claims))
	for _, c := range claims {
		out = append(out, c.Name)
	}
	return out
}

func refNames(refs []Ref) []string {
	out := make([]string, 0, len(refs))
	for _, r := range refs {
		out = append(out, r.Name+"@"+string(r.Level))
	}
	return out
}

func TestResolve(t *testing.T) {
	pcs := hierarchy()
	// An object of an internal template's name exists in the namespace: the
	// internal template shadows it, as in Grove.
	ext := External{
		{Namespace: "ml", Name: "everywhere"}: claimSpec("shadowed"),
		{Namespace: "ml", Name: "outside"}:    claimSpec("outside-class"),
		platformPool:                          claimSpec("platform-class"),
	}
	cases := []struct {
		name      string
		ref       grovecorev1alpha1.ResourceSharingSpec
		wantClass string
		wantOK    bool
	}{
		{"internal template", ref("everywhere", all), "everywhere-class", true},
		{"object in the PodCliqueSet's namespace", ref("outside", per), "outside-class", true},
		{"object in the named namespace", grovecorev1alpha1.ResourceSharingSpec{Name: "platform-pool", Namespace: "shared"}, "platform-class", true},
		{"a namespace never means an internal template", grovecorev1alpha1.ResourceSharingSpec{Name: "replica", Namespace: "shared"}, "", false},
		{"missing object", ref("nowhere", all), "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec, ok := Resolve(pcs, tc.ref, ext)
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tc.wantOK)
			}
			if ok && spec.Devices.Requests[0].Exactly.DeviceClassName != tc.wantClass {
				t.Errorf("class %q, want %q", spec.Devices.Requests[0].Exactly.DeviceClassName, tc.wantClass)
			}
		})
	}
}

func TestExternalTemplates(t *testing.T) {
	pcs := hierarchy()
	pcs.Spec.Template.Cliques[2].ResourceSharing = []grovecorev1alpha1.ResourceSharingSpec{ref("local-object", all), ref("local-object", per)}
	got := ExternalTemplates(pcs)
	want := []types.NamespacedName{{Namespace: "ml", Name: "local-object"}, platformPool}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v (internal templates left out, duplicates once, sorted)", got, want)
	}
}

// scalingGroupClaims are every claim of a scaling group with replicas group
// replicas: the shared ones, then each replica's, as its resource table
// row builds them.
func scalingGroupClaims(pcs *copsev1alpha1.PodCliqueSet, group *grovecorev1alpha1.PodCliqueScalingGroupConfig, name string, replicas int,
	external External) []*resourcev1.ResourceClaim {
	out := ScalingGroupShared(pcs, group, name, external)
	for j := range replicas {
		out = append(out, ScalingGroupReplica(pcs, group, name, j, external)...)
	}
	return out
}

// podCliqueClaims are every claim of a clique with replicas pods: the
// shared ones, then each pod index's.
func podCliqueClaims(pcs *copsev1alpha1.PodCliqueSet, clique *grovecorev1alpha1.PodCliqueTemplateSpec, name string, replicas int,
	external External) []*resourcev1.ResourceClaim {
	out := PodCliqueShared(pcs, clique, name, external)
	for i := range replicas {
		out = append(out, PodCliqueReplica(pcs, clique, name, i, external)...)
	}
	return out
}

func TestClaimsPerLevelAndScope(t *testing.T) {
	pcs := hierarchy()
	group := &pcs.Spec.Template.PodCliqueScalingGroupConfigs[0]
	cases := []struct {
		name   string
		claims []*resourcev1.ResourceClaim
		want   []string
	}{
		{"PodCliqueSet AllReplicas: one for the set", PodCliqueSetShared(pcs, nil), []string{"rs-all-everywhere", "rs-all-group-only"}},
		{"PodCliqueSet PerReplica: one per set replica", PodCliqueSetReplica(pcs, 1, nil), []string{"rs-1-replica", "rs-1-solo-only"}},
		{"scaling group: one per group, then one per group replica", scalingGroupClaims(pcs, group, "rs-0-sga", 2, nil),
			[]string{"rs-0-sga-all-group-wide", "rs-0-sga-all-member-only", "rs-0-sga-0-group-replica", "rs-0-sga-1-group-replica"}},
		{"scaling group scaled to zero keeps its AllReplicas claims", scalingGroupClaims(pcs, group, "rs-0-sga", 0, nil),
			[]string{"rs-0-sga-all-group-wide", "rs-0-sga-all-member-only"}},
		{"clique: one per PodClique, then one per pod", podCliqueClaims(pcs, pcs.Spec.Template.Cliques[0], "rs-0-solo", 2, external()),
			[]string{"rs-0-solo-all-platform-pool", "rs-0-solo-0-solo-pod", "rs-0-solo-1-solo-pod"}},
		{"an unresolved template has no claim yet", podCliqueClaims(pcs, pcs.Spec.Template.Cliques[0], "rs-0-solo", 1, nil),
			[]string{"rs-0-solo-0-solo-pod"}},
		{"a clique without entries has none", podCliqueClaims(pcs, pcs.Spec.Template.Cliques[2], "rs-0-sga-0-other", 3, nil), []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := names(tc.claims); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestClaimLabelsAndSpec(t *testing.T) {
	pcs := hierarchy()
	group := &pcs.Spec.Template.PodCliqueScalingGroupConfigs[0]
	base := map[string]string{labels.ManagedByKey: labels.ManagedByValue, labels.PartOfKey: "rs", labels.ComponentKey: "resource-claim"}
	with := func(extra map[string]string) map[string]string { return labels.Merge(base, extra) }
	byName := map[string]*resourcev1.ResourceClaim{}
	for _, list := range [][]*resourcev1.ResourceClaim{
		PodCliqueSetShared(pcs, nil), PodCliqueSetReplica(pcs, 1, nil),
		scalingGroupClaims(pcs, group, "rs-0-sga", 1, nil), podCliqueClaims(pcs, pcs.Spec.Template.Cliques[0], "rs-0-solo", 1, external()),
	} {
		for _, c := range list {
			byName[c.Name] = c
		}
	}
	cases := map[string]map[string]string{
		"rs-all-everywhere":           base,
		"rs-1-replica":                with(map[string]string{labels.ReplicaKey: "1"}),
		"rs-0-sga-all-group-wide":     with(map[string]string{labels.ScalingGroupKey: "rs-0-sga"}),
		"rs-0-sga-0-group-replica":    with(map[string]string{labels.ScalingGroupKey: "rs-0-sga", labels.ScalingGroupReplicaKey: "0"}),
		"rs-0-solo-all-platform-pool": with(map[string]string{labels.PodCliqueKey: "rs-0-solo"}),
		"rs-0-solo-0-solo-pod":        with(map[string]string{labels.PodCliqueKey: "rs-0-solo", labels.PodIndexKey: "0"}),
	}
	for name, want := range cases {
		c := byName[name]
		if c == nil {
			t.Errorf("no claim %s", name)
			continue
		}
		if !mapsEqual(c.Labels, want) {
			t.Errorf("%s labels %v, want %v", name, c.Labels, want)
		}
		if c.Namespace != "ml" {
			t.Errorf("%s in namespace %q", name, c.Namespace)
		}
	}
	if got := byName["rs-0-solo-all-platform-pool"].Spec.Devices.Requests[0].Exactly.DeviceClassName; got != "platform-class" {
		t.Errorf("external template's spec not used: class %q", got)
	}
	// The claim's spec is a copy: changing it leaves the template alone.
	byName["rs-all-everywhere"].Spec.Devices.Requests[0].Name = "changed"
	if pcs.Spec.Template.ResourceClaimTemplates[0].TemplateSpec.Spec.Devices.Requests[0].Name != "dev" {
		t.Error("the claim shares its spec with the template")
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestPodClaims(t *testing.T) {
	pcs := hierarchy()
	cases := []struct {
		name  string
		place PodPlace
		want  []string
	}{
		{
			name:  "standalone clique: the set's broadcast and its own filter, not the group's, then its own",
			place: PodPlace{Replica: 1, Clique: "solo", PodClique: "rs-1-solo", Index: 2},
			want: []string{"rs-all-everywhere@PodCliqueSet", "rs-1-replica@PodCliqueSet", "rs-1-solo-only@PodCliqueSet",
				"rs-1-solo-all-platform-pool@PodClique", "rs-1-solo-2-solo-pod@PodClique"},
		},
		{
			name:  "grouped clique in the filter of both levels",
			place: PodPlace{Replica: 0, Clique: "member", PodClique: "rs-0-sga-1-member", ScalingGroup: "rs-0-sga", GroupReplica: 1, Index: 0},
			want: []string{"rs-all-everywhere@PodCliqueSet", "rs-all-group-only@PodCliqueSet", "rs-0-replica@PodCliqueSet",
				"rs-0-sga-all-group-wide@PodCliqueScalingGroup", "rs-0-sga-all-member-only@PodCliqueScalingGroup",
				"rs-0-sga-1-group-replica@PodCliqueScalingGroup", "rs-0-sga-1-member-all-member-wide@PodClique"},
		},
		{
			name:  "grouped clique outside the group's filter",
			place: PodPlace{Replica: 0, Clique: "other", PodClique: "rs-0-sga-0-other", ScalingGroup: "rs-0-sga", GroupReplica: 0},
			want: []string{"rs-all-everywhere@PodCliqueSet", "rs-all-group-only@PodCliqueSet", "rs-0-replica@PodCliqueSet",
				"rs-0-sga-all-group-wide@PodCliqueScalingGroup", "rs-0-sga-0-group-replica@PodCliqueScalingGroup"},
		},
		{
			name:  "a scaling group of another replica's name is not this one's",
			place: PodPlace{Replica: 1, Clique: "other", PodClique: "rs-1-sga-0-other", ScalingGroup: "rs-0-sga"},
			want:  []string{"rs-all-everywhere@PodCliqueSet", "rs-1-replica@PodCliqueSet"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := refNames(PodClaims(pcs, tc.place)); !slices.Equal(got, tc.want) {
				t.Errorf("got  %v\nwant %v", got, tc.want)
			}
		})
	}
	if got := PodClaims(&copsev1alpha1.PodCliqueSet{}, PodPlace{Clique: "x"}); len(got) != 0 {
		t.Errorf("no resourceSharing, got %v", got)
	}
}

func TestAddToPod(t *testing.T) {
	spec := corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init"}},
		Containers: []corev1.Container{
			{Name: "main", Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "mnnvl-claim"}}}},
			{Name: "sidecar"},
		},
		ResourceClaims: []corev1.PodResourceClaim{{Name: "mnnvl-claim"}},
	}
	refs := []Ref{{Name: "rs-all-a"}, {Name: "rs-0-b"}}
	AddToPod(&spec, refs)
	AddToPod(&spec, refs) // a second time adds nothing
	if len(spec.ResourceClaims) != 3 {
		t.Fatalf("pod claims %v", spec.ResourceClaims)
	}
	for i, name := range []string{"rs-all-a", "rs-0-b"} {
		c := spec.ResourceClaims[i+1]
		if c.Name != name || c.ResourceClaimName == nil || *c.ResourceClaimName != name || c.ResourceClaimTemplateName != nil {
			t.Errorf("pod claim %d = %+v, want %s by resourceClaimName", i+1, c, name)
		}
	}
	for _, c := range append(spec.InitContainers, spec.Containers...) {
		var got []string
		for _, rc := range c.Resources.Claims {
			got = append(got, rc.Name)
		}
		want := []string{"rs-all-a", "rs-0-b"}
		if c.Name == "main" {
			want = append([]string{"mnnvl-claim"}, want...)
		}
		if !slices.Equal(got, want) {
			t.Errorf("container %s claims %v, want %v", c.Name, got, want)
		}
	}
}
