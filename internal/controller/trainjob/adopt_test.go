package trainjob

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// trainerJobSet is a JobSet as Kubeflow Trainer builds it: no copse build
// hash, env in an order of its own.
func trainerJobSet(suspend bool) *jobsetv1alpha2.JobSet {
	js := &jobsetv1alpha2.JobSet{ObjectMeta: metav1.ObjectMeta{Name: "tj", Namespace: "ns", Labels: map[string]string{"team": "a"}}}
	js.Spec.Suspend = ptr.To(suspend)
	rjob := jobsetv1alpha2.ReplicatedJob{Name: "node", Replicas: 1}
	rjob.Template.Spec.Template.Spec.Containers = []corev1.Container{{Name: "node", Image: "img",
		Env: []corev1.EnvVar{{Name: "B", Value: "2"}, {Name: "A", Value: "1"}}}}
	js.Spec.ReplicatedJobs = []jobsetv1alpha2.ReplicatedJob{rjob}
	return js
}

// copseBuild is copse's build of the same TrainJob: the same JobSet but
// for the env order, with a suspension and Kueue's placement as given.
func copseBuild(suspend bool, nodeSelector map[string]string) *jobsetv1alpha2.JobSet {
	js := trainerJobSet(suspend)
	pod := &js.Spec.ReplicatedJobs[0].Template.Spec.Template
	pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}}
	pod.Spec.NodeSelector = nodeSelector
	if nodeSelector != nil {
		pod.Labels = map[string]string{"kueue.x-k8s.io/podset": "node"}
		pod.Spec.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}
	}
	return js
}

func TestAdoptedJobSetUpdate(t *testing.T) {
	flavor := map[string]string{"pool": "a"}
	cases := []struct {
		name              string
		existing, desired *jobsetv1alpha2.JobSet
		trainJobSuspended bool
		// want is nil for no update; else the update's suspend and node
		// selector (the rest is checked to be the existing JobSet's).
		want         *bool
		wantSelector map[string]string
	}{
		{"running JobSet of a running TrainJob: never touched, even though copse's build differs",
			trainerJobSet(false), copseBuild(false, flavor), false, nil, nil},
		{"suspending a running TrainJob: suspend only (and the scheduling directives)",
			trainerJobSet(false), copseBuild(true, nil), true, ptr.To(true), nil},
		{"suspended and still suspended, build differs only outside what JobSet lets change: nothing",
			trainerJobSet(true), copseBuild(true, nil), true, nil, nil},
		{"resumed by Kueue with a flavor: suspend false and the flavor's placement",
			trainerJobSet(true), copseBuild(false, flavor), false, ptr.To(false), flavor},
		{"placement changed while suspended: taken, still suspended",
			trainerJobSet(true), copseBuild(true, flavor), true, ptr.To(true), flavor},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.existing.DeepCopy()
			got := adoptedJobSetUpdate(tc.existing, tc.desired, tc.trainJobSuspended)
			if diff := cmp.Diff(before, tc.existing); diff != "" {
				t.Fatalf("the existing JobSet was changed in place:\n%s", diff)
			}
			if tc.want == nil {
				if got != nil {
					t.Fatalf("updated an adopted JobSet that should stay as it is: %+v", got.Spec)
				}
				return
			}
			if got == nil {
				t.Fatal("no update")
			}
			if ptr.Deref(got.Spec.Suspend, false) != *tc.want {
				t.Errorf("suspend = %v, want %v", ptr.Deref(got.Spec.Suspend, false), *tc.want)
			}
			pod := got.Spec.ReplicatedJobs[0].Template.Spec.Template
			if diff := cmp.Diff(tc.wantSelector, pod.Spec.NodeSelector); diff != "" {
				t.Errorf("nodeSelector (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.existing.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers, pod.Spec.Containers); diff != "" {
				t.Errorf("the containers (immutable in a JobSet) were changed:\n%s", diff)
			}
			if builtByCopse(got) {
				t.Error("the adopted JobSet counts as copse's build: a later rebuild would replace its immutable fields")
			}
		})
	}
}

func TestBuiltByCopse(t *testing.T) {
	entry := func(manager string, op metav1.ManagedFieldsOperationType) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: op}
	}
	cases := []struct {
		name    string
		fields  []metav1.ManagedFieldsEntry
		stamped bool
		want    bool
	}{
		{name: "Kubeflow Trainer's: adopted", fields: []metav1.ManagedFieldsEntry{entry("trainer", metav1.ManagedFieldsOperationApply)}},
		{name: "Kubeflow Trainer's, updated by copse's adoption: still adopted", fields: []metav1.ManagedFieldsEntry{
			entry("trainer", metav1.ManagedFieldsOperationApply), entry(adoptionFieldOwner, metav1.ManagedFieldsOperationUpdate)}},
		{name: "suspended by copse's field owner without its build: not copse's build",
			fields: []metav1.ManagedFieldsEntry{entry(FieldOwner, metav1.ManagedFieldsOperationUpdate)}},
		{name: "applied by copse", want: true, fields: []metav1.ManagedFieldsEntry{
			entry("trainer", metav1.ManagedFieldsOperationApply), entry(FieldOwner, metav1.ManagedFieldsOperationApply)}},
		{name: "built by an earlier copse (the build hash stamp)", stamped: true, want: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			js := trainerJobSet(false)
			js.ManagedFields = tc.fields
			if tc.stamped {
				js.Annotations = map[string]string{legacyBuildHashAnnotation: "0123456789abcdef"}
			}
			if got := builtByCopse(js); got != tc.want {
				t.Errorf("builtByCopse = %t, want %t", got, tc.want)
			}
		})
	}
}
