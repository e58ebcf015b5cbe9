// Package topology turns a PodCliqueSet's topologyConstraints, which name
// levels of a ClusterTopologyBinding by domain (rack, block, ...), into the
// node label keys the kube-scheduler packs by. Resolve, Packing and Disabled
// are pure: the webhook uses them to refuse bad constraints naming the field,
// the controllers to build PodGroups and PodCliques and to report what they
// could not apply. Lookup is the one function that reads the API (the
// binding).
package topology

import (
	"fmt"
	"slices"
	"strings"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// Pack is one scope's packing in node label keys; "" means none.
type Pack struct {
	// RequiredKey: every pod of one instance of the scope shares a domain of
	// this key.
	RequiredKey string
	// PreferredKey: the scheduler should try to put them in one domain of
	// this key, and place them anyway if it cannot.
	PreferredKey string
}

// IsZero reports whether the scope has no packing.
func (p Pack) IsZero() bool { return p.RequiredKey == "" && p.PreferredKey == "" }

// Resolved is a PodCliqueSet's packing per scope. Each scope holds only its
// own constraint: a parent's domain contains its children, so a parent's
// packing already covers every pod below it.
type Resolved struct {
	// TopologyName is the ClusterTopologyBinding the constraints use.
	TopologyName string
	// Replica is spec.template.topologyConstraint: each replica's pods.
	Replica Pack
	// ScalingGroups by config name: each scaling-group replica's pods.
	ScalingGroups map[string]Pack
	// Cliques by template name: each PodClique's pods (one PodClique per
	// replica, and per scaling-group replica for a clique in a group).
	Cliques map[string]Pack
}

// IsZero reports whether no scope has packing.
func (r Resolved) IsZero() bool {
	if !r.Replica.IsZero() {
		return false
	}
	for _, p := range r.ScalingGroups {
		if !p.IsZero() {
			return false
		}
	}
	for _, p := range r.Cliques {
		if !p.IsZero() {
			return false
		}
	}
	return true
}

// Problem is a constraint that cannot be applied: the reason is one of the
// TopologyLevelsUnavailable condition's reasons, the error names the field.
type Problem struct {
	Reason string
	Err    *field.Error
}

func (p Problem) String() string { return p.Err.Error() }

// Summary joins problems into one condition message.
func Summary(problems []Problem) string {
	msgs := make([]string, 0, len(problems))
	for _, p := range problems {
		msgs = append(msgs, p.String())
	}
	return strings.Join(msgs, "; ")
}

// scope is one place a topologyConstraint may be set: the template, a
// scaling group or a clique, with its field path and its parent scope (a
// clique's is its scaling group, if it is in one, else the template).
type scope struct {
	name       string
	isGroup    bool
	path       *field.Path
	constraint *grovecorev1alpha1.TopologyConstraint
	parent     *scope
}

// scopes lists every scope, parents before children: the template, then
// each scaling group, then each clique.
func scopes(pcs *copsev1alpha1.PodCliqueSet) []*scope {
	template := &pcs.Spec.Template
	templatePath := field.NewPath("spec", "template")
	root := &scope{path: templatePath.Child("topologyConstraint"), constraint: template.TopologyConstraint}
	out := []*scope{root}
	groupOf := map[string]*scope{}
	for i, g := range template.PodCliqueScalingGroupConfigs {
		s := &scope{name: g.Name, isGroup: true, parent: root, constraint: g.TopologyConstraint,
			path: templatePath.Child("podCliqueScalingGroups").Index(i).Child("topologyConstraint")}
		out = append(out, s)
		for _, clique := range g.CliqueNames {
			groupOf[clique] = s
		}
	}
	for i, c := range template.Cliques {
		if c == nil {
			continue
		}
		parent := root
		if g, ok := groupOf[c.Name]; ok {
			parent = g
		}
		out = append(out, &scope{name: c.Name, parent: parent, constraint: c.TopologyConstraint,
			path: templatePath.Child("cliques").Index(i).Child("topologyConstraint")})
	}
	return out
}

// Constrained reports whether the PodCliqueSet sets any topologyConstraint.
func Constrained(pcs *copsev1alpha1.PodCliqueSet) bool {
	for _, s := range scopes(pcs) {
		if s.constraint != nil {
			return true
		}
	}
	return false
}

// TopologyName is the ClusterTopologyBinding the PodCliqueSet's constraints
// name: the first topologyName set, broadest scope first ("" if none).
func TopologyName(pcs *copsev1alpha1.PodCliqueSet) string {
	for _, s := range scopes(pcs) {
		if s.constraint != nil && s.constraint.TopologyName != "" {
			return s.constraint.TopologyName
		}
	}
	return ""
}

// Resolve maps pcs's constraints onto binding's levels. binding is the
// ClusterTopologyBinding named by TopologyName(pcs), or nil when it does not
// exist. A constraint with a problem is left out of the result; the others
// are kept. A child broader than its parent is a problem of the child.
func Resolve(pcs *copsev1alpha1.PodCliqueSet, binding *copsev1alpha1.ClusterTopologyBinding) (Resolved, []Problem) {
	out := Resolved{ScalingGroups: map[string]Pack{}, Cliques: map[string]Pack{}}
	all := scopes(pcs)
	name := TopologyName(pcs)
	out.TopologyName = name
	var problems []Problem
	for _, s := range all {
		c := s.constraint
		if c == nil {
			continue
		}
		if c.TopologyName != "" && c.TopologyName != name {
			problems = append(problems, Problem{Reason: copsev1alpha1.ReasonClusterTopologyNotFound,
				Err: field.Invalid(s.path.Child("topologyName"), c.TopologyName,
					fmt.Sprintf("a PodCliqueSet uses one ClusterTopologyBinding; %q is already named by a broader scope", name))})
		}
	}
	if name == "" {
		for _, s := range all {
			if s.constraint != nil {
				problems = append(problems, Problem{Reason: copsev1alpha1.ReasonTopologyNameMissing,
					Err: field.Required(s.path.Child("topologyName"), "pack needs the name of a ClusterTopologyBinding, here or on a parent")})
			}
		}
		return out, problems
	}
	if binding == nil {
		first := all[0]
		for _, s := range all {
			if s.constraint != nil && s.constraint.TopologyName != "" {
				first = s
				break
			}
		}
		problems = append(problems, Problem{Reason: copsev1alpha1.ReasonClusterTopologyNotFound,
			Err: field.NotFound(first.path.Child("topologyName"), name)})
		return out, problems
	}

	levels := binding.Spec.Levels
	index := func(d grovecorev1alpha1.TopologyDomain) int {
		return slices.IndexFunc(levels, func(l grovecorev1alpha1.TopologyLevel) bool { return l.Domain == d })
	}
	domains := make([]string, len(levels))
	for i, l := range levels {
		domains[i] = string(l.Domain)
	}
	// resolved holds each scope's level indices, for its children's
	// broader-than-parent check; -1 means none.
	type indices struct{ required, preferred int }
	resolved := map[*scope]indices{}
	effective := func(s *scope) indices {
		for p := s; p != nil; p = p.parent {
			if r, ok := resolved[p]; ok && r.required >= 0 {
				return r
			}
		}
		return indices{-1, -1}
	}
	for _, s := range all {
		c := s.constraint
		if c == nil {
			continue
		}
		required, preferred := Domains(c)
		got := indices{-1, -1}
		bad := false
		check := func(d grovecorev1alpha1.TopologyDomain, path *field.Path) int {
			if d == "" {
				return -1
			}
			i := index(d)
			if i < 0 {
				bad = true
				problems = append(problems, Problem{Reason: copsev1alpha1.ReasonClusterTopologyLevelsUnavailable,
					Err: field.NotSupported(path, string(d), domains)})
			}
			return i
		}
		got.required = check(required, requiredPath(s.path, c))
		got.preferred = check(preferred, s.path.Child("pack", "preferred"))
		if bad {
			continue
		}
		if got.required >= 0 && got.preferred >= 0 && got.preferred < got.required {
			problems = append(problems, Problem{Reason: copsev1alpha1.ReasonClusterTopologyLevelsUnavailable,
				Err: field.Invalid(s.path.Child("pack", "preferred"), string(preferred),
					fmt.Sprintf("must be %s or narrower: a preferred domain broader than the required one cannot be preferred", required))})
			continue
		}
		if parent := effective(s.parent); parent.required >= 0 && got.required >= 0 && got.required < parent.required {
			problems = append(problems, Problem{Reason: copsev1alpha1.ReasonClusterTopologyLevelsUnavailable,
				Err: field.Invalid(requiredPath(s.path, c), string(required),
					fmt.Sprintf("must be %s or narrower: a child's constraint may not be broader than its parent's", levels[parent.required].Domain))})
			continue
		}
		resolved[s] = got
	}

	pack := func(s *scope) Pack {
		r, ok := resolved[s]
		if !ok {
			return Pack{}
		}
		var p Pack
		if r.required >= 0 {
			p.RequiredKey = levels[r.required].Key
		}
		if r.preferred >= 0 {
			p.PreferredKey = levels[r.preferred].Key
		}
		return p
	}
	for _, s := range all {
		switch {
		case s.parent == nil:
			out.Replica = pack(s)
		case s.isGroup:
			out.ScalingGroups[s.name] = pack(s)
		default:
			out.Cliques[s.name] = pack(s)
		}
	}
	return out, problems
}

// Domains returns a constraint's required and preferred domains; the
// deprecated packDomain counts as required when pack.required is unset.
func Domains(c *grovecorev1alpha1.TopologyConstraint) (required, preferred grovecorev1alpha1.TopologyDomain) {
	if c.Pack != nil {
		required, preferred = c.Pack.RequiredDomain, c.Pack.PreferredDomain
	}
	if required == "" {
		required = c.PackDomain
	}
	return required, preferred
}

func requiredPath(path *field.Path, c *grovecorev1alpha1.TopologyConstraint) *field.Path {
	if (c.Pack == nil || c.Pack.RequiredDomain == "") && c.PackDomain != "" {
		return path.Child("packDomain")
	}
	return path.Child("pack", "required")
}
