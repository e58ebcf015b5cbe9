package kueue

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/podcount"
	"github.com/copse-dev/copse/internal/topology"
)

// The depth of a packing scope: a deeper scope's domain lies inside its
// parent's (topology.Resolve refuses a child broader than its parent), so of
// two scopes over the same pods the deeper one's key is the one to keep.
const (
	replicaDepth = iota
	groupDepth
	cliqueDepth
)

// podRange is a run of consecutive indices in a clique's pod set (see
// PodSetIndex), [start, end).
type podRange struct{ start, end int }

func (r podRange) size() int { return r.end - r.start }

// packedScope is one instance of a required packing scope (a replica's
// gang, a scaling-group replica, a PodClique): the pods of each clique it
// holds must share one domain of key.
type packedScope struct {
	key   string
	depth int
	// path is the topologyConstraint that asks for it.
	path *field.Path
	// kind names the scope for every instance alike: "replica",
	// "scaling group <name>", "clique <name>".
	kind string
	// unit is what one instance is, for messages: "replica",
	// "scaling-group replica", "PodClique".
	unit string
	// pods holds, per clique, the run of its pod set in the scope.
	pods map[string]podRange
}

func (s packedScope) cliques() []string {
	out := make([]string, 0, len(s.pods))
	for c := range s.pods {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// podSetShape is how a clique's pod set is laid out: replicas x
// groupReplicas PodCliques of pods pods each.
type podSetShape struct {
	replicas, groupReplicas, pods int
	prelude                       bool
	group                         *grovecorev1alpha1.PodCliqueScalingGroupConfig
}

func (s podSetShape) count() int { return s.replicas * s.groupReplicas * s.pods }

// run is the pod set's run of PodCliques replica r, group replicas
// [from, to).
func (s podSetShape) run(r, from, to int) podRange {
	base := (r*s.groupReplicas + from) * s.pods
	return podRange{base, base + (to-from)*s.pods}
}

var (
	templateConstraintPath = field.NewPath("spec", "template", "topologyConstraint")
	cliquesPath            = field.NewPath("spec", "template", "cliques")
	groupsPath             = field.NewPath("spec", "template", "podCliqueScalingGroups")
)

// TopologyRequests turns a PodCliqueSet's packing into the topology requests
// of its Workload's pod sets (one pod set per clique, by clique name; a
// clique without packing has none). packing is what topology.Lookup
// resolved for pcs.
//
// A required scope becomes Kueue's requirement on the pods it holds:
//   - one instance over a whole pod set: topologyRequest.required;
//   - one instance per replica or scaling-group replica, each over a run of
//     the pod set of one size: podSetSliceRequiredTopology and
//     podSetSliceSize, with PodSetIndexLabel as podIndexLabel;
//   - one instance over two pod sets, one of them a single pod: required on
//     both and a shared podSetGroupName (the only way Kueue packs pod sets
//     together).
//
// A clique with no required scope gets its narrowest preferred key as
// topologyRequest.preferred.
//
// Kueue's assignment pins each pod to a domain, and the kube-scheduler then
// holds the pod to it, so a requirement Kueue cannot express is not left
// out: it is an error naming the topologyConstraint, and the clique involved
// gets no request. The caller must not queue a Workload while there are
// errors; its pods would wait for a placement no assignment can give.
func TopologyRequests(pcs *copsev1alpha1.PodCliqueSet, packing topology.Resolved) (map[string]*kueue.PodSetTopologyRequest, field.ErrorList) {
	shapes := podSetShapes(pcs)
	scopes := requiredScopes(pcs, shapes, packing)

	var errs field.ErrorList
	failed := map[string]bool{}
	fail := func(err *field.Error, cliques ...string) {
		if !slices.ContainsFunc(errs, func(e *field.Error) bool { return e.Error() == err.Error() }) {
			errs = append(errs, err)
		}
		for _, c := range cliques {
			failed[c] = true
		}
	}

	// Scopes over one clique's pods become that clique's runs; scopes over
	// several cliques must be a pair Kueue can group.
	runs := map[string][]packedScope{}
	multi := map[string][]packedScope{}
	var multiKinds []string
	for _, s := range scopes {
		if len(s.pods) == 1 {
			c := s.cliques()[0]
			runs[c] = append(runs[c], s)
			continue
		}
		if _, seen := multi[s.kind]; !seen {
			multiKinds = append(multiKinds, s.kind)
		}
		multi[s.kind] = append(multi[s.kind], s)
	}
	pairs := map[string]packedScope{} // by clique
	for _, kind := range multiKinds {
		instances := multi[kind]
		pair, err := kueuePair(instances, shapes)
		if err != nil {
			fail(err, instances[0].cliques()...)
			continue
		}
		for _, c := range pair.cliques() {
			if other, ok := pairs[c]; ok && !sameCliques(other, pair) {
				fail(field.Forbidden(pair.path, fmt.Sprintf(
					"Kueue cannot express this packing: clique %s would be paired for packing with the cliques of both %s and %s, and a Kueue pod set belongs to one podSetGroupName",
					c, other.kind, pair.kind)), pair.cliques()...)
				continue
			}
			// Of two pairings of the same cliques, the deeper scope's key holds both.
			if other, ok := pairs[c]; !ok || pair.depth > other.depth {
				pairs[c] = pair
			}
		}
	}

	out := map[string]*kueue.PodSetTopologyRequest{}
	for _, clique := range pcs.Spec.Template.Cliques {
		if clique == nil {
			continue
		}
		name := clique.Name
		shape := shapes[name]
		whole, layers, err := cliqueRuns(name, shape, runs[name])
		if err != nil {
			fail(err, name)
		}
		req := &kueue.PodSetTopologyRequest{}
		if pair, paired := pairs[name]; paired {
			if len(layers) > 0 || (whole != nil && whole.key != pair.key) {
				narrower := whole
				if narrower == nil {
					narrower = &layers[0]
				}
				fail(field.Forbidden(narrower.path, fmt.Sprintf(
					"Kueue cannot express this packing: clique %s is packed with clique %s in one %s domain (podSetGroupName), and a grouped pod set takes no narrower requirement (%s)",
					name, strings.Join(slices.DeleteFunc(pair.cliques(), func(c string) bool { return c == name }), ", "), pair.key, narrower.key)), name)
			}
			req.Required = ptr.To(pair.key)
			req.PodSetGroupName = ptr.To(podSetGroupName(pair))
		} else {
			if whole != nil {
				req.Required = ptr.To(whole.key)
			}
			switch {
			case len(layers) == 1:
				req.PodSetSliceRequiredTopology = ptr.To(layers[0].key)
				req.PodSetSliceSize = ptr.To(int32(layers[0].pods[name].size()))
				req.PodIndexLabel = ptr.To(PodSetIndexLabel)
			case len(layers) > 1:
				for _, l := range layers {
					req.PodsetSliceRequiredTopologyConstraints = append(req.PodsetSliceRequiredTopologyConstraints,
						kueue.PodsetSliceRequiredTopologyConstraint{Topology: l.key, Size: int32(l.pods[name].size())})
				}
				req.PodIndexLabel = ptr.To(PodSetIndexLabel)
			}
			if whole == nil && len(layers) == 0 {
				if key := preferredKey(name, shape, packing); key != "" {
					req.Preferred = ptr.To(key)
				}
			}
		}
		if failed[name] || (req.Required == nil && req.Preferred == nil && req.PodSetSliceRequiredTopology == nil && len(req.PodsetSliceRequiredTopologyConstraints) == 0) {
			continue
		}
		out[name] = req
	}
	for name := range failed {
		delete(out, name)
	}
	return out, errs
}

// podSetShapes lays out each clique's pod set from the template, as the
// Workload counts it (PodSets): an autoscaled clique or scaling group at its
// maxReplicas.
func podSetShapes(pcs *copsev1alpha1.PodCliqueSet) map[string]podSetShape {
	prelude := map[string]bool{}
	for _, c := range blueprint.PreludeCliques(pcs) {
		prelude[c] = true
	}
	out := map[string]podSetShape{}
	for _, c := range pcs.Spec.Template.Cliques {
		if c == nil {
			continue
		}
		pods, _ := podcount.Clique(&c.Spec, nil)
		shape := podSetShape{replicas: int(max(pcs.Spec.Replicas, 0)), groupReplicas: 1, pods: int(pods)}
		if group := scalingGroupOf(pcs, c.Name); group != nil {
			shape.group = group
			shape.groupReplicas = int(podcount.ScalingGroupReplicas(group))
		} else {
			shape.prelude = prelude[c.Name]
		}
		out[c.Name] = shape
	}
	return out
}

func scalingGroupOf(pcs *copsev1alpha1.PodCliqueSet, clique string) *grovecorev1alpha1.PodCliqueScalingGroupConfig {
	for i, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		if slices.Contains(g.CliqueNames, clique) {
			return &pcs.Spec.Template.PodCliqueScalingGroupConfigs[i]
		}
	}
	return nil
}

// requiredScopes lists every instance of every required scope, as copse's
// gangs and pod affinity apply them (blueprint.GangTopologyKey,
// blueprint.TopologyAffinity): per replica, at the template's key, its base
// gang (standalone cliques but the prelude's, and the scaling-group replicas
// below minAvailable) and the scaled gangs held in its domain (the replicas
// at or above it: blueprint.HeldToBaseGang), so every scaling-group replica;
// per scaling-group replica, the group's key; per PodClique, the clique's
// key. A scaled gang keyed at the template's key (a group without a
// constraint) lies in the replica's domain, so needs no scope of its own.
func requiredScopes(pcs *copsev1alpha1.PodCliqueSet, shapes map[string]podSetShape, packing topology.Resolved) []packedScope {
	var out []packedScope
	add := func(s packedScope) {
		for c, r := range s.pods {
			if r.size() == 0 {
				delete(s.pods, c)
			}
		}
		if len(s.pods) > 0 {
			out = append(out, s)
		}
	}
	replicaKey := packing.Replica.RequiredKey
	groups := pcs.Spec.Template.PodCliqueScalingGroupConfigs
	for r := range int(pcs.Spec.Replicas) {
		if replicaKey != "" {
			base := packedScope{key: replicaKey, depth: replicaDepth, path: templateConstraintPath, kind: "replica", unit: "replica", pods: map[string]podRange{}}
			for _, c := range pcs.StandaloneCliques() {
				if shape := shapes[c.Name]; !shape.prelude {
					base.pods[c.Name] = shape.run(r, 0, 1)
				}
			}
			for gi := range groups {
				g := &groups[gi]
				groupReplicas := int(podcount.ScalingGroupReplicas(g))
				for _, c := range g.CliqueNames {
					if shape, ok := shapes[c]; ok && groupReplicas > 0 {
						base.pods[c] = shape.run(r, 0, groupReplicas)
					}
				}
			}
			add(base)
		}
		for gi := range groups {
			g := &groups[gi]
			groupKey := packing.ScalingGroups[g.Name].RequiredKey
			if groupKey == "" {
				continue
			}
			for j := range int(podcount.ScalingGroupReplicas(g)) {
				s := packedScope{key: groupKey, depth: groupDepth, path: groupsPath.Index(gi).Child("topologyConstraint"),
					kind: "scaling group " + g.Name, unit: "scaling-group replica", pods: map[string]podRange{}}
				for _, c := range g.CliqueNames {
					if shape, ok := shapes[c]; ok {
						s.pods[c] = shape.run(r, j, j+1)
					}
				}
				add(s)
			}
		}
	}
	for ci, c := range pcs.Spec.Template.Cliques {
		if c == nil {
			continue
		}
		key := packing.Cliques[c.Name].RequiredKey
		if key == "" {
			continue
		}
		shape := shapes[c.Name]
		for r := range shape.replicas {
			for j := range shape.groupReplicas {
				add(packedScope{key: key, depth: cliqueDepth, path: cliquesPath.Index(ci).Child("topologyConstraint"),
					kind: "clique " + c.Name, unit: "PodClique", pods: map[string]podRange{c.Name: shape.run(r, j, j+1)}})
			}
		}
	}
	return out
}

// kueuePair checks that the instances of one scope over several cliques
// are what Kueue's podSetGroupName packs together: a single instance over
// two whole pod sets, one of them a single pod (a leader and its workers).
func kueuePair(instances []packedScope, shapes map[string]podSetShape) (packedScope, *field.Error) {
	s := instances[0]
	cliques := s.cliques()
	refuse := func(why string) *field.Error {
		return field.Forbidden(s.path, fmt.Sprintf(
			"Kueue cannot express this packing: each %s's pods of cliques %s share one %s domain, and %s",
			s.unit, strings.Join(cliques, ", "), s.key, why))
	}
	const pairRule = "Kueue packs pod sets together only in pairs of whole pod sets where one is a single pod (podSetGroupName)"
	switch {
	case len(instances) > 1:
		return s, refuse(fmt.Sprintf("there are %d such groups of pods: %s", len(instances), pairRule))
	case len(cliques) != 2:
		return s, refuse(fmt.Sprintf("that is %d pod sets: %s", len(cliques), pairRule))
	}
	smallest := len(s.pods)
	for _, c := range cliques {
		shape := shapes[c]
		if s.pods[c] != (podRange{0, shape.count()}) {
			return s, refuse(fmt.Sprintf("they are part of clique %s's pods: %s", c, pairRule))
		}
		smallest = min(smallest, shape.count())
	}
	if smallest != 1 {
		return s, refuse("neither pod set is a single pod: " + pairRule)
	}
	return s, nil
}

func sameCliques(a, b packedScope) bool { return slices.Equal(a.cliques(), b.cliques()) }

// podSetGroupName names a pair after its scope; the prefix keeps it from
// being a number, which Kueue uses for pod sets outside any group.
func podSetGroupName(pair packedScope) string {
	return "copse-" + strings.ReplaceAll(pair.kind, " ", "-")
}

// maxSliceLayers is the most levels of slices a Kueue pod set takes
// (spec.podSets[].topologyRequest.podsetSliceRequiredTopologyConstraints,
// Kueue v0.19's multi-layer topology-aware scheduling).
const maxSliceLayers = 3

// cliqueRuns reduces the scopes over one clique's pods to what a Kueue pod
// set takes: whole, one requirement over the whole pod set (nil for none),
// and layers, from the broadest to the narrowest, each a requirement per run
// of one size covering the pod set in order (Kueue's slices; more than one
// layer is its multi-layer form). A scope over a single pod always holds
// and is dropped; of scopes over the same run the deepest is kept; a layer
// at the key of a broader one (or of whole) holds already and is dropped.
// Each layer's runs hold whole runs of the next, as Kueue requires: a
// narrower scope's runs nest in a broader one's, and a child's key is never
// broader than its parent's (topology.Resolve), so each layer is at a finer
// level than the one before.
func cliqueRuns(clique string, shape podSetShape, scopes []packedScope) (whole *packedScope, layers []packedScope, err *field.Error) {
	byRun := map[podRange]packedScope{}
	for _, s := range scopes {
		r := s.pods[clique]
		if r.size() <= 1 {
			continue
		}
		if kept, ok := byRun[r]; !ok || s.depth > kept.depth {
			byRun[r] = s
		}
	}
	all := podRange{0, shape.count()}
	if s, ok := byRun[all]; ok {
		whole = &s
		delete(byRun, all)
	}
	if len(byRun) == 0 {
		return whole, nil, nil
	}

	// Runs of one size at one key form a layer; each must tile the pod
	// set, in order, from its first pod.
	type layerKey struct {
		key  string
		size int
	}
	byLayer := map[layerKey][]packedScope{}
	for _, s := range byRun {
		k := layerKey{s.key, s.pods[clique].size()}
		byLayer[k] = append(byLayer[k], s)
	}
	expressible := true
	for _, parts := range byLayer {
		slices.SortFunc(parts, func(a, b packedScope) int { return a.pods[clique].start - b.pods[clique].start })
		covered := 0
		for _, s := range parts {
			if s.pods[clique].start != covered {
				break
			}
			covered = s.pods[clique].end
		}
		if covered != shape.count() {
			expressible = false
			continue
		}
		layers = append(layers, parts[0])
	}
	// Broadest first; of layers of one size, the shallower scope first
	// (byLayer is a map: the order must not depend on it).
	slices.SortFunc(layers, func(a, b packedScope) int {
		return cmp.Or(b.pods[clique].size()-a.pods[clique].size(), a.depth-b.depth, strings.Compare(a.key, b.key))
	})
	layers = withoutImpliedLayers(whole, layers)
	for i := 1; i < len(layers); i++ {
		outer, inner := layers[i-1].pods[clique].size(), layers[i].pods[clique].size()
		if outer == inner || outer%inner != 0 {
			expressible = false
		}
	}
	if expressible && len(layers) <= maxSliceLayers {
		return whole, layers, nil
	}

	parts := slices.Collect(maps.Values(byRun))
	slices.SortFunc(parts, func(a, b packedScope) int {
		return cmp.Or(a.pods[clique].start-b.pods[clique].start, a.depth-b.depth)
	})
	shallowest := slices.MinFunc(parts, func(a, b packedScope) int { return a.depth - b.depth })
	var described []string
	seen := map[string]bool{}
	for _, s := range parts {
		layer := fmt.Sprintf("%d pods in one %s domain (each %s)", s.pods[clique].size(), s.key, s.unit)
		if !seen[layer] {
			seen[layer] = true
			described = append(described, layer)
		}
	}
	why := fmt.Sprintf("a Kueue pod set is divided into at most %d levels of slices, each level's slices of one size covering the pod set in order and holding whole slices of the next", maxSliceLayers)
	return whole, nil, field.Forbidden(shallowest.path, fmt.Sprintf(
		"Kueue cannot express this packing of clique %s's %d pods: it asks for runs of %s; %s",
		clique, shape.count(), strings.Join(described, " and "), why))
}

// withoutImpliedLayers drops, of layers sorted broadest first, each at the
// key of whole or of a broader layer: runs inside one domain of that key
// are in one already.
func withoutImpliedLayers(whole *packedScope, layers []packedScope) []packedScope {
	keys := map[string]bool{}
	if whole != nil {
		keys[whole.key] = true
	}
	var out []packedScope
	for _, l := range layers {
		if keys[l.key] {
			continue
		}
		keys[l.key] = true
		out = append(out, l)
	}
	return out
}

// preferredKey is the narrowest preferred key over the clique's pods: its
// own, its scaling group's, or the replica's (the prelude excepted, as in
// blueprint.TopologyAffinity).
func preferredKey(clique string, shape podSetShape, packing topology.Resolved) string {
	if key := packing.Cliques[clique].PreferredKey; key != "" {
		return key
	}
	if shape.group != nil {
		if key := packing.ScalingGroups[shape.group.Name].PreferredKey; key != "" {
			return key
		}
	}
	if shape.prelude {
		return ""
	}
	return packing.Replica.PreferredKey
}
