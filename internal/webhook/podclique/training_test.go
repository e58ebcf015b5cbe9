package podclique

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook/webhooktest"
)

const (
	replicasImmutable = "spec.replicas: Forbidden: is immutable because the owning PodCliqueSet ml/job has workloadType Training"
	noAutoScaling     = "spec.autoScalingConfig: Forbidden: is not allowed because the owning PodCliqueSet ml/job has workloadType Training"
	podSpecImmutable  = "spec.podSpec: Forbidden: is immutable because the owning PodCliqueSet ml/job has workloadType Training"
	minAvailImmutable = "spec.minAvailable: Forbidden: is immutable because the owning PodCliqueSet ml/job has workloadType Training"
	neverRestart      = `spec.podSpec.restartPolicy: Invalid value: "Always": must be Never when the workload is Training`
)

func withRoleName(p *copsev1alpha1.PodClique) { p.Spec.RoleName = "renamed" }

func withRestartPolicy(policy corev1.RestartPolicy) func(*copsev1alpha1.PodClique) {
	return func(p *copsev1alpha1.PodClique) { p.Spec.PodSpec.RestartPolicy = policy }
}

func withReplicas(replicas int32) func(*copsev1alpha1.PodClique) {
	return func(p *copsev1alpha1.PodClique) { p.Spec.Replicas = replicas }
}

func withAutoScaling(p *copsev1alpha1.PodClique) {
	p.Spec.ScaleConfig = &grovecorev1alpha1.AutoScalingConfig{MaxReplicas: 4}
}

func withImage(p *copsev1alpha1.PodClique) {
	p.Spec.PodSpec.Containers[0].Image = "example.com/train:2"
}

func TestValidateTraining(t *testing.T) {
	tests := []struct {
		name     string
		create   bool // no old object
		change   func(*copsev1alpha1.PodClique)
		workload copsev1alpha1.WorkloadType
		noOwner  bool
		want     []string
	}{
		{name: "Training: creating", create: true, workload: copsev1alpha1.WorkloadTypeTraining, change: func(*copsev1alpha1.PodClique) {}},
		{name: "Training: creating with autoscaling", create: true, workload: copsev1alpha1.WorkloadTypeTraining, change: withAutoScaling,
			want: []string{noAutoScaling}},
		{name: "Training: scaling up", workload: copsev1alpha1.WorkloadTypeTraining, change: withReplicas(3), want: []string{replicasImmutable}},
		{name: "Training: scaling down", workload: copsev1alpha1.WorkloadTypeTraining, change: withReplicas(1), want: []string{replicasImmutable}},
		{name: "Training: adding autoscaling and scaling", workload: copsev1alpha1.WorkloadTypeTraining,
			change: func(p *copsev1alpha1.PodClique) { withAutoScaling(p); p.Spec.Replicas = 4 },
			want:   []string{replicasImmutable, noAutoScaling}},
		{name: "Training: a new image", workload: copsev1alpha1.WorkloadTypeTraining, change: withImage, want: []string{podSpecImmutable}},
		{name: "Training: a new minAvailable", workload: copsev1alpha1.WorkloadTypeTraining,
			change: func(p *copsev1alpha1.PodClique) { p.Spec.MinAvailable = ptr.To[int32](1) }, want: []string{minAvailImmutable}},
		{name: "Training: creating with restartPolicy Always", create: true, workload: copsev1alpha1.WorkloadTypeTraining,
			change: withRestartPolicy(corev1.RestartPolicyAlways), want: []string{neverRestart}},
		{name: "Training: other spec changes", workload: copsev1alpha1.WorkloadTypeTraining, change: withRoleName},
		{name: "Inference: a new image", workload: copsev1alpha1.WorkloadTypeInference, change: withImage},
		{name: "Inference: restartPolicy Always", create: true, workload: copsev1alpha1.WorkloadTypeInference, change: withRestartPolicy(corev1.RestartPolicyAlways)},
		{name: "Inference: scaling", workload: copsev1alpha1.WorkloadTypeInference, change: withReplicas(5)},
		{name: "Inference: autoscaling", workload: copsev1alpha1.WorkloadTypeInference, change: withAutoScaling},
		{name: "Inference: creating with autoscaling", create: true, workload: copsev1alpha1.WorkloadTypeInference, change: withAutoScaling},
		{name: "no owner: scaling", noOwner: true, change: withReplicas(5)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := webhooktest.NewFamily("job", tc.workload)
			old, pclq := f.Standalone, f.Standalone.DeepCopy()
			tc.change(pclq)
			if tc.create {
				old = nil
			}
			owner := f.Set
			if tc.noOwner {
				owner = nil
			}
			webhooktest.ExpectErrors(t, ValidateTraining(old, pclq, owner), tc.want)
		})
	}
}

// TestValidatorFindsTheOwner runs the webhook's Validator against a fake API
// reader, for a standalone PodClique and one of a scaling group.
func TestValidatorFindsTheOwner(t *testing.T) {
	training := webhooktest.NewFamily("job", copsev1alpha1.WorkloadTypeTraining)
	inference := webhooktest.NewFamily("serve", copsev1alpha1.WorkloadTypeInference)
	v := Validator{Reader: webhooktest.Reader(t, append(training.Objects(), inference.Objects()...)...), Limits: webhooktest.DefaultLimits}
	ctx := context.Background()
	tests := []struct {
		name   string
		create bool
		pclq   *copsev1alpha1.PodClique
		change func(*copsev1alpha1.PodClique)
		want   string
	}{
		{name: "scaling a standalone Training PodClique", pclq: training.Standalone, change: withReplicas(3),
			want: `PodClique.grove.io "job-0-leader" is invalid: ` + replicasImmutable},
		{name: "scaling a Training PodClique of a scaling group", pclq: training.Grouped, change: withReplicas(3),
			want: `PodClique.grove.io "job-0-decode-0-worker" is invalid: ` + replicasImmutable},
		{name: "creating a Training PodClique with autoscaling", create: true, pclq: training.Grouped, change: withAutoScaling,
			want: noAutoScaling},
		{name: "creating a Training PodClique", create: true, pclq: training.Grouped, change: func(*copsev1alpha1.PodClique) {}},
		{name: "a new image on a Training PodClique", pclq: training.Grouped, change: withImage,
			want: `PodClique.grove.io "job-0-decode-0-worker" is invalid: ` + podSpecImmutable},
		{name: "scaling an Inference PodClique", pclq: inference.Grouped, change: withReplicas(3)},
		{name: "the existing rules still apply", pclq: inference.Grouped, change: withReplicas(1),
			want: "spec.minAvailable: Invalid value: 2: must not be greater than spec.replicas (1)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pclq := tc.pclq.DeepCopy()
			tc.change(pclq)
			var err error
			if tc.create {
				_, err = v.ValidateCreate(ctx, pclq)
			} else {
				_, err = v.ValidateUpdate(ctx, tc.pclq, pclq)
			}
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("denied: %v", err)
			case tc.want != "" && (err == nil || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("err = %v, want an Invalid error containing %q", err, tc.want)
			}
		})
	}
}

// TestValidatorReadsOnlyWhenATrainingRuleConcernsTheChange keeps the
// controllers' routine writes free of API reads, and refuses (rather than
// admits) a change it cannot check.
func TestValidatorReadsOnlyWhenATrainingRuleConcernsTheChange(t *testing.T) {
	f := webhooktest.NewFamily("job", copsev1alpha1.WorkloadTypeTraining)
	reads := 0
	v := Validator{Reader: fake.NewClientBuilder().WithScheme(webhooktest.Scheme(t)).WithObjects(f.Objects()...).
		WithInterceptorFuncs(interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			reads++
			return errors.New("connection refused")
		}}).Build(), Limits: webhooktest.DefaultLimits}
	ctx := context.Background()

	changed := f.Standalone.DeepCopy()
	withRoleName(changed)
	if _, err := v.ValidateCreate(ctx, f.Standalone); err != nil {
		t.Errorf("create: %v", err)
	}
	if _, err := v.ValidateUpdate(ctx, f.Standalone, changed); err != nil {
		t.Errorf("update of the role name: %v", err)
	}
	if reads != 0 {
		t.Errorf("%d owner reads for changes no Training rule concerns", reads)
	}

	withReplicas(3)(changed)
	_, err := v.ValidateUpdate(ctx, f.Standalone, changed)
	if err == nil || !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("err = %v, want an internal error with the read error", err)
	}
}
