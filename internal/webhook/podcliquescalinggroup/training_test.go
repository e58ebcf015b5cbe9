package podcliquescalinggroup

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook/webhooktest"
)

const replicasImmutable = "spec.replicas: Forbidden: is immutable because the owning PodCliqueSet ml/job has workloadType Training"

func TestValidateTraining(t *testing.T) {
	tests := []struct {
		name     string
		create   bool
		replicas int32 // the new replica count; the old one is 2
		workload copsev1alpha1.WorkloadType
		noOwner  bool
		want     []string
	}{
		{name: "Training: creating", create: true, replicas: 2, workload: copsev1alpha1.WorkloadTypeTraining},
		{name: "Training: the same replicas", replicas: 2, workload: copsev1alpha1.WorkloadTypeTraining},
		{name: "Training: scaling up", replicas: 3, workload: copsev1alpha1.WorkloadTypeTraining, want: []string{replicasImmutable}},
		{name: "Training: scaling down", replicas: 1, workload: copsev1alpha1.WorkloadTypeTraining, want: []string{replicasImmutable}},
		{name: "Inference: scaling", replicas: 5, workload: copsev1alpha1.WorkloadTypeInference},
		{name: "no owner: scaling", replicas: 5, noOwner: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := webhooktest.NewFamily("job", tc.workload)
			old, pcsg := f.ScalingGroup, f.ScalingGroup.DeepCopy()
			pcsg.Spec.Replicas = tc.replicas
			if tc.create {
				old = nil
			}
			owner := f.Set
			if tc.noOwner {
				owner = nil
			}
			webhooktest.ExpectErrors(t, ValidateTraining(old, pcsg, owner), tc.want)
		})
	}
}

func TestValidatorFindsTheOwner(t *testing.T) {
	training := webhooktest.NewFamily("job", copsev1alpha1.WorkloadTypeTraining)
	inference := webhooktest.NewFamily("serve", copsev1alpha1.WorkloadTypeInference)
	v := Validator{Reader: webhooktest.Reader(t, append(training.Objects(), inference.Objects()...)...), Limits: webhooktest.DefaultLimits}
	ctx := context.Background()

	scaled := training.ScalingGroup.DeepCopy()
	scaled.Spec.Replicas = 3
	_, err := v.ValidateUpdate(ctx, training.ScalingGroup, scaled)
	want := `PodCliqueScalingGroup.grove.io "job-0-decode" is invalid: ` + replicasImmutable
	if err == nil || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("scaling a Training group: err = %v, want %q", err, want)
	}

	if _, err := v.ValidateCreate(ctx, training.ScalingGroup); err != nil {
		t.Errorf("creating a Training group: %v", err)
	}

	scaled = inference.ScalingGroup.DeepCopy()
	scaled.Spec.Replicas = 3
	if _, err := v.ValidateUpdate(ctx, inference.ScalingGroup, scaled); err != nil {
		t.Errorf("scaling an Inference group: %v", err)
	}
}
