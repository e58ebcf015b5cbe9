package podcliqueset

import (
	"testing"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// undefaulted is a PodCliqueSet as a user might write it: one standalone
// clique, one clique in a scaling group, nothing optional set.
func undefaulted(workloadType copsev1alpha1.WorkloadType) *copsev1alpha1.PodCliqueSet {
	pcs := &copsev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Name: "llm", Namespace: "ml"}}
	pcs.Spec.WorkloadType = workloadType
	pcs.Spec.Replicas = 1
	pcs.Spec.Template.Cliques = []*grovecorev1alpha1.PodCliqueTemplateSpec{
		{Name: "leader", Spec: grovecorev1alpha1.PodCliqueSpec{RoleName: "leader", Replicas: 1, PodSpec: podSpec()}},
		{Name: "worker", Spec: grovecorev1alpha1.PodCliqueSpec{RoleName: "worker", Replicas: 4, PodSpec: podSpec()}},
	}
	pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{
		{Name: "decode", CliqueNames: []string{"worker"}},
	}
	return pcs
}

func podSpec() corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "example.com/llm:1"}}}
}

// withDefaults applies, by hand, the defaults expected on undefaulted().
func withDefaults(pcs *copsev1alpha1.PodCliqueSet, terminationDelay time.Duration, restartPolicy corev1.RestartPolicy) *copsev1alpha1.PodCliqueSet {
	if pcs.Spec.WorkloadType == "" {
		pcs.Spec.WorkloadType = copsev1alpha1.WorkloadTypeInference
	}
	pcs.Spec.UpdateStrategy = &grovecorev1alpha1.PodCliqueSetUpdateStrategy{Type: grovecorev1alpha1.RollingRecreateStrategy}
	t := &pcs.Spec.Template
	t.StartupType = ptr.To(grovecorev1alpha1.CliqueStartupTypeAnyOrder)
	t.TerminationDelay = &metav1.Duration{Duration: terminationDelay}
	t.HeadlessServiceConfig = &grovecorev1alpha1.HeadlessServiceConfig{PublishNotReadyAddresses: true}
	for _, c := range t.Cliques {
		c.Spec.MinAvailable = ptr.To(c.Spec.Replicas)
		c.Spec.PodSpec.RestartPolicy = restartPolicy
		c.Spec.PodSpec.TerminationGracePeriodSeconds = ptr.To[int64](30)
	}
	for i := range t.PodCliqueScalingGroupConfigs {
		t.PodCliqueScalingGroupConfigs[i].Replicas = ptr.To[int32](1)
		t.PodCliqueScalingGroupConfigs[i].MinAvailable = ptr.To[int32](1)
	}
	return pcs
}

// TestDefault: the defaulting webhook's rules, which are derived.go's
// (ApplyDefaults).
func TestDefault(t *testing.T) {
	tests := []struct {
		name string
		in   *copsev1alpha1.PodCliqueSet
		want *copsev1alpha1.PodCliqueSet
	}{
		{
			name: "an Inference workload gets Grove's defaults",
			in:   undefaulted(copsev1alpha1.WorkloadTypeInference),
			want: withDefaults(undefaulted(copsev1alpha1.WorkloadTypeInference), 4*time.Hour, corev1.RestartPolicyAlways),
		},
		{
			name: "an unset workload type becomes Inference",
			in:   undefaulted(""),
			want: withDefaults(undefaulted(copsev1alpha1.WorkloadTypeInference), 4*time.Hour, corev1.RestartPolicyAlways),
		},
		{
			name: "a Training workload is recreated at once and its pods are not restarted in place",
			in:   undefaulted(copsev1alpha1.WorkloadTypeTraining),
			want: withDefaults(undefaulted(copsev1alpha1.WorkloadTypeTraining), 0, corev1.RestartPolicyNever),
		},
		{
			name: "a Training workload keeps the terminationDelay and restartPolicy the user set",
			in: func() *copsev1alpha1.PodCliqueSet {
				pcs := undefaulted(copsev1alpha1.WorkloadTypeTraining)
				pcs.Spec.Template.TerminationDelay = &metav1.Duration{Duration: 30 * time.Minute}
				pcs.Spec.Template.Cliques[0].Spec.PodSpec.RestartPolicy = corev1.RestartPolicyAlways
				return pcs
			}(),
			want: func() *copsev1alpha1.PodCliqueSet {
				pcs := withDefaults(undefaulted(copsev1alpha1.WorkloadTypeTraining), 30*time.Minute, corev1.RestartPolicyNever)
				pcs.Spec.Template.Cliques[0].Spec.PodSpec.RestartPolicy = corev1.RestartPolicyAlways
				return pcs
			}(),
		},
		{
			name: "values the user set are kept",
			in:   userSet(undefaulted(copsev1alpha1.WorkloadTypeInference)),
			want: userSet(withDefaults(undefaulted(copsev1alpha1.WorkloadTypeInference), 0, corev1.RestartPolicyAlways)),
		},
		{
			name: "a clique without replicas gets one, and minAvailable follows",
			in: func() *copsev1alpha1.PodCliqueSet {
				pcs := undefaulted(copsev1alpha1.WorkloadTypeInference)
				pcs.Spec.Template.Cliques[0].Spec.Replicas = 0
				return pcs
			}(),
			want: withDefaults(undefaulted(copsev1alpha1.WorkloadTypeInference), 4*time.Hour, corev1.RestartPolicyAlways),
		},
		{
			name: "autoscaling minReplicas defaults to the replicas of the clique and of the group",
			in: func() *copsev1alpha1.PodCliqueSet {
				pcs := undefaulted(copsev1alpha1.WorkloadTypeInference)
				pcs.Spec.Template.Cliques[0].Spec.ScaleConfig = &grovecorev1alpha1.AutoScalingConfig{MaxReplicas: 4}
				pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = ptr.To[int32](2)
				pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].ScaleConfig = &grovecorev1alpha1.AutoScalingConfig{MaxReplicas: 8}
				return pcs
			}(),
			want: func() *copsev1alpha1.PodCliqueSet {
				pcs := withDefaults(undefaulted(copsev1alpha1.WorkloadTypeInference), 4*time.Hour, corev1.RestartPolicyAlways)
				pcs.Spec.Template.Cliques[0].Spec.ScaleConfig = &grovecorev1alpha1.AutoScalingConfig{MinReplicas: ptr.To[int32](1), MaxReplicas: 4}
				group := &pcs.Spec.Template.PodCliqueScalingGroupConfigs[0]
				group.Replicas = ptr.To[int32](2)
				group.ScaleConfig = &grovecorev1alpha1.AutoScalingConfig{MinReplicas: ptr.To[int32](2), MaxReplicas: 8}
				return pcs
			}(),
		},
		{
			name: "an update strategy without a type gets RollingRecreate",
			in: func() *copsev1alpha1.PodCliqueSet {
				pcs := undefaulted(copsev1alpha1.WorkloadTypeInference)
				pcs.Spec.UpdateStrategy = &grovecorev1alpha1.PodCliqueSetUpdateStrategy{}
				return pcs
			}(),
			want: withDefaults(undefaulted(copsev1alpha1.WorkloadTypeInference), 4*time.Hour, corev1.RestartPolicyAlways),
		},
		{
			name: "a null clique is left for validation to reject",
			in: func() *copsev1alpha1.PodCliqueSet {
				pcs := undefaulted(copsev1alpha1.WorkloadTypeInference)
				pcs.Spec.Template.Cliques = append(pcs.Spec.Template.Cliques, nil)
				return pcs
			}(),
			want: func() *copsev1alpha1.PodCliqueSet {
				pcs := withDefaults(undefaulted(copsev1alpha1.WorkloadTypeInference), 4*time.Hour, corev1.RestartPolicyAlways)
				pcs.Spec.Template.Cliques = append(pcs.Spec.Template.Cliques, nil)
				return pcs
			}(),
		},
		{
			name: "an unknown workload type is left for the CRD's enum to reject",
			in:   undefaulted("Batch"),
			want: undefaulted("Batch"),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.in.DeepCopy()
			Default(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Default (-want +got):\n%s", diff)
			}
			again := got.DeepCopy()
			Default(again)
			if diff := cmp.Diff(got, again); diff != "" {
				t.Errorf("Default is not idempotent (-first +second):\n%s", diff)
			}
		})
	}
}

// userSet sets every defaulted field of undefaulted() to a non-default value.
func userSet(pcs *copsev1alpha1.PodCliqueSet) *copsev1alpha1.PodCliqueSet {
	pcs.Spec.UpdateStrategy = &grovecorev1alpha1.PodCliqueSetUpdateStrategy{Type: grovecorev1alpha1.OnDeleteStrategy}
	t := &pcs.Spec.Template
	t.StartupType = ptr.To(grovecorev1alpha1.CliqueStartupTypeInOrder)
	t.TerminationDelay = &metav1.Duration{Duration: time.Hour}
	t.HeadlessServiceConfig = &grovecorev1alpha1.HeadlessServiceConfig{PublishNotReadyAddresses: false}
	for _, c := range t.Cliques {
		c.Spec.MinAvailable = ptr.To[int32](1)
		c.Spec.PodSpec.RestartPolicy = corev1.RestartPolicyNever
		c.Spec.PodSpec.TerminationGracePeriodSeconds = ptr.To[int64](5)
	}
	t.PodCliqueScalingGroupConfigs[0].Replicas = ptr.To[int32](3)
	t.PodCliqueScalingGroupConfigs[0].MinAvailable = ptr.To[int32](2)
	return pcs
}

// TestDerivedDefaults: what the controllers read of a PodCliqueSet the
// webhook never saw (api/core/v1alpha1's derived values, and the PodClique
// spec blueprint builds, DefaultCliqueSpec) is what the webhook writes.
func TestDerivedDefaults(t *testing.T) {
	for _, workload := range []copsev1alpha1.WorkloadType{copsev1alpha1.WorkloadTypeInference, copsev1alpha1.WorkloadTypeTraining} {
		raw := undefaulted(workload)
		raw.Spec.Template.Cliques[0].Spec.Replicas = 0
		raw.Spec.Template.Cliques[1].Spec.ScaleConfig = &grovecorev1alpha1.AutoScalingConfig{MaxReplicas: 8}
		defaulted := raw.DeepCopy()
		Default(defaulted)
		if raw.UpdateStrategyType() != defaulted.Spec.UpdateStrategy.Type ||
			raw.PublishNotReadyAddresses() != defaulted.Spec.Template.HeadlessServiceConfig.PublishNotReadyAddresses ||
			raw.TerminationDelay() != defaulted.Spec.Template.TerminationDelay.Duration {
			t.Errorf("%s: update strategy %s, publish %v, delay %s; the webhook writes %+v, %+v, %s", workload,
				raw.UpdateStrategyType(), raw.PublishNotReadyAddresses(), raw.TerminationDelay(),
				defaulted.Spec.UpdateStrategy, defaulted.Spec.Template.HeadlessServiceConfig, defaulted.Spec.Template.TerminationDelay.Duration)
		}
		for i, c := range raw.Spec.Template.Cliques {
			spec := *c.Spec.DeepCopy()
			copsev1alpha1.DefaultCliqueSpec(&spec, workload)
			if diff := cmp.Diff(defaulted.Spec.Template.Cliques[i].Spec, spec); diff != "" {
				t.Errorf("%s: DefaultCliqueSpec of clique %s differs from the webhook's (-webhook +derived):\n%s", workload, c.Name, diff)
			}
			if got, want := copsev1alpha1.CliqueReplicas(c.Spec), defaulted.Spec.Template.Cliques[i].Spec.Replicas; got != want {
				t.Errorf("%s: CliqueReplicas of %s = %d, the webhook writes %d", workload, c.Name, got, want)
			}
		}
	}
}
