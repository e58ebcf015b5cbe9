package training

import (
	"context"
	"errors"
	"strings"
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/kueue"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/webhook/webhooktest"
)

func TestOwningPodCliqueSet(t *testing.T) {
	tests := []struct {
		name string
		// setup returns the object to resolve and the objects the reader holds.
		setup     func(f *webhooktest.Family) (client.Object, []client.Object)
		wantOwner bool
	}{
		{name: "a standalone PodClique", wantOwner: true, setup: func(f *webhooktest.Family) (client.Object, []client.Object) {
			return f.Standalone, f.Objects()
		}},
		{name: "a PodCliqueScalingGroup", wantOwner: true, setup: func(f *webhooktest.Family) (client.Object, []client.Object) {
			return f.ScalingGroup, f.Objects()
		}},
		{name: "a PodClique of a scaling group, through the group", wantOwner: true, setup: func(f *webhooktest.Family) (client.Object, []client.Object) {
			return f.Grouped, f.Objects()
		}},
		{name: "the PodCliqueSet is gone", setup: func(f *webhooktest.Family) (client.Object, []client.Object) {
			return f.Grouped, []client.Object{f.ScalingGroup, f.Grouped}
		}},
		{name: "the scaling group is gone", setup: func(f *webhooktest.Family) (client.Object, []client.Object) {
			return f.Grouped, []client.Object{f.Set, f.Grouped}
		}},
		{name: "the PodCliqueSet was replaced by a namesake", setup: func(f *webhooktest.Family) (client.Object, []client.Object) {
			namesake := f.Set.DeepCopy()
			namesake.UID = "another-uid"
			return f.Standalone, []client.Object{namesake, f.Standalone}
		}},
		{name: "no controller", setup: func(f *webhooktest.Family) (client.Object, []client.Object) {
			f.Standalone.OwnerReferences[0].Controller = nil
			return f.Standalone, f.Objects()
		}},
		{name: "a controller of another group", setup: func(f *webhooktest.Family) (client.Object, []client.Object) {
			f.Standalone.OwnerReferences[0].APIVersion = "example.com/v1"
			return f.Standalone, f.Objects()
		}},
		{name: "a controller of another grove.io kind", setup: func(f *webhooktest.Family) (client.Object, []client.Object) {
			f.Standalone.OwnerReferences[0].Kind = "PodGang"
			return f.Standalone, f.Objects()
		}},
		{name: "names are not parsed: a PodClique named like a child but not owned", setup: func(f *webhooktest.Family) (client.Object, []client.Object) {
			f.Standalone.OwnerReferences = nil
			return f.Standalone, f.Objects()
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := webhooktest.NewFamily("train", copsev1alpha1.WorkloadTypeTraining)
			obj, stored := tc.setup(f)
			owner, err := OwningPodCliqueSet(context.Background(), webhooktest.Reader(t, stored...), obj)
			if err != nil {
				t.Fatalf("OwningPodCliqueSet: %v", err)
			}
			switch {
			case tc.wantOwner && (owner == nil || owner.UID != f.Set.UID):
				t.Errorf("owner = %v, want the PodCliqueSet %s", owner, f.Set.Name)
			case !tc.wantOwner && owner != nil:
				t.Errorf("owner = %s/%s, want none", owner.Namespace, owner.Name)
			}
		})
	}
}

func TestOwningPodCliqueSetReportsReadErrors(t *testing.T) {
	f := webhooktest.NewFamily("train", copsev1alpha1.WorkloadTypeTraining)
	reader := fake.NewClientBuilder().WithScheme(webhooktest.Scheme(t)).WithObjects(f.Objects()...).
		WithInterceptorFuncs(interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return errors.New("connection refused")
		}}).Build()
	if _, err := OwningPodCliqueSet(context.Background(), reader, f.Grouped); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("err = %v, want the read error", err)
	}
	if _, err := OwningPodCliqueSet(context.Background(), nil, f.Grouped); err == nil {
		t.Error("no reader gave no error")
	}
}

func TestMessages(t *testing.T) {
	owner := webhooktest.NewFamily("train", copsev1alpha1.WorkloadTypeTraining).Set
	webhooktest.ExpectErrors(t, field.ErrorList{
		ReplicasImmutable(scaleReplicasPath, owner),
		AutoScalingNotAllowed(scaleReplicasPath.Child("x"), owner),
	}, []string{
		"spec.replicas: Forbidden: is immutable because the owning PodCliqueSet ml/train has workloadType Training",
		"spec.replicas.x: Forbidden: is not allowed because the owning PodCliqueSet ml/train has workloadType Training",
	})
}

func scale(name string, replicas int32) *autoscalingv1.Scale {
	return &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name}, Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}
}

func TestScaleValidator(t *testing.T) {
	training := webhooktest.NewFamily("train", copsev1alpha1.WorkloadTypeTraining)
	inference := webhooktest.NewFamily("serve", copsev1alpha1.WorkloadTypeInference)
	reader := webhooktest.Reader(t, append(training.Objects(), inference.Objects()...)...)
	pclqs := ScaleValidator{Kind: "PodClique", NewObject: NewPodClique, Reader: reader, Limits: webhooktest.DefaultLimits}
	pcsgs := ScaleValidator{Kind: "PodCliqueScalingGroup", NewObject: NewPodCliqueScalingGroup, Reader: reader, Limits: webhooktest.DefaultLimits}
	tests := []scaleCase{
		{name: "scaling a standalone Training PodClique", validator: pclqs, target: training.Standalone.Name, from: 2, to: 3,
			want: `PodClique.grove.io "train-0-leader" is invalid: spec.replicas: Forbidden: is immutable because the owning PodCliqueSet ml/train has workloadType Training`},
		{name: "scaling a Training PodClique of a scaling group", validator: pclqs, target: training.Grouped.Name, from: 2, to: 1,
			want: `spec.replicas: Forbidden: is immutable because the owning PodCliqueSet ml/train has workloadType Training`},
		{name: "scaling a Training PodCliqueScalingGroup", validator: pcsgs, target: training.ScalingGroup.Name, from: 2, to: 4,
			want: `PodCliqueScalingGroup.grove.io "train-0-decode" is invalid: spec.replicas: Forbidden: is immutable`},
		{name: "the same replica count", validator: pclqs, target: training.Standalone.Name, from: 2, to: 2},
		{name: "scaling an Inference PodClique", validator: pclqs, target: inference.Grouped.Name, from: 2, to: 5},
		{name: "scaling an Inference PodCliqueScalingGroup", validator: pcsgs, target: inference.ScalingGroup.Name, from: 2, to: 5},
		{name: "scaling an Inference PodClique beyond the pod limit", validator: pclqs, target: inference.Grouped.Name, from: 2, to: 40000,
			want: `PodClique.grove.io "serve-0-decode-0-worker" is invalid: spec.replicas: Invalid value: 40000: ` +
				`this PodClique would have 40000 pods, more than the operator's limit limits.maxPodsPerReplica=32768`},
		{name: "scaling down an Inference PodClique that is over the pod limit", validator: pclqs, target: inference.Grouped.Name, from: 50000, to: 40000},
		{name: "scaling a PodClique that is gone", validator: pclqs, target: "gone", from: 2, to: 5},
	}
	runScaleCases(t, tests)
}

// queuedFamily is an Inference family whose PodCliqueSet is queued through
// Kueue: its Workload counts 2 leader pods per replica, 2 worker pods per
// group replica, and up to 3 replicas of the autoscaled group "decode".
func queuedFamily() *webhooktest.Family {
	f := webhooktest.NewFamily("queued", copsev1alpha1.WorkloadTypeInference)
	f.Set.Labels = map[string]string{kueue.QueueNameLabel: "gpus"}
	f.Set.Spec.Template.Cliques = []*grovecorev1alpha1.PodCliqueTemplateSpec{
		{Name: "leader", Spec: grovecorev1alpha1.PodCliqueSpec{Replicas: 2}},
		{Name: "worker", Spec: grovecorev1alpha1.PodCliqueSpec{Replicas: 2}},
	}
	f.Set.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{
		{Name: "decode", CliqueNames: []string{"worker"}, Replicas: ptr.To[int32](2), ScaleConfig: &grovecorev1alpha1.AutoScalingConfig{MaxReplicas: 3}},
	}
	f.Standalone.Labels = map[string]string{labels.CliqueTemplateKey: "leader"}
	f.Grouped.Labels = map[string]string{labels.CliqueTemplateKey: "worker"}
	return f
}

func TestScaleValidatorQueued(t *testing.T) {
	queued := queuedFamily()
	reader := webhooktest.Reader(t, queued.Objects()...)
	pclqs := ScaleValidator{Kind: "PodClique", NewObject: NewPodClique, Reader: reader, Limits: webhooktest.DefaultLimits, KueueEnabled: true}
	pcsgs := ScaleValidator{Kind: "PodCliqueScalingGroup", NewObject: NewPodCliqueScalingGroup, Reader: reader, Limits: webhooktest.DefaultLimits, KueueEnabled: true}
	kueueOff := pclqs
	kueueOff.KueueEnabled = false
	tests := []scaleCase{
		{name: "a PodClique beyond its template's replicas", validator: pclqs, target: queued.Standalone.Name, from: 2, to: 3,
			want: `PodClique.grove.io "queued-0-leader" is invalid: spec.replicas: Forbidden: may be at most 2: PodCliqueSet ml/queued is queued through Kueue ` +
				`(label kueue.x-k8s.io/queue-name=gpus) and its Workload holds quota for 2 of clique "leader"`},
		{name: "a PodClique within its template's replicas", validator: pclqs, target: queued.Standalone.Name, from: 1, to: 2},
		{name: "a PodClique scaled down", validator: pclqs, target: queued.Grouped.Name, from: 2, to: 1},
		{name: "a scaling group up to its autoscaler's maxReplicas", validator: pcsgs, target: queued.ScalingGroup.Name, from: 2, to: 3},
		{name: "a scaling group beyond its autoscaler's maxReplicas", validator: pcsgs, target: queued.ScalingGroup.Name, from: 3, to: 4,
			want: `spec.replicas: Forbidden: may be at most 3: PodCliqueSet ml/queued is queued through Kueue (label kueue.x-k8s.io/queue-name=gpus) and its Workload holds quota for 3 of scaling group "decode"`},
		{name: "kueue.enabled off: the label means nothing", validator: kueueOff, target: queued.Standalone.Name, from: 2, to: 5},
	}
	runScaleCases(t, tests)
}

// scaleCase is one scale of target from from to to replicas through
// validator; want is a part of the Invalid error, "" when it is allowed.
type scaleCase struct {
	name      string
	validator ScaleValidator
	target    string
	from, to  int32
	want      string
}

func runScaleCases(t *testing.T, cases []scaleCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: admissionv1.Update, Namespace: "ml", Name: tc.target, UID: types.UID("req")}})
			_, err := tc.validator.ValidateUpdate(ctx, scale(tc.target, tc.from), scale(tc.target, tc.to))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("denied: %v", err)
			case tc.want != "" && (err == nil || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("err = %v, want an Invalid error containing %q", err, tc.want)
			}
		})
	}
}

func TestScaleValidatorRefusesWhenTheOwnerCannotBeRead(t *testing.T) {
	v := ScaleValidator{Kind: "PodClique", NewObject: NewPodClique}
	_, err := v.ValidateUpdate(context.Background(), scale("x", 1), scale("x", 2))
	if err == nil || !apierrors.IsInternalError(err) {
		t.Errorf("err = %v, want an internal error", err)
	}
}
