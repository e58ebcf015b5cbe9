package podcliquescalinggroup

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/fuzzinput"
	"github.com/copse-dev/copse/internal/podcount"
	"github.com/copse-dev/copse/internal/webhook/webhooktest"
)

// editScalingGroup changes one to three things of old, as an update might.
func editScalingGroup(s *fuzzinput.Source, old *copsev1alpha1.PodCliqueScalingGroup) *copsev1alpha1.PodCliqueScalingGroup {
	pcsg := old.DeepCopy()
	for range s.IntIn(1, 3) {
		switch s.Intn(5) {
		case 0:
			pcsg.Spec.Replicas = s.Replicas()
		case 1:
			pcsg.Spec.MinAvailable = s.OptionalReplicas()
		case 2:
			pcsg.Spec.CliqueNames = append(pcsg.Spec.CliqueNames, s.CliqueName())
		case 3:
			pcsg.Labels = s.Labels()
		default:
			pcsg = s.PodCliqueScalingGroup()
		}
	}
	return pcsg
}

// FuzzValidateScalingGroup validates a PodCliqueScalingGroup (the JSON of
// one, or one generated from the bytes) created, and updated from old (the
// JSON of one, or an edit of old generated from the bytes), owned by no
// PodCliqueSet or by any PodCliqueSet (the JSON of one, or one generated).
// Every error names a field and the rule; the same input gives the same
// errors; an update that keeps the spec is accepted, one that changes it
// gets the errors of a new object; the Training rule refuses exactly a
// changed replica count under a Training owner; the rules that read the
// owner refuse nothing when trainingRulesConcern and sizeRulesConcern say
// they cannot (the webhook reads the owner only when one of them says
// otherwise); an update that adds no pods passes the size limit.
//
// maxPods is limits.maxPodsPerReplica; the default limits when not positive.
func FuzzValidateScalingGroup(f *testing.F) {
	withReplicas := func(pcsg *copsev1alpha1.PodCliqueScalingGroup, replicas int32) *copsev1alpha1.PodCliqueScalingGroup {
		pcsg = pcsg.DeepCopy()
		pcsg.Spec.Replicas = replicas
		return pcsg
	}
	training := withTemplate(webhooktest.NewFamily("job", copsev1alpha1.WorkloadTypeTraining), 4)
	inference := withTemplate(webhooktest.NewFamily("serve", copsev1alpha1.WorkloadTypeInference), 4)
	// Inputs of TestValidateCreate, TestValidateUpdate, TestValidateTraining
	// and TestValidateSize.
	for _, seed := range []struct {
		old, new *copsev1alpha1.PodCliqueScalingGroup
		owner    *copsev1alpha1.PodCliqueSet
	}{
		{scalingGroup(3, ptr.To[int32](2), "prefill", "decode"), scalingGroup(3, ptr.To[int32](2), "prefill", "decode"), nil},
		{scalingGroup(1, nil, "decode"), scalingGroup(0, ptr.To[int32](1), "decode"), nil},
		{scalingGroup(2, ptr.To[int32](2), "decode"), scalingGroup(2, ptr.To[int32](3), "decode"), inference.Set},
		{scalingGroup(1, ptr.To[int32](1)), scalingGroup(1, ptr.To[int32](1), "Decode", "prefill", "prefill"), nil},
		{scalingGroup(2, ptr.To[int32](2), "decode"), scalingGroup(4, ptr.To[int32](2), "decode"), inference.Set},
		{scalingGroup(2, ptr.To[int32](2), "decode"), scalingGroup(1, ptr.To[int32](2), "decode"), nil},
		{training.ScalingGroup, withReplicas(training.ScalingGroup, 2), training.Set},
		{training.ScalingGroup, withReplicas(training.ScalingGroup, 3), training.Set},
		{inference.ScalingGroup, withReplicas(inference.ScalingGroup, 5), inference.Set},
		{inference.ScalingGroup, withReplicas(inference.ScalingGroup, 10000), inference.Set},
		{withReplicas(inference.ScalingGroup, 10000), withReplicas(inference.ScalingGroup, 9000), inference.Set},
	} {
		var ownerDoc []byte
		if seed.owner != nil {
			ownerDoc = fuzzinput.JSON(seed.owner)
		}
		f.Add(fuzzinput.JSON(seed.old), fuzzinput.JSON(seed.new), ownerDoc, int64(0))
	}
	f.Fuzz(func(t *testing.T, oldDoc, newDoc, ownerDoc []byte, maxPods int64) {
		old := fuzzinput.Object(oldDoc, (*fuzzinput.Source).PodCliqueScalingGroup)
		pcsg := fuzzinput.Object(newDoc, func(s *fuzzinput.Source) *copsev1alpha1.PodCliqueScalingGroup { return editScalingGroup(s, old) })
		var owner *copsev1alpha1.PodCliqueSet
		if len(ownerDoc) > 0 {
			owner = fuzzinput.Object(ownerDoc, (*fuzzinput.Source).PodCliqueSet)
		}
		limits := webhooktest.LimitsOf(maxPods)

		webhooktest.ExpectCreateAndUpdate(t, old, pcsg, (*copsev1alpha1.PodCliqueScalingGroup).DeepCopy,
			func(a, b *copsev1alpha1.PodCliqueScalingGroup) bool {
				return equality.Semantic.DeepEqual(a.Spec, b.Spec)
			}, ValidateCreate, ValidateUpdate)

		for _, before := range []*copsev1alpha1.PodCliqueScalingGroup{nil, old} {
			training := ValidateTraining(before, pcsg, owner)
			webhooktest.ExpectWellFormed(t, "ValidateTraining", training)
			scaled := before != nil && before.Spec.Replicas != pcsg.Spec.Replicas
			if want := owner.IsTraining() && scaled; (len(training) > 0) != want {
				t.Fatalf("ValidateTraining with a Training owner %v, replicas changed %v: %v", owner.IsTraining(), scaled, training)
			}

			size := ValidateSize(before, pcsg, owner, limits)
			webhooktest.ExpectWellFormed(t, "ValidateSize", size)
			webhooktest.ExpectSameErrors(t, "ValidateSize twice", size, ValidateSize(before, pcsg.DeepCopy(), owner, limits))
			if len(size) > 0 && (owner == nil || !sizeRulesConcern(before, pcsg)) {
				t.Fatalf("the size rule refuses a change the webhook would not check (owner %v, concern %v): %v",
					owner != nil, sizeRulesConcern(before, pcsg), size)
			}
			if len(training)+len(size) > 0 && !trainingRulesConcern(before, pcsg) && !sizeRulesConcern(before, pcsg) {
				t.Fatalf("the owner's rules refuse a change for which the webhook does not read the owner: %v %v", training, size)
			}
			if owner == nil || before == nil {
				continue
			}
			pods, _ := podcount.ScalingGroup(&owner.Spec, pcsg.Spec.CliqueNames, pcsg.Spec.Replicas)
			podsBefore, _ := podcount.ScalingGroup(&owner.Spec, before.Spec.CliqueNames, before.Spec.Replicas)
			if pods <= podsBefore && len(size) > 0 {
				t.Fatalf("an update from %d to %d pods is refused: %v", podsBefore, pods, size)
			}
		}
	})
}
