package podcount

import (
	"math"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// Count is how many pods a PodCliqueSet asks for.
//
// Counts are upper bounds: an autoscaled clique or scaling group counts at
// the larger of its replicas and its autoscaler's maxReplicas, since the
// autoscaler may take it there without another admission of the
// PodCliqueSet. Negative replica counts (rejected by other rules) count as
// none. Sums and products saturate at math.MaxInt64 rather than overflow, so
// an absurd spec yields a count that is too large, never one that wrapped
// round to a small or negative number.
type Count struct {
	// PerReplica is the pods of one replica: each standalone clique's
	// replicas, plus, for each scaling group, the group's replicas times
	// the sum of its member cliques' replicas.
	PerReplica int64
	// Total is PerReplica times spec.replicas.
	Total int64
	// LargestField is the field that contributes most to PerReplica, to
	// point a user at what to change: of the standalone clique or scaling
	// group that adds the most pods, its replica count (or autoscaler
	// maxReplicas, when that is the bound); for a scaling group, the
	// group's own count or that of its largest member clique, whichever is
	// greater. Nil when there are no pods.
	LargestField *field.Path
	// LargestValue is the value of LargestField.
	LargestValue int64
}

// Paths of the fields a count comes from.
var (
	cliquesPath = field.NewPath("spec", "template", "cliques")
	groupsPath  = field.NewPath("spec", "template", "podCliqueScalingGroups")
)

// bound is one factor of a count and the field it comes from.
type bound struct {
	value int64
	path  *field.Path
}

// PodCliqueSet counts the pods of spec; see Count.
func PodCliqueSet(spec *copsev1alpha1.PodCliqueSetSpec) Count {
	cliques := spec.Template.Cliques
	cliqueBounds := make(map[string]bound, len(cliques))
	for i, c := range cliques {
		if c == nil {
			continue
		}
		if _, seen := cliqueBounds[c.Name]; !seen {
			cliqueBounds[c.Name] = cliqueBound(&c.Spec, cliquesPath.Index(i).Child("spec"))
		}
	}

	var count Count
	var largestPods int64
	// consider adds a contribution of pods, whose largest factor is
	// largest, to the count.
	consider := func(pods int64, largest bound) {
		count.PerReplica = Add(count.PerReplica, pods)
		if pods > largestPods {
			largestPods = pods
			count.LargestField, count.LargestValue = largest.path, largest.value
		}
	}

	grouped := map[string]bool{}
	for g := range spec.Template.PodCliqueScalingGroupConfigs {
		group := &spec.Template.PodCliqueScalingGroupConfigs[g]
		replicas := groupBound(group, groupsPath.Index(g))
		var perGroupReplica int64
		var largestMember bound
		for _, name := range group.CliqueNames {
			grouped[name] = true
			member, found := cliqueBounds[name]
			if !found {
				continue
			}
			perGroupReplica = Add(perGroupReplica, member.value)
			if member.value > largestMember.value {
				largestMember = member
			}
		}
		largest := replicas
		if largestMember.value > replicas.value {
			largest = largestMember
		}
		consider(Mul(replicas.value, perGroupReplica), largest)
	}
	for i, c := range cliques {
		if c == nil || grouped[c.Name] {
			continue
		}
		b := cliqueBound(&c.Spec, cliquesPath.Index(i).Child("spec"))
		consider(b.value, b)
	}
	count.Total = Mul(count.PerReplica, max(int64(spec.Replicas), 0))
	return count
}

// ScalingGroup counts the pods of a scaling group (a PodCliqueScalingGroup
// object) of replicas replicas made of the cliques named members, with the
// clique templates of spec: perGroupReplica is the sum of the members'
// replicas (autoscaled ones at maxReplicas), pods is replicas times that. A
// name that is not in the template adds nothing; negative replicas count as
// none.
func ScalingGroup(spec *copsev1alpha1.PodCliqueSetSpec, members []string, replicas int32) (pods, perGroupReplica int64) {
	for _, name := range members {
		for _, c := range spec.Template.Cliques {
			if c != nil && c.Name == name {
				perGroupReplica = Add(perGroupReplica, cliqueBound(&c.Spec, nil).value)
				break
			}
		}
	}
	return Mul(max(int64(replicas), 0), perGroupReplica), perGroupReplica
}

// Clique is the most pods one PodClique with spec may have: the larger of
// its replicas (copsev1alpha1.CliqueReplicas: a template's unset replicas
// are one pod) and its autoscaler's maxReplicas. from is the field that
// bounds it, below specPath (the path of spec in the object at hand).
func Clique(spec *grovecorev1alpha1.PodCliqueSpec, specPath *field.Path) (pods int64, from *field.Path) {
	b := cliqueBound(spec, specPath)
	return b.value, b.path
}

func cliqueBound(spec *grovecorev1alpha1.PodCliqueSpec, specPath *field.Path) bound {
	b := bound{value: max(int64(copsev1alpha1.CliqueReplicas(*spec)), 0), path: specPath.Child("replicas")}
	if spec.ScaleConfig != nil && int64(spec.ScaleConfig.MaxReplicas) > b.value {
		b = bound{value: int64(spec.ScaleConfig.MaxReplicas), path: specPath.Child("autoScalingConfig", "maxReplicas")}
	}
	return b
}

// ScalingGroupReplicas is the most replicas a scaling group may have: its
// replicas (1 when unset) or its autoscaler's maxReplicas, the larger.
func ScalingGroupReplicas(group *grovecorev1alpha1.PodCliqueScalingGroupConfig) int64 {
	return groupBound(group, nil).value
}

// groupBound is the most replicas a scaling group may have (1 when unset,
// its default), and the field that says so.
func groupBound(group *grovecorev1alpha1.PodCliqueScalingGroupConfig, path *field.Path) bound {
	b := bound{value: 1, path: path.Child("replicas")}
	if group.Replicas != nil {
		b.value = max(int64(*group.Replicas), 0)
	}
	if group.ScaleConfig != nil && int64(group.ScaleConfig.MaxReplicas) > b.value {
		b = bound{value: int64(group.ScaleConfig.MaxReplicas), path: path.Child("scaleConfig", "maxReplicas")}
	}
	return b
}

// Add returns a + b for non-negative a and b, or math.MaxInt64 if the sum
// would not fit.
func Add(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Mul returns a × b for non-negative a and b, or math.MaxInt64 if the
// product would not fit.
func Mul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}
