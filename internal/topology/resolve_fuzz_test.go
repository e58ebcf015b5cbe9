package topology

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/fuzzinput"
)

// fuzzDomains are the domains a generated constraint names: the levels a
// generated binding may have (the middle ones twice as often), "gpu",
// which it never has, and none.
var fuzzDomains = []grovecorev1alpha1.TopologyDomain{"", "zone", "block", "rack", "host", "block", "rack", "gpu"}

// fuzzConstraint is nil half the time; else a constraint naming
// binding "fleet", "other" or none, by pack, packDomain or both.
func fuzzConstraint(s *fuzzinput.Source) *grovecorev1alpha1.TopologyConstraint {
	if s.Bool() {
		return nil
	}
	c := &grovecorev1alpha1.TopologyConstraint{TopologyName: fuzzinput.Pick(s, "", "", "fleet", "other")}
	form := s.Intn(3)
	if form != 1 {
		c.PackDomain = fuzzinput.Pick(s, fuzzDomains...)
	}
	if form != 0 {
		c.Pack = &grovecorev1alpha1.TopologyPackConstraint{
			RequiredDomain: fuzzinput.Pick(s, fuzzDomains...), PreferredDomain: fuzzinput.Pick(s, fuzzDomains...)}
	}
	return c
}

// fuzzPodCliqueSet is a template of up to four cliques with distinct
// names (a nil one now and then), up to two scaling groups, each clique in
// at most one of them (as the webhook admits), and constraints anywhere.
func fuzzPodCliqueSet(s *fuzzinput.Source) *copsev1alpha1.PodCliqueSet {
	pcs := &copsev1alpha1.PodCliqueSet{}
	pcs.Name = "llm"
	t := &pcs.Spec.Template
	t.TopologyConstraint = fuzzConstraint(s)
	groups := s.Intn(3)
	for g := range groups {
		t.PodCliqueScalingGroupConfigs = append(t.PodCliqueScalingGroupConfigs, grovecorev1alpha1.PodCliqueScalingGroupConfig{
			Name: []string{"decode", "prefill"}[g], TopologyConstraint: fuzzConstraint(s)})
	}
	for _, name := range []string{"router", "leader", "worker", "draft"}[:s.Intn(5)] {
		if s.Maybe(8) {
			t.Cliques = append(t.Cliques, nil)
			continue
		}
		t.Cliques = append(t.Cliques, &grovecorev1alpha1.PodCliqueTemplateSpec{Name: name, TopologyConstraint: fuzzConstraint(s)})
		if g := s.Intn(groups + 1); g < groups {
			t.PodCliqueScalingGroupConfigs[g].CliqueNames = append(t.PodCliqueScalingGroupConfigs[g].CliqueNames, name)
		}
	}
	return pcs
}

// fuzzBinding has a subset of zone, block, rack and host, broadest first
// or, now and then, reversed.
func fuzzBinding(s *fuzzinput.Source) *copsev1alpha1.ClusterTopologyBinding {
	b := &copsev1alpha1.ClusterTopologyBinding{}
	for _, d := range []grovecorev1alpha1.TopologyDomain{"zone", "block", "rack", "host"} {
		if s.Bool() {
			b.Spec.Levels = append(b.Spec.Levels, grovecorev1alpha1.TopologyLevel{Domain: d, Key: "example.com/" + string(d)})
		}
	}
	if s.Maybe(4) {
		slices.Reverse(b.Spec.Levels)
	}
	return b
}

// fuzzScope is one place a constraint may be, as the invariants see it.
type fuzzScope struct {
	path   string
	c      *grovecorev1alpha1.TopologyConstraint
	parent *fuzzScope
	pack   Pack
}

// fuzzScopes lists pcs's scopes, parents first, each with its packing in
// out.
func fuzzScopes(pcs *copsev1alpha1.PodCliqueSet, out Resolved) []*fuzzScope {
	t := &pcs.Spec.Template
	root := &fuzzScope{path: "spec.template.topologyConstraint", c: t.TopologyConstraint, pack: out.Replica}
	all := []*fuzzScope{root}
	groupOf := map[string]*fuzzScope{}
	for i, g := range t.PodCliqueScalingGroupConfigs {
		s := &fuzzScope{path: "spec.template.podCliqueScalingGroups[" + itoa(i) + "].topologyConstraint", c: g.TopologyConstraint,
			parent: root, pack: out.ScalingGroups[g.Name]}
		all = append(all, s)
		for _, name := range g.CliqueNames {
			groupOf[name] = s
		}
	}
	for i, c := range t.Cliques {
		if c == nil {
			continue
		}
		parent := root
		if g := groupOf[c.Name]; g != nil {
			parent = g
		}
		all = append(all, &fuzzScope{path: "spec.template.cliques[" + itoa(i) + "].topologyConstraint", c: c.TopologyConstraint,
			parent: parent, pack: out.Cliques[c.Name]})
	}
	return all
}

func itoa(i int) string { return string(rune('0' + i)) }

var problemReasons = []string{copsev1alpha1.ReasonClusterTopologyNotFound, copsev1alpha1.ReasonTopologyNameMissing,
	copsev1alpha1.ReasonClusterTopologyLevelsUnavailable}

// FuzzResolve checks Resolve's promises on any constraints and binding
// levels:
//
//   - the inputs are not changed, and the same inputs give the same result;
//   - TopologyName is the first name set, broadest scope first;
//   - without that name, or without the binding, nothing is packed, and
//     every constraint has a problem;
//   - otherwise every scope is in the result, and a scope's keys are the
//     binding's keys of the domains its own constraint names: never a key
//     of a level the binding lacks, nor one a scope without a constraint
//     would get;
//   - a packed scope's preferred domain is its required one or narrower,
//     and its required domain no broader than that of the nearest packed
//     scope above it;
//   - a constraint naming a domain yet left out has a problem at its path,
//     and one that names only domains of the binding in that order is never
//     left out;
//   - a constraint naming another binding than the first has a problem;
//   - every problem has a known reason and names a field of the template.
func FuzzResolve(f *testing.F) {
	// The shapes of TestResolve.
	for _, seed := range []struct {
		pcs     *copsev1alpha1.PodCliqueSet
		binding *copsev1alpha1.ClusterTopologyBinding
	}{
		{pcs(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint = pack("fleet", "block", "rack")
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = pack("", "rack", "")
			p.Spec.Template.Cliques[2].TopologyConstraint = pack("", "", "host")
		}), binding()},
		{pcs(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint = &grovecorev1alpha1.TopologyConstraint{TopologyName: "fleet", PackDomain: "rack"}
		}), binding()},
		{pcs(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].TopologyConstraint = pack("nowhere", "rack", "")
		}), nil},
		{pcs(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint = pack("fleet", "rack", "")
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = pack("", "zone", "")
			p.Spec.Template.Cliques[0].TopologyConstraint = pack("", "gpu", "")
		}), binding()},
		// A child broader than its grandparent, its parent only preferring.
		{pcs(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint = pack("fleet", "rack", "")
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = pack("", "", "host")
			p.Spec.Template.Cliques[1].TopologyConstraint = pack("", "block", "")
		}), binding()},
		// A preferred domain one level broader than the required one.
		{pcs(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].TopologyConstraint = pack("fleet", "rack", "block")
		}), binding()},
	} {
		f.Add(fuzzinput.JSON(seed.pcs), fuzzinput.JSON(seed.binding), seed.binding != nil)
	}
	// Generated ones: a packed template, a scaling group and cliques in it.
	f.Add([]byte{0, 1, 2, 1, 3, 2, 0, 1, 2, 3, 0, 4, 0, 1, 1, 3, 2, 4, 1, 0, 0}, []byte{1, 1, 1, 1, 0}, true)
	f.Add([]byte{0, 0, 2, 0, 3, 1, 0, 3, 3, 4, 0, 0, 1, 0, 2, 0, 1, 2, 2, 1, 0, 0, 1}, []byte{1, 0, 1, 1, 0}, true)
	f.Fuzz(func(t *testing.T, pcsData, bindingData []byte, hasBinding bool) {
		pcs := fuzzinput.Object(pcsData, fuzzPodCliqueSet)
		if !admissible(pcs) {
			return
		}
		var b *copsev1alpha1.ClusterTopologyBinding
		name := firstName(pcs)
		if hasBinding {
			b = fuzzinput.Object(bindingData, fuzzBinding)
			b.Name = name // Resolve is given the binding its PodCliqueSet names.
			if slices.ContainsFunc(b.Spec.Levels, func(l grovecorev1alpha1.TopologyLevel) bool { return l.Key == "" }) {
				return // The API server requires every level's key.
			}
		}
		pcsBefore, bindingBefore := pcs.DeepCopy(), b.DeepCopy()

		out, problems := Resolve(pcs, b)

		if !reflect.DeepEqual(pcs, pcsBefore) || !reflect.DeepEqual(b, bindingBefore) {
			t.Fatal("Resolve changed its inputs")
		}
		if again, againProblems := Resolve(pcs, b); !reflect.DeepEqual(again, out) || !reflect.DeepEqual(againProblems, problems) {
			t.Fatalf("the same inputs gave %+v, %v, then %+v, %v", out, problems, again, againProblems)
		}
		if out.TopologyName != name {
			t.Fatalf("TopologyName %q, want %q", out.TopologyName, name)
		}
		for _, p := range problems {
			if !slices.Contains(problemReasons, p.Reason) || p.Err == nil || !strings.HasPrefix(p.Err.Field, "spec.template.") {
				t.Fatalf("problem %+v: unknown reason, or no field of the template", p)
			}
		}
		scopes := fuzzScopes(pcs, out)
		constrained := slices.ContainsFunc(scopes, func(s *fuzzScope) bool { return s.c != nil })
		hasProblemAt := func(path string) bool {
			return slices.ContainsFunc(problems, func(p Problem) bool { return strings.HasPrefix(p.Err.Field, path) })
		}
		if name == "" || b == nil {
			if !out.IsZero() || constrained != (len(problems) > 0) {
				t.Fatalf("without a binding (name %q): packing %+v, problems %v", name, out, problems)
			}
			return
		}
		if len(out.ScalingGroups) != len(pcs.Spec.Template.PodCliqueScalingGroupConfigs) || len(out.Cliques) != len(scopes)-1-len(out.ScalingGroups) {
			t.Fatalf("%d scaling groups and %d cliques in the result, want every scope: %+v", len(out.ScalingGroups), len(out.Cliques), out)
		}

		levelOf := func(d grovecorev1alpha1.TopologyDomain) int {
			return slices.IndexFunc(b.Spec.Levels, func(l grovecorev1alpha1.TopologyLevel) bool { return l.Domain == d })
		}
		keyOf := func(d grovecorev1alpha1.TopologyDomain) string {
			if i := levelOf(d); d != "" && i >= 0 {
				return b.Spec.Levels[i].Key
			}
			return ""
		}
		// requiredLevel is the level of the nearest packed scope above s, -1
		// for none.
		requiredLevel := func(s *fuzzScope) int {
			for p := s.parent; p != nil; p = p.parent {
				if p.pack.RequiredKey != "" {
					required, _ := Domains(p.c)
					return levelOf(required)
				}
			}
			return -1
		}
		for _, s := range scopes {
			if s.c == nil {
				if !s.pack.IsZero() {
					t.Fatalf("%s: no constraint, yet packed %+v", s.path, s.pack)
				}
				continue
			}
			if s.c.TopologyName != "" && s.c.TopologyName != name && !hasProblemAt(s.path+".topologyName") {
				t.Fatalf("%s names binding %q, not %q, and has no problem: %v", s.path, s.c.TopologyName, name, problems)
			}
			required, preferred := Domains(s.c)
			valid := (required == "" || levelOf(required) >= 0) && (preferred == "" || levelOf(preferred) >= 0) &&
				(required == "" || preferred == "" || levelOf(preferred) >= levelOf(required)) &&
				(required == "" || levelOf(required) >= requiredLevel(s))
			if s.pack.IsZero() {
				if (required != "" || preferred != "") && !hasProblemAt(s.path) {
					t.Fatalf("%s (required %q, preferred %q) was left out without a problem: %v", s.path, required, preferred, problems)
				}
				if valid && (required != "" || preferred != "") {
					t.Fatalf("%s (required %q, preferred %q) fits binding %v, yet was left out: %v", s.path, required, preferred, b.Spec.Levels, problems)
				}
				continue
			}
			if want := (Pack{RequiredKey: keyOf(required), PreferredKey: keyOf(preferred)}); s.pack != want {
				t.Fatalf("%s (required %q, preferred %q) packed as %+v; want %+v from binding %v",
					s.path, required, preferred, s.pack, want, b.Spec.Levels)
			}
			if !valid {
				t.Fatalf("%s (required %q, preferred %q) packed as %+v, though its preferred domain is broader than its required one, "+
					"or its required one broader than level %d above it, in binding %v", s.path, required, preferred, s.pack, requiredLevel(s), b.Spec.Levels)
			}
		}
	})
}

// admissible: the names of pcs's cliques, and of its scaling groups, are
// distinct, and no clique is in two scaling groups, as the webhook admits
// them (Resolve reports packing by name). Mutated JSON seeds break this.
func admissible(pcs *copsev1alpha1.PodCliqueSet) bool {
	cliques, groups, grouped := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, c := range pcs.Spec.Template.Cliques {
		if c != nil && cliques[c.Name] {
			return false
		} else if c != nil {
			cliques[c.Name] = true
		}
	}
	for _, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		if groups[g.Name] {
			return false
		}
		groups[g.Name] = true
		for _, name := range g.CliqueNames {
			if grouped[name] {
				return false
			}
			grouped[name] = true
		}
	}
	return true
}

// firstName is the first topologyName set, broadest scope first.
func firstName(pcs *copsev1alpha1.PodCliqueSet) string {
	for _, s := range fuzzScopes(pcs, Resolved{}) {
		if s.c != nil && s.c.TopologyName != "" {
			return s.c.TopologyName
		}
	}
	return ""
}
