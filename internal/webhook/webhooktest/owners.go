package webhooktest

import (
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// Family is a PodCliqueSet with the children its controllers create: a
// standalone PodClique, a PodCliqueScalingGroup, and a PodClique of that
// group, linked by controller owner references with distinct UIDs.
type Family struct {
	Set          *copsev1alpha1.PodCliqueSet
	Standalone   *copsev1alpha1.PodClique
	ScalingGroup *copsev1alpha1.PodCliqueScalingGroup
	Grouped      *copsev1alpha1.PodClique
}

// NewFamily returns the objects of a PodCliqueSet named name in namespace
// "ml" with the given workload type. UIDs derive from name, so families of
// different names do not share any.
func NewFamily(name string, workloadType copsev1alpha1.WorkloadType) *Family {
	pcs := &copsev1alpha1.PodCliqueSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: copsev1alpha1.SchemeGroupVersion.String(), Kind: "PodCliqueSet"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name, UID: types.UID(name + "-pcs-uid")},
	}
	pcs.Spec.WorkloadType = workloadType
	pcs.Spec.Replicas = 1
	pcsg := &copsev1alpha1.PodCliqueScalingGroup{
		TypeMeta: metav1.TypeMeta{APIVersion: copsev1alpha1.SchemeGroupVersion.String(), Kind: "PodCliqueScalingGroup"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name + "-0-decode", UID: types.UID(name + "-pcsg-uid"),
			OwnerReferences: []metav1.OwnerReference{ControllerRef(pcs.ObjectMeta, "PodCliqueSet")}},
		Spec: grovecorev1alpha1.PodCliqueScalingGroupSpec{Replicas: 2, MinAvailable: ptr.To[int32](1), CliqueNames: []string{"worker"}},
	}
	return &Family{
		Set:          pcs,
		Standalone:   podClique(name+"-0-leader", name+"-leader-uid", ControllerRef(pcs.ObjectMeta, "PodCliqueSet")),
		ScalingGroup: pcsg,
		Grouped:      podClique(name+"-0-decode-0-worker", name+"-worker-uid", ControllerRef(pcsg.ObjectMeta, "PodCliqueScalingGroup")),
	}
}

// Objects returns the family's objects, for a fake client.
func (f *Family) Objects() []client.Object {
	return []client.Object{f.Set, f.Standalone, f.ScalingGroup, f.Grouped}
}

// ControllerRef is the controller owner reference to a grove.io object.
func ControllerRef(owner metav1.ObjectMeta, kind string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: copsev1alpha1.SchemeGroupVersion.String(), Kind: kind, Name: owner.Name,
		UID: owner.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

func podClique(name, uid string, owner metav1.OwnerReference) *copsev1alpha1.PodClique {
	return &copsev1alpha1.PodClique{
		TypeMeta:   metav1.TypeMeta{APIVersion: copsev1alpha1.SchemeGroupVersion.String(), Kind: "PodClique"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name, UID: types.UID(uid), OwnerReferences: []metav1.OwnerReference{owner}},
		Spec: grovecorev1alpha1.PodCliqueSpec{RoleName: "worker", Replicas: 2, MinAvailable: ptr.To[int32](2),
			PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "example.com/train:1"}}}},
	}
}

// Scheme holds the grove.io kinds.
func Scheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := copsev1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return scheme
}

// Reader is a fake API reader holding objs.
func Reader(t testing.TB, objs ...client.Object) client.Client {
	t.Helper()
	return fake.NewClientBuilder().WithScheme(Scheme(t)).WithObjects(objs...).Build()
}
