package podclique

import (
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/fuzzinput"
	"github.com/copse-dev/copse/internal/podcount"
	"github.com/copse-dev/copse/internal/webhook/webhooktest"
)

// Owners of the PodClique in FuzzValidatePodClique, by the owner argument
// (modulo 4).
var fuzzOwnerWorkloads = []*copsev1alpha1.WorkloadType{
	nil, // no owner
	ptr.To(copsev1alpha1.WorkloadTypeInference),
	ptr.To(copsev1alpha1.WorkloadTypeTraining),
	ptr.To(copsev1alpha1.WorkloadType("")),
}

// editPodClique changes one to three things of old, as an update might.
func editPodClique(s *fuzzinput.Source, old *copsev1alpha1.PodClique) *copsev1alpha1.PodClique {
	pclq := old.DeepCopy()
	for range s.IntIn(1, 3) {
		switch s.Intn(7) {
		case 0:
			pclq.Spec.Replicas = s.Replicas()
		case 1:
			pclq.Spec.MinAvailable = s.OptionalReplicas()
		case 2:
			pclq.Spec.ScaleConfig = s.AutoScalingConfig()
		case 3:
			pclq.Spec.PodSpec = s.PodSpec()
		case 4:
			pclq.Spec.RoleName = s.CliqueName()
		case 5:
			pclq.Labels = s.Labels()
		default:
			pclq.Spec = s.PodCliqueSpec()
		}
	}
	return pclq
}

// FuzzValidatePodClique validates a PodClique (the JSON of one, or one
// generated from the bytes) created, and updated from old (the new object
// is the JSON of one, or an edit of old generated from the bytes), owned by
// no PodCliqueSet, an Inference or a Training one. Every error names a
// field and the rule; the same input gives the same errors; an update that
// keeps the spec is accepted, one that changes it gets the errors of a new
// object; the Training rules apply only under a Training owner, and only
// when trainingRulesConcern says so (the webhook reads the owner only
// then); an update that adds no pods passes the size limit.
//
// maxPods is limits.maxPodsPerReplica; the default limits when not positive.
func FuzzValidatePodClique(f *testing.F) {
	withImage := func(pclq *copsev1alpha1.PodClique) *copsev1alpha1.PodClique {
		pclq = pclq.DeepCopy()
		pclq.Spec.PodSpec.Containers = []corev1.Container{{Name: "main", Image: "example.com/train:2"}}
		return pclq
	}
	autoscaled := func(pclq *copsev1alpha1.PodClique, maxReplicas int32) *copsev1alpha1.PodClique {
		pclq = pclq.DeepCopy()
		pclq.Spec.ScaleConfig = &grovecorev1alpha1.AutoScalingConfig{MaxReplicas: maxReplicas}
		return pclq
	}
	always := podClique(3, nil)
	always.Spec.PodSpec.RestartPolicy = corev1.RestartPolicyAlways
	// Inputs of TestValidateCreate, TestValidateUpdate, TestValidateTraining
	// and TestValidateSize.
	for _, seed := range []struct {
		old, new *copsev1alpha1.PodClique
		owner    byte
	}{
		{podClique(3, ptr.To[int32](3)), podClique(3, ptr.To[int32](3)), 0},
		{podClique(3, nil), podClique(0, ptr.To[int32](1)), 0},
		{podClique(3, ptr.To[int32](2)), podClique(5, ptr.To[int32](2)), 0},
		{podClique(3, ptr.To[int32](2)), podClique(1, ptr.To[int32](2)), 0},
		{podClique(3, ptr.To[int32](2)), podClique(3, ptr.To[int32](4)), 1},
		{podClique(3, ptr.To[int32](2)), podClique(3, ptr.To[int32](0)), 2},
		{podClique(2, ptr.To[int32](2)), podClique(4, ptr.To[int32](2)), 2},
		{podClique(2, ptr.To[int32](2)), withImage(podClique(2, ptr.To[int32](2))), 2},
		{podClique(2, ptr.To[int32](2)), autoscaled(podClique(2, ptr.To[int32](2)), 4), 2},
		{podClique(2, nil), always, 2},
		{podClique(4, nil), podClique(40000, nil), 1},
		{podClique(50000, nil), podClique(40000, nil), 0},
		{podClique(2, nil), autoscaled(podClique(2, nil), 40000), 3},
	} {
		f.Add(fuzzinput.JSON(seed.old), fuzzinput.JSON(seed.new), seed.owner, int64(0))
	}
	f.Fuzz(func(t *testing.T, oldDoc, newDoc []byte, ownerKind byte, maxPods int64) {
		old := fuzzinput.Object(oldDoc, (*fuzzinput.Source).PodClique)
		pclq := fuzzinput.Object(newDoc, func(s *fuzzinput.Source) *copsev1alpha1.PodClique { return editPodClique(s, old) })
		var owner *copsev1alpha1.PodCliqueSet
		if workload := fuzzOwnerWorkloads[int(ownerKind)%len(fuzzOwnerWorkloads)]; workload != nil {
			owner = webhooktest.NewFamily("job", *workload).Set
		}
		limits := webhooktest.LimitsOf(maxPods)

		webhooktest.ExpectCreateAndUpdate(t, old, pclq, (*copsev1alpha1.PodClique).DeepCopy,
			func(a, b *copsev1alpha1.PodClique) bool { return equality.Semantic.DeepEqual(a.Spec, b.Spec) }, ValidateCreate, ValidateUpdate)

		for _, before := range []*copsev1alpha1.PodClique{nil, old} {
			training := ValidateTraining(before, pclq, owner)
			webhooktest.ExpectWellFormed(t, "ValidateTraining", training)
			webhooktest.ExpectSameErrors(t, "ValidateTraining twice", training, ValidateTraining(before, pclq.DeepCopy(), owner))
			if len(training) > 0 && (!owner.IsTraining() || !trainingRulesConcern(before, pclq)) {
				t.Fatalf("Training rules refuse a change the webhook would not check (owner Training %v, concern %v): %v",
					owner.IsTraining(), trainingRulesConcern(before, pclq), training)
			}

			size := ValidateSize(before, pclq, limits)
			webhooktest.ExpectWellFormed(t, "ValidateSize", size)
			pods, _ := podcount.Clique(&pclq.Spec, specPath)
			if before != nil {
				if podsBefore, _ := podcount.Clique(&before.Spec, specPath); pods <= podsBefore && len(size) > 0 {
					t.Fatalf("an update from %d to %d pods is refused: %v", podsBefore, pods, size)
				}
			}
			if pods <= limits.MaxPodsPerReplica && len(size) > 0 {
				t.Fatalf("%d pods within the limit %d are refused: %v", pods, limits.MaxPodsPerReplica, size)
			}
			if before == nil && pods > limits.MaxPodsPerReplica && len(size) != 1 {
				t.Fatalf("%d pods over the limit %d: %v", pods, limits.MaxPodsPerReplica, size)
			}
		}
	})
}
