package trainjob

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
)

// The operator's mnnvl.defaultGroup reaches new TrainJobs copse runs that
// name no group, and nothing else.
func TestDefaulterGivesTheDefaultMNNVLGroup(t *testing.T) {
	group := func(value string) map[string]string {
		return map[string]string{copsev1alpha1.AnnotationMNNVLGroup: value}
	}
	cases := []struct {
		name         string
		annotations  map[string]string
		managedBy    string
		operation    admissionv1.Operation
		defaultGroup string
		want         map[string]string
	}{
		{name: "option off", operation: admissionv1.Create},
		{name: "created without a group", operation: admissionv1.Create, defaultGroup: "nvl", want: group("nvl")},
		{name: "created with a group of its own", annotations: group("fabric"), operation: admissionv1.Create, defaultGroup: "nvl", want: group("fabric")},
		{name: "created opted out", annotations: group("none"), operation: admissionv1.Create, defaultGroup: "nvl", want: group("none")},
		{name: "created for another cluster to run", managedBy: "kueue.x-k8s.io/multikueue", operation: admissionv1.Create, defaultGroup: "nvl"},
		{name: "updated (the group is fixed at creation)", operation: admissionv1.Update, defaultGroup: "nvl"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tj := &trainerv1alpha1.TrainJob{}
			tj.Annotations = tc.annotations
			if tc.managedBy != "" {
				tj.Spec.ManagedBy = ptr.To(tc.managedBy)
			}
			raw, err := json.Marshal(tj)
			if err != nil {
				t.Fatal(err)
			}
			ctx := admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: tc.operation, OldObject: runtime.RawExtension{Raw: raw}}})
			d := Defaulter{Clock: clocktesting.NewFakePassiveClock(time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)), MNNVLDefaultGroup: tc.defaultGroup}
			if err := d.Default(ctx, tj); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, tj.Annotations, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
		})
	}
}
