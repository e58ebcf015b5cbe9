package webhook

import (
	"encoding/json"
	"net/http"
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook/podcliqueset"
	"github.com/copse-dev/copse/internal/webhook/webhooktest"
)

// The Training rules through the registered handlers: the owner is read with
// the reader given to Register, and denials are 422 Invalid with the field.

func mustJSON(t *testing.T, obj any) string {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func expectDenied(t *testing.T, response *admissionv1.AdmissionResponse, want string) {
	t.Helper()
	if response.Allowed || response.Result == nil || response.Result.Message != want ||
		response.Result.Code != http.StatusUnprocessableEntity || response.Result.Reason != metav1.StatusReasonInvalid {
		t.Errorf("allowed=%v, result %+v\n  want code 422, reason Invalid, message %q", response.Allowed, response.Result, want)
	}
}

func expectAllowed(t *testing.T, response *admissionv1.AdmissionResponse) {
	t.Helper()
	if !response.Allowed {
		t.Errorf("denied: %+v", response.Result)
	}
}

func TestTrainingRulesOfPodCliquesAndScalingGroups(t *testing.T) {
	training := webhooktest.NewFamily("job", copsev1alpha1.WorkloadTypeTraining)
	inference := webhooktest.NewFamily("serve", copsev1alpha1.WorkloadTypeInference)
	mux := newMux(t, append(training.Objects(), inference.Objects()...)...)

	scaled := training.Grouped.DeepCopy()
	scaled.Spec.Replicas = 3
	expectDenied(t, review(t, mux, ValidatePodCliquePath, admissionv1.Update, mustJSON(t, scaled), mustJSON(t, training.Grouped)),
		`PodClique.grove.io "job-0-decode-0-worker" is invalid: spec.replicas: Forbidden: is immutable because the owning PodCliqueSet ml/job has workloadType Training`)

	autoscaled := training.Standalone.DeepCopy()
	autoscaled.Spec.ScaleConfig = &grovecorev1alpha1.AutoScalingConfig{MaxReplicas: 4}
	expectDenied(t, review(t, mux, ValidatePodCliquePath, admissionv1.Create, mustJSON(t, autoscaled), ""),
		`PodClique.grove.io "job-0-leader" is invalid: spec.autoScalingConfig: Forbidden: is not allowed because the owning PodCliqueSet ml/job has workloadType Training`)

	expectAllowed(t, review(t, mux, ValidatePodCliquePath, admissionv1.Create, mustJSON(t, training.Grouped), ""))

	scaledGroup := training.ScalingGroup.DeepCopy()
	scaledGroup.Spec.Replicas = 1
	expectDenied(t, review(t, mux, ValidatePodCliqueScalingGroupPath, admissionv1.Update, mustJSON(t, scaledGroup), mustJSON(t, training.ScalingGroup)),
		`PodCliqueScalingGroup.grove.io "job-0-decode" is invalid: spec.replicas: Forbidden: is immutable because the owning PodCliqueSet ml/job has workloadType Training`)

	scaled = inference.Grouped.DeepCopy()
	scaled.Spec.Replicas = 3
	expectAllowed(t, review(t, mux, ValidatePodCliquePath, admissionv1.Update, mustJSON(t, scaled), mustJSON(t, inference.Grouped)))
}

func TestTrainingRulesOfTheScaleSubresource(t *testing.T) {
	training := webhooktest.NewFamily("job", copsev1alpha1.WorkloadTypeTraining)
	inference := webhooktest.NewFamily("serve", copsev1alpha1.WorkloadTypeInference)
	mux := newMux(t, append(training.Objects(), inference.Objects()...)...)

	expectDenied(t, scaleReview(t, mux, ValidatePodCliqueScalePath, "podcliques", training.Standalone.Name, 2, 4),
		`PodClique.grove.io "job-0-leader" is invalid: spec.replicas: Forbidden: is immutable because the owning PodCliqueSet ml/job has workloadType Training`)
	expectDenied(t, scaleReview(t, mux, ValidatePodCliqueScalingGroupScalePath, "podcliquescalinggroups", training.ScalingGroup.Name, 2, 3),
		`PodCliqueScalingGroup.grove.io "job-0-decode" is invalid: spec.replicas: Forbidden: is immutable because the owning PodCliqueSet ml/job has workloadType Training`)
	expectAllowed(t, scaleReview(t, mux, ValidatePodCliqueScalePath, "podcliques", inference.Grouped.Name, 2, 4))
	expectAllowed(t, scaleReview(t, mux, ValidatePodCliqueScalingGroupScalePath, "podcliquescalinggroups", inference.ScalingGroup.Name, 2, 4))
}

func TestTrainingRulesOfPodCliqueSets(t *testing.T) {
	mux := newMux(t)
	for _, workloadType := range []copsev1alpha1.WorkloadType{copsev1alpha1.WorkloadTypeTraining, copsev1alpha1.WorkloadTypeInference} {
		old := &copsev1alpha1.PodCliqueSet{
			TypeMeta:   metav1.TypeMeta{APIVersion: copsev1alpha1.SchemeGroupVersion.String(), Kind: "PodCliqueSet"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "llm"},
		}
		old.Spec.WorkloadType = workloadType
		old.Spec.Replicas = 1
		old.Spec.Template.Cliques = []*grovecorev1alpha1.PodCliqueTemplateSpec{{Name: "worker", Spec: grovecorev1alpha1.PodCliqueSpec{
			RoleName: "worker", Replicas: 2, PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "example.com/llm:1"}}}}}}
		podcliqueset.Default(old)
		updated := old.DeepCopy()
		updated.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Image = "example.com/llm:2"

		response := review(t, mux, ValidatePodCliqueSetPath, admissionv1.Update, mustJSON(t, updated), mustJSON(t, old))
		if workloadType == copsev1alpha1.WorkloadTypeInference {
			expectAllowed(t, response)
			continue
		}
		expectDenied(t, response, `PodCliqueSet.grove.io "llm" is invalid: spec.template.cliques[0].spec.podSpec: Forbidden: `+
			`pod template changes are not allowed when spec.workloadType is Training (they would need a rolling update, which Training workloads do not do)`)
	}
}

// scaleReview sends the review of an update of the scale subresource of
// resource name (in namespace ml) from from to to replicas, as the API
// server does for `kubectl scale`.
func scaleReview(t *testing.T, mux http.Handler, path, resource, name string, from, to int32) *admissionv1.AdmissionResponse {
	t.Helper()
	scale := func(replicas int32) string {
		return mustJSON(t, &autoscalingv1.Scale{
			TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name},
			Spec:       autoscalingv1.ScaleSpec{Replicas: replicas},
		})
	}
	return reviewRequest(t, mux, path, &admissionv1.AdmissionRequest{
		UID:         "3f1c1c1e-0000-4000-8000-000000000002",
		Kind:        metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"},
		Resource:    metav1.GroupVersionResource{Group: copsev1alpha1.GroupName, Version: "v1alpha1", Resource: resource},
		SubResource: "scale",
		Namespace:   "ml",
		Name:        name,
		Operation:   admissionv1.Update,
		Object:      runtime.RawExtension{Raw: []byte(scale(to))},
	}, scale(from))
}
