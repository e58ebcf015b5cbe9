package webhook

import (
	"strings"
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook/webhooktest"
)

// The operator's limits on pods through the registered handlers: the limits
// given to Register are the ones enforced, by every validating webhook.

func TestRegisterRefusesLimitsThatWereNotDefaulted(t *testing.T) {
	for _, limits := range []configv1alpha1.LimitsConfiguration{
		{},
		{MaxPodsPerReplica: 10},
		{MaxPodsPerReplica: -1, MaxPodsPerPodCliqueSet: 10},
	} {
		err := Register(ctrlwebhook.NewServer(ctrlwebhook.Options{}), nil, limits, Features{TrainJob: true})
		if err == nil || !strings.Contains(err.Error(), "pod limits must be positive") {
			t.Errorf("Register with %+v: err = %v, want a refusal", limits, err)
		}
	}
}

func TestAMillionPodCliqueIsRefused(t *testing.T) {
	huge := strings.Replace(minimalPodCliqueSet, `"replicas": 3,`, `"replicas": 1000000,`, 1)
	expectDenied(t, review(t, newMux(t), ValidatePodCliqueSetPath, admissionv1.Create, huge, ""),
		`PodCliqueSet.grove.io "llm" is invalid: spec.template.cliques[0].spec.replicas: Invalid value: 1000000: `+
			`a replica of this PodCliqueSet would have 1000000 pods, more than the operator's limit limits.maxPodsPerReplica=32768`)
	// An update that adds pods is checked too.
	expectDenied(t, review(t, newMux(t), ValidatePodCliqueSetPath, admissionv1.Update, huge, minimalPodCliqueSet),
		`PodCliqueSet.grove.io "llm" is invalid: spec.template.cliques[0].spec.replicas: Invalid value: 1000000: `+
			`a replica of this PodCliqueSet would have 1000000 pods, more than the operator's limit limits.maxPodsPerReplica=32768`)
}

func TestConfiguredLimitsApplyToEveryKind(t *testing.T) {
	// serve: a standalone PodClique (2 pods) and a PodCliqueScalingGroup of
	// 2 replicas of clique worker, which has 2 pods in the template.
	serve := webhooktest.NewFamily("serve", copsev1alpha1.WorkloadTypeInference)
	serve.Set.Spec.Template.Cliques = []*grovecorev1alpha1.PodCliqueTemplateSpec{
		{Name: "worker", Spec: grovecorev1alpha1.PodCliqueSpec{RoleName: "worker", Replicas: 2}},
	}
	mux := newMuxWithLimits(t, configv1alpha1.LimitsConfiguration{MaxPodsPerReplica: 5, MaxPodsPerPodCliqueSet: 10}, serve.Objects()...)

	pcs := strings.Replace(minimalPodCliqueSet, `"spec": {"replicas": 1,`, `"spec": {"replicas": 4,`, 1)
	expectDenied(t, review(t, mux, ValidatePodCliqueSetPath, admissionv1.Create, pcs, ""),
		`PodCliqueSet.grove.io "llm" is invalid: spec.replicas: Invalid value: 4: `+
			`this PodCliqueSet (4 replicas of 3 pods) would have 12 pods, more than the operator's limit limits.maxPodsPerPodCliqueSet=10`)

	bigClique := serve.Standalone.DeepCopy()
	bigClique.Spec.Replicas, bigClique.Spec.MinAvailable = 6, nil
	expectDenied(t, review(t, mux, ValidatePodCliquePath, admissionv1.Update, mustJSON(t, bigClique), mustJSON(t, serve.Standalone)),
		`PodClique.grove.io "serve-0-leader" is invalid: spec.replicas: Invalid value: 6: `+
			`this PodClique would have 6 pods, more than the operator's limit limits.maxPodsPerReplica=5`)

	bigGroup := serve.ScalingGroup.DeepCopy()
	bigGroup.Spec.Replicas = 3
	expectDenied(t, review(t, mux, ValidatePodCliqueScalingGroupPath, admissionv1.Create, mustJSON(t, bigGroup), ""),
		`PodCliqueScalingGroup.grove.io "serve-0-decode" is invalid: spec.replicas: Invalid value: 3: `+
			`this PodCliqueScalingGroup (2 pods per replica) would have 6 pods, more than the operator's limit limits.maxPodsPerReplica=5`)
	expectAllowed(t, review(t, mux, ValidatePodCliqueScalingGroupPath, admissionv1.Create, mustJSON(t, serve.ScalingGroup), ""))

	expectDenied(t, scaleReview(t, mux, ValidatePodCliqueScalePath, "podcliques", serve.Standalone.Name, 2, 6),
		`PodClique.grove.io "serve-0-leader" is invalid: spec.replicas: Invalid value: 6: `+
			`this PodClique would have 6 pods, more than the operator's limit limits.maxPodsPerReplica=5`)
	expectDenied(t, scaleReview(t, mux, ValidatePodCliqueScalingGroupScalePath, "podcliquescalinggroups", serve.ScalingGroup.Name, 2, 3),
		`PodCliqueScalingGroup.grove.io "serve-0-decode" is invalid: spec.replicas: Invalid value: 3: `+
			`this PodCliqueScalingGroup (2 pods per replica) would have 6 pods, more than the operator's limit limits.maxPodsPerReplica=5`)
	// Scaling down is allowed even above the limit.
	expectAllowed(t, scaleReview(t, mux, ValidatePodCliqueScalePath, "podcliques", serve.Standalone.Name, 9, 7))
	expectAllowed(t, scaleReview(t, mux, ValidatePodCliqueScalingGroupScalePath, "podcliquescalinggroups", serve.ScalingGroup.Name, 2, 1))
}
