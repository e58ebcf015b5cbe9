package trainjob

import (
	"fmt"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
)

// RuntimeRefTarget is where a TrainJob's runtimeRef points: an empty object
// of the runtime's kind, to read into, and the key to read it by (a
// TrainingRuntime of the TrainJob's namespace, or a ClusterTrainingRuntime).
// A reference to another API group or kind is an error.
func RuntimeRefTarget(trainJob *trainerv1alpha1.TrainJob) (client.Object, client.ObjectKey, error) {
	ref := trainJob.Spec.RuntimeRef
	if group := ptr.Deref(ref.APIGroup, trainerv1alpha1.GroupName); group != trainerv1alpha1.GroupName {
		return nil, client.ObjectKey{}, fmt.Errorf("spec.runtimeRef.apiGroup %q is not %s", group, trainerv1alpha1.GroupName)
	}
	switch kind := RuntimeKind(trainJob); kind {
	case trainerv1alpha1.TrainingRuntimeKind:
		return &trainerv1alpha1.TrainingRuntime{}, client.ObjectKey{Namespace: trainJob.Namespace, Name: ref.Name}, nil
	case trainerv1alpha1.ClusterTrainingRuntimeKind:
		return &trainerv1alpha1.ClusterTrainingRuntime{}, client.ObjectKey{Name: ref.Name}, nil
	default:
		return nil, client.ObjectKey{}, fmt.Errorf("spec.runtimeRef.kind %q is not a runtime kind", kind)
	}
}

// RuntimeOf is the Runtime of a TrainingRuntime or ClusterTrainingRuntime
// object read through RuntimeRefTarget.
func RuntimeOf(obj client.Object) Runtime {
	switch rt := obj.(type) {
	case *trainerv1alpha1.TrainingRuntime:
		return Runtime{Kind: trainerv1alpha1.TrainingRuntimeKind, Name: rt.Name, Spec: rt.Spec}
	case *trainerv1alpha1.ClusterTrainingRuntime:
		return Runtime{Kind: trainerv1alpha1.ClusterTrainingRuntimeKind, Name: rt.Name, Spec: rt.Spec}
	}
	return Runtime{}
}
