package podcliqueset

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/fuzzinput"
	"github.com/copse-dev/copse/internal/generationhash"
	"github.com/copse-dev/copse/internal/webhook/webhooktest"
)

// FuzzDefaultAndValidateCreate defaults and validates a new PodCliqueSet:
// the JSON of one (seeded with the objects of the table tests), or one
// generated from the bytes. Default only fills fields that were unset, is
// idempotent, and never makes a valid object invalid. Validation does not
// change the object, names a field and the rule in every error, and gives
// the same errors for the same object; the webhook refuses the object
// exactly when a rule (or the size limit) does.
//
// maxPods is both limits; the default limits when not positive.
func FuzzDefaultAndValidateCreate(f *testing.F) {
	for _, pcs := range []*copsev1alpha1.PodCliqueSet{
		// TestDefault.
		undefaulted(copsev1alpha1.WorkloadTypeInference),
		undefaulted(""),
		undefaulted(copsev1alpha1.WorkloadTypeTraining),
		userSet(undefaulted(copsev1alpha1.WorkloadTypeInference)),
		// TestValidateCreate.
		valid(),
		valid(asTraining),
		valid(func(p *copsev1alpha1.PodCliqueSet) { p.Name = "1llm" }),
		valid(func(p *copsev1alpha1.PodCliqueSet) { p.Spec.Template.TerminationDelay = &metav1.Duration{} }),
		valid(func(p *copsev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques = append(p.Spec.Template.Cliques, nil) }),
		valid(func(p *copsev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[2].Name = "leader" }),
		valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Labels = map[string]string{"tier": "not valid!", "bad key!": "x"}
		}),
		valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[2].Spec.ScaleConfig = &grovecorev1alpha1.AutoScalingConfig{MinReplicas: ptr.To[int32](1), MaxReplicas: 4}
		}),
		valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.PodSpec.RestartPolicy = corev1.RestartPolicyOnFailure
			p.Spec.Template.Cliques[0].Spec.PodSpec.NodeName = "node-1"
			p.Spec.Template.Cliques[2].Spec.PodSpec.SchedulerName = "other"
		}),
		valid(explicitStartup, startsAfter(0, "router"), startsAfter(1, "leader"), startsAfter(2, "worker")),
		valid(explicitStartup, startsAfter(1, "leader", "ghost", "", "leader")),
		valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs = append(p.Spec.Template.PodCliqueScalingGroupConfigs,
				grovecorev1alpha1.PodCliqueScalingGroupConfig{Name: "prefill", CliqueNames: []string{"router", "worker", "ghost"}})
		}),
		valid(withClaimTemplate("gpu"), func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.ResourceSharing = []grovecorev1alpha1.PCSResourceSharingSpec{{
				ResourceSharingSpec: sharing("gpu"),
				Filter:              &grovecorev1alpha1.PCSResourceSharingFilter{ChildCliqueNames: []string{"leader"}, ChildScalingGroupNames: []string{"decode"}},
			}}
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].ResourceSharing = []grovecorev1alpha1.PCSGResourceSharingSpec{{
				ResourceSharingSpec: sharing("gpu"), Filter: &grovecorev1alpha1.PCSGResourceSharingFilter{ChildCliqueNames: []string{"leader"}},
			}}
		}),
		valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Name = "x"
			p.Spec.Replicas = 11
			p.Spec.Template.Cliques[2].Name = strings.Repeat("r", 53)
		}),
	} {
		f.Add(fuzzinput.JSON(pcs), int64(0))
	}
	f.Fuzz(func(t *testing.T, doc []byte, maxPods int64) {
		pcs := fuzzinput.Object(doc, (*fuzzinput.Source).PodCliqueSet)
		limits := webhooktest.LimitsOf(maxPods)

		before := pcs.DeepCopy()
		beforeErrs := validated(t, "ValidateCreate before Default", ValidateCreate, pcs)

		Default(pcs)
		if path := filledOnlyUnset(reflect.ValueOf(before).Elem(), reflect.ValueOf(pcs).Elem(), "PodCliqueSet"); path != "" {
			t.Fatalf("Default changed %s, which was set", path)
		}
		again := pcs.DeepCopy()
		Default(again)
		if !equality.Semantic.DeepEqual(pcs, again) {
			t.Fatalf("Default is not idempotent (-once +twice):\n%s", cmp.Diff(pcs, again))
		}

		errs := validated(t, "ValidateCreate", ValidateCreate, pcs)
		if len(beforeErrs) == 0 && len(errs) > 0 {
			t.Fatalf("Default made a valid PodCliqueSet invalid: %v", errs)
		}
		size := validated(t, "ValidateSize", func(pcs *copsev1alpha1.PodCliqueSet) field.ErrorList { return ValidateSize(nil, pcs, limits) }, pcs)
		for _, warning := range Warnings(pcs) {
			if warning == "" {
				t.Fatalf("an empty warning")
			}
		}
		_, err := Validator{Limits: limits}.ValidateCreate(context.Background(), pcs)
		if (err != nil) != (len(errs)+len(size) > 0) || (err != nil && !apierrors.IsInvalid(err)) {
			t.Fatalf("the webhook answers %v to a PodCliqueSet with %d rule and %d size errors", err, len(errs), len(size))
		}
	})
}

// FuzzValidateUpdate validates an update of a stored PodCliqueSet (the JSON
// of one, or one generated from the bytes) to a new one (the JSON of one,
// or an edit of the stored one generated from the bytes). Validation does
// not change either object, names a field and the rule in every error, and
// gives the same errors for the same objects. An update that keeps the
// spec is accepted. One that changes it is refused for everything a new
// object would be (placement fields already stored aside), and for any
// change of what is fixed at creation: the start order type, the set of
// cliques and of scaling groups, a clique's roleName; and, for Training,
// any change of the generation hash or of a clique's or scaling group's
// replicas.
func FuzzValidateUpdate(f *testing.F) {
	setReplicas := func(clique int, replicas int32) func(*copsev1alpha1.PodCliqueSet) {
		return func(p *copsev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[clique].Spec.Replicas = replicas }
	}
	newImage := func(p *copsev1alpha1.PodCliqueSet) {
		p.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Image = "example.com/llm:2"
	}
	// Inputs of TestValidateUpdate and TestValidateUpdateOfTrainingWorkloads.
	for _, seed := range [][2]*copsev1alpha1.PodCliqueSet{
		{valid(), valid(newImage)},
		{valid(), valid(swapCliques(0, 2))},
		{valid(inOrderStartup), valid(inOrderStartup, swapCliques(0, 2))},
		{valid(), valid(inOrderStartup)},
		{valid(), valid(setReplicas(2, 1))},
		{valid(), valid(func(p *copsev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0].Spec.PodSpec.NodeName = "node-1" })},
		{valid(func(p *copsev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0].Spec.PodSpec.NodeName = "node-1" }),
			valid(newImage, func(p *copsev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0].Spec.PodSpec.NodeName = "node-1" })},
		{valid(), valid(func(p *copsev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[2].Name = "gateway" })},
		{valid(), valid(func(p *copsev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques = p.Spec.Template.Cliques[:2] })},
		{valid(), valid(func(p *copsev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0].Spec.RoleName = "head" })},
		{valid(), valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].CliqueNames = []string{"worker", "router"}
		})},
		{valid(), valid(func(p *copsev1alpha1.PodCliqueSet) { p.Spec.Template.PodCliqueScalingGroupConfigs = nil })},
		{validOf(copsev1alpha1.WorkloadTypeTraining), validOf(copsev1alpha1.WorkloadTypeTraining, newImage)},
		{validOf(copsev1alpha1.WorkloadTypeTraining), validOf(copsev1alpha1.WorkloadTypeTraining, setReplicas(2, 3))},
		{validOf(copsev1alpha1.WorkloadTypeTraining), validOf(copsev1alpha1.WorkloadTypeTraining,
			func(p *copsev1alpha1.PodCliqueSet) { p.Spec.Template.PriorityClassName = "high" })},
		{validOf(copsev1alpha1.WorkloadTypeTraining), validOf(copsev1alpha1.WorkloadTypeTraining, swapCliques(0, 2))},
		{validOf(copsev1alpha1.WorkloadTypeTraining), validOf(copsev1alpha1.WorkloadTypeTraining, func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{MaxRestarts: ptr.To[int32](2)}
		})},
	} {
		f.Add(fuzzinput.JSON(seed[0]), fuzzinput.JSON(seed[1]))
	}
	f.Fuzz(func(t *testing.T, oldDoc, newDoc []byte) {
		old := fuzzinput.Object(oldDoc, (*fuzzinput.Source).PodCliqueSet)
		pcs := fuzzinput.Object(newDoc, func(s *fuzzinput.Source) *copsev1alpha1.PodCliqueSet { return editPodCliqueSet(s, old) })

		oldBefore := old.DeepCopy()
		errs := validated(t, "ValidateUpdate", func(pcs *copsev1alpha1.PodCliqueSet) field.ErrorList { return ValidateUpdate(old, pcs) }, pcs)
		if !equality.Semantic.DeepEqual(old, oldBefore) {
			t.Fatalf("ValidateUpdate changed the stored object")
		}
		if noChange := ValidateUpdate(pcs, pcs.DeepCopy()); len(noChange) > 0 {
			t.Fatalf("an update to the same object is refused: %v", noChange)
		}
		if equality.Semantic.DeepEqual(old.Spec, pcs.Spec) {
			if len(errs) > 0 {
				t.Fatalf("an update that keeps the spec is refused: %v", errs)
			}
			return
		}

		got := map[string]int{}
		for _, e := range errs {
			got[e.Error()]++
		}
		for _, e := range ValidateCreate(pcs) {
			placement := strings.HasSuffix(e.Field, ".nodeName") || strings.HasSuffix(e.Field, ".topologySpreadConstraints")
			if got[e.Error()] == 0 && !placement {
				t.Fatalf("an update is not refused for what a new object is: %v\n  update errors: %v", e, errs)
			}
			got[e.Error()]--
		}

		var forbidden []string
		if !equality.Semantic.DeepEqual(old.Spec.Template.StartupType, pcs.Spec.Template.StartupType) {
			forbidden = append(forbidden, "the start order type changed")
		}
		oldCliques, cliques := cliquesByName(old), cliquesByName(pcs)
		if !slices.Equal(slices.Sorted(maps.Keys(oldCliques)), slices.Sorted(maps.Keys(cliques))) {
			forbidden = append(forbidden, "the cliques changed")
		}
		if !slices.Equal(groupNames(old), groupNames(pcs)) {
			forbidden = append(forbidden, "the scaling groups changed")
		}
		training := old.IsTraining() || pcs.IsTraining()
		if training && generationhash.GenerationHash(old) != generationhash.GenerationHash(pcs) {
			forbidden = append(forbidden, "the generation hash of a Training workload changed")
		}
		for name, clique := range cliques {
			oldClique, ok := oldCliques[name]
			if !ok || oldClique == nil || clique == nil {
				continue
			}
			if oldClique.Spec.RoleName != clique.Spec.RoleName {
				forbidden = append(forbidden, fmt.Sprintf("clique %q has a new roleName", name))
			}
			if training && oldClique.Spec.Replicas != clique.Spec.Replicas {
				forbidden = append(forbidden, fmt.Sprintf("Training clique %q has new replicas", name))
			}
		}
		if training {
			for name, replicas := range groupReplicas(pcs) {
				if oldReplicas, ok := groupReplicas(old)[name]; ok && oldReplicas != replicas {
					forbidden = append(forbidden, fmt.Sprintf("Training scaling group %q has new replicas", name))
				}
			}
		}
		if len(forbidden) > 0 && len(errs) == 0 {
			t.Fatalf("an update is accepted although %s", strings.Join(forbidden, ", "))
		}
	})
}

// validated runs validate on pcs twice, and fails t unless both runs give
// the same well-formed errors and leave pcs as it was.
func validated(t *testing.T, what string, validate func(*copsev1alpha1.PodCliqueSet) field.ErrorList, pcs *copsev1alpha1.PodCliqueSet) field.ErrorList {
	t.Helper()
	before := pcs.DeepCopy()
	errs := validate(pcs)
	if !equality.Semantic.DeepEqual(pcs, before) {
		t.Fatalf("%s changed the object", what)
	}
	webhooktest.ExpectWellFormed(t, what, errs)
	webhooktest.ExpectSameErrors(t, what+" twice", errs, validate(pcs.DeepCopy()))
	return errs
}

// filledOnlyUnset returns the path of the first field that is set (not
// its type's zero value) in before and different in after; "" if none.
// Types with unexported fields (times, quantities) are compared whole.
func filledOnlyUnset(before, after reflect.Value, path string) string {
	if before.IsZero() {
		return ""
	}
	switch before.Kind() {
	case reflect.Pointer:
		if after.IsNil() {
			return path
		}
		return filledOnlyUnset(before.Elem(), after.Elem(), path)
	case reflect.Struct:
		for i := range before.NumField() {
			if !before.Type().Field(i).IsExported() {
				return unequal(before, after, path)
			}
		}
		for i := range before.NumField() {
			if p := filledOnlyUnset(before.Field(i), after.Field(i), path+"."+before.Type().Field(i).Name); p != "" {
				return p
			}
		}
		return ""
	case reflect.Slice:
		if before.Len() != after.Len() {
			return path
		}
		for i := range before.Len() {
			if p := filledOnlyUnset(before.Index(i), after.Index(i), fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
		return ""
	case reflect.Map:
		if before.Len() != after.Len() {
			return path
		}
		for _, key := range before.MapKeys() {
			value := after.MapIndex(key)
			if !value.IsValid() {
				return fmt.Sprintf("%s[%v]", path, key)
			}
			if p := filledOnlyUnset(before.MapIndex(key), value, fmt.Sprintf("%s[%v]", path, key)); p != "" {
				return p
			}
		}
		return ""
	default:
		return unequal(before, after, path)
	}
}

func unequal(before, after reflect.Value, path string) string {
	if !equality.Semantic.DeepEqual(before.Interface(), after.Interface()) {
		return path
	}
	return ""
}

// editPodCliqueSet changes one to three things of old, as a user editing a
// stored PodCliqueSet might.
func editPodCliqueSet(s *fuzzinput.Source, old *copsev1alpha1.PodCliqueSet) *copsev1alpha1.PodCliqueSet {
	pcs := old.DeepCopy()
	t := &pcs.Spec.Template
	for range s.IntIn(1, 3) {
		var clique *grovecorev1alpha1.PodCliqueTemplateSpec
		if len(t.Cliques) > 0 {
			clique = t.Cliques[s.Intn(len(t.Cliques))]
		}
		var group *grovecorev1alpha1.PodCliqueScalingGroupConfig
		if len(t.PodCliqueScalingGroupConfigs) > 0 {
			group = &t.PodCliqueScalingGroupConfigs[s.Intn(len(t.PodCliqueScalingGroupConfigs))]
		}
		switch edit := s.Intn(18); {
		case edit == 0:
			pcs.Spec.Replicas = s.Replicas()
		case edit == 1:
			pcs.Spec.WorkloadType = fuzzinput.Pick(s, copsev1alpha1.WorkloadTypeInference, copsev1alpha1.WorkloadTypeTraining)
		case edit == 2:
			t.StartupType = fuzzinput.Pick(s, nil, ptr.To(grovecorev1alpha1.CliqueStartupTypeAnyOrder),
				ptr.To(grovecorev1alpha1.CliqueStartupTypeInOrder), ptr.To(grovecorev1alpha1.CliqueStartupTypeExplicit))
		case edit == 3:
			t.PriorityClassName = fuzzinput.Pick(s, "", "high")
		case edit == 4:
			t.TerminationDelay = &metav1.Duration{Duration: fuzzinput.Pick(s, -time.Minute, 0, time.Hour)}
		case edit == 5:
			t.TopologyConstraint = s.TopologyConstraint()
		case edit == 6:
			t.ResourceClaimTemplates = append(t.ResourceClaimTemplates, s.ResourceClaimTemplate())
		case edit == 7:
			t.Cliques = append(t.Cliques, s.PodCliqueTemplate())
		case edit == 8 && len(t.Cliques) > 0:
			i := s.Intn(len(t.Cliques))
			t.Cliques = slices.Delete(t.Cliques, i, i+1)
		case edit == 9 && len(t.Cliques) > 1:
			i, j := s.Intn(len(t.Cliques)), s.Intn(len(t.Cliques))
			t.Cliques[i], t.Cliques[j] = t.Cliques[j], t.Cliques[i]
		case edit == 10 && clique != nil:
			clique.Name = s.CliqueName()
		case edit == 11 && clique != nil:
			clique.Spec.Replicas = s.Replicas()
		case edit == 12 && clique != nil:
			clique.Spec.PodSpec = s.PodSpec()
		case edit == 13 && clique != nil:
			clique.Labels, clique.Annotations = s.Labels(), s.Labels()
		case edit == 14 && clique != nil:
			clique.Spec.MinAvailable, clique.Spec.ScaleConfig = s.OptionalReplicas(), s.AutoScalingConfig()
		case edit == 15 && clique != nil:
			clique.Spec.RoleName = s.CliqueName()
		case edit == 16 && group != nil:
			group.Replicas, group.MinAvailable = s.OptionalReplicas(), s.OptionalReplicas()
		case edit == 17 && group != nil:
			group.CliqueNames = append(group.CliqueNames, s.CliqueName())
		default:
			t.PodCliqueScalingGroupConfigs = append(t.PodCliqueScalingGroupConfigs, s.ScalingGroupConfig())
		}
	}
	return pcs
}

// cliquesByName maps the names of the template's cliques to the clique
// (nil for a name that several cliques have).
func cliquesByName(pcs *copsev1alpha1.PodCliqueSet) map[string]*grovecorev1alpha1.PodCliqueTemplateSpec {
	out := map[string]*grovecorev1alpha1.PodCliqueTemplateSpec{}
	for _, clique := range pcs.Spec.Template.Cliques {
		if clique == nil {
			continue
		}
		if _, twice := out[clique.Name]; twice {
			out[clique.Name] = nil
			continue
		}
		out[clique.Name] = clique
	}
	return out
}

// groupNames are the template's scaling group names, sorted, without
// repetition.
func groupNames(pcs *copsev1alpha1.PodCliqueSet) []string {
	var names []string
	for _, group := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		names = append(names, group.Name)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// groupReplicas maps each scaling group name that only one group has to
// its template replicas.
func groupReplicas(pcs *copsev1alpha1.PodCliqueSet) map[string]int32 {
	out, seen := map[string]int32{}, map[string]bool{}
	for _, group := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		if seen[group.Name] {
			delete(out, group.Name)
			continue
		}
		seen[group.Name] = true
		out[group.Name] = copsev1alpha1.ScalingGroupReplicas(group)
	}
	return out
}
