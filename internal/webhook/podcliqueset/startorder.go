package podcliqueset

import (
	"fmt"
	"slices"
	"strings"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook/rules"
)

// validateStartOrder checks startsAfter, which only takes effect with
// cliqueStartupType Explicit (Warnings tells users when it is ignored): each
// entry must name another clique of the set, and the dependencies must not
// form a cycle, or no clique of the cycle could ever start.
func validateStartOrder(pcs *copsev1alpha1.PodCliqueSet) field.ErrorList {
	if !isStartupExplicit(pcs) {
		return nil
	}
	cliques := pcs.Spec.Template.Cliques
	known := make(map[string]bool, len(cliques))
	for _, clique := range cliques {
		if clique != nil {
			known[clique.Name] = true
		}
	}
	var errs field.ErrorList
	for i, clique := range cliques {
		if clique == nil {
			continue
		}
		startsAfterPath := cliquesPath.Index(i).Child("spec", "startsAfter")
		for j, dependency := range clique.Spec.StartsAfter {
			path := startsAfterPath.Index(j)
			switch {
			case dependency == "":
				errs = append(errs, field.Required(path, "must name a clique"))
			case dependency == clique.Name:
				errs = append(errs, field.Invalid(path, dependency, "a clique cannot start after itself"))
			case !known[dependency]:
				errs = append(errs, field.Invalid(path, dependency, fmt.Sprintf("must name a clique of %s", cliquesPath)))
			}
		}
		errs = append(errs, rules.NoDuplicates(clique.Spec.StartsAfter, startsAfterPath.Index)...)
	}
	for _, cycle := range dependencyCycles(cliques, func(c *grovecorev1alpha1.PodCliqueTemplateSpec) []string { return c.Spec.StartsAfter }) {
		errs = append(errs, field.Invalid(cliquesPath.Index(cycle.firstIndex).Child("spec", "startsAfter"),
			cycle.String(), "startsAfter must not form a cycle: no clique of the cycle could ever start"))
	}
	return errs
}

// startOrderCycle is a loop of cliques, each starting after the next one.
type startOrderCycle struct {
	names []string
	// firstIndex is the position in spec.template.cliques of names[0].
	firstIndex int
}

// String renders the cycle as "a -> b -> a".
func (c startOrderCycle) String() string {
	return strings.Join(append(slices.Clone(c.names), c.names[0]), " -> ")
}

// dependencyCycles finds the cycles of a graph over the cliques (after
// gives the cliques one starts after) by depth-first search, each reported
// once and starting with the clique listed first. Self-references and
// unknown names are left to the callers' own messages.
func dependencyCycles(cliques []*grovecorev1alpha1.PodCliqueTemplateSpec, after func(*grovecorev1alpha1.PodCliqueTemplateSpec) []string) []startOrderCycle {
	index := map[string]int{}
	for i, clique := range cliques {
		if clique != nil {
			if _, dup := index[clique.Name]; !dup {
				index[clique.Name] = i
			}
		}
	}
	const (
		unvisited = iota
		onPath
		done
	)
	state := make(map[string]int, len(index))
	var path []string
	var cycles []startOrderCycle
	seen := map[string]bool{}

	var visit func(name string)
	visit = func(name string) {
		state[name] = onPath
		path = append(path, name)
		for _, next := range after(cliques[index[name]]) {
			if _, known := index[next]; !known || next == name {
				continue
			}
			switch state[next] {
			case unvisited:
				visit(next)
			case onPath:
				start := slices.Index(path, next)
				cycle := canonicalCycle(path[start:], index)
				if key := strings.Join(cycle.names, "\x00"); !seen[key] {
					seen[key] = true
					cycles = append(cycles, cycle)
				}
			}
		}
		path = path[:len(path)-1]
		state[name] = done
	}
	for _, clique := range cliques {
		if clique != nil && state[clique.Name] == unvisited {
			visit(clique.Name)
		}
	}
	return cycles
}

// canonicalCycle rotates a cycle so that it starts with the clique listed
// first, so one loop found from different cliques is reported once.
func canonicalCycle(names []string, index map[string]int) startOrderCycle {
	first := 0
	for i, name := range names {
		if index[name] < index[names[first]] {
			first = i
		}
	}
	rotated := append(slices.Clone(names[first:]), names[:first]...)
	return startOrderCycle{names: rotated, firstIndex: index[rotated[0]]}
}
