package podcliqueset

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

const groupKey = copsev1alpha1.AnnotationMNNVLGroup

// GPU paths of valid(): cliques leader (0), worker (1, in scaling group
// decode) and router (2).
func withGPUs(cliques ...int) func(*copsev1alpha1.PodCliqueSet) {
	return func(pcs *copsev1alpha1.PodCliqueSet) {
		for _, i := range cliques {
			pcs.Spec.Template.Cliques[i].Spec.PodSpec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")}
		}
	}
}

func pcsGroup(value string) func(*copsev1alpha1.PodCliqueSet) {
	return func(pcs *copsev1alpha1.PodCliqueSet) { pcs.Annotations = map[string]string{groupKey: value} }
}

func cliqueGroup(i int, value string) func(*copsev1alpha1.PodCliqueSet) {
	return func(pcs *copsev1alpha1.PodCliqueSet) {
		pcs.Spec.Template.Cliques[i].Annotations = map[string]string{groupKey: value}
	}
}

func scalingGroupGroup(value string) func(*copsev1alpha1.PodCliqueSet) {
	return func(pcs *copsev1alpha1.PodCliqueSet) {
		pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].Annotations = map[string]string{groupKey: value}
	}
}

var mnnvlValidator = Validator{Limits: configv1alpha1.NewDefaultOperatorConfiguration().Limits}

// checkErrors asserts err carries each of want, and nothing when want is empty.
func checkErrors(t *testing.T, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Errorf("refused: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("admitted, want errors %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q\ndoes not contain %q", err, w)
		}
	}
}

func TestMNNVLOnCreate(t *testing.T) {
	cases := []struct {
		name     string
		enabled  bool
		pcs      *copsev1alpha1.PodCliqueSet
		want     []string
		wantNone bool
	}{
		{name: "no annotation, MNNVL off", pcs: valid(withGPUs(1))},
		{name: "group on the PodCliqueSet, enabled", enabled: true, pcs: valid(withGPUs(1), pcsGroup("nvl-a"))},
		{name: "group on the scaling group and a GPU clique, enabled", enabled: true, pcs: valid(withGPUs(0, 1), scalingGroupGroup("b"), cliqueGroup(0, "a"))},
		{name: "a CPU clique inheriting a group is fine", enabled: true, pcs: valid(withGPUs(1), pcsGroup("a"))},
		{name: "none needs no MNNVL", pcs: valid(pcsGroup("none"), cliqueGroup(0, "none"), scalingGroupGroup("none"))},
		{name: "none on a CPU clique is fine", enabled: true, pcs: valid(cliqueGroup(2, "none"))},
		{
			name: "not a DNS-1123 label", enabled: true, pcs: valid(withGPUs(1), pcsGroup("NVL_A")),
			want: []string{`metadata.annotations[grove.io/mnnvl-group]: Invalid value: "NVL_A": must be "none" or a DNS-1123 label`},
		},
		{
			name: "not a DNS-1123 label, on a scaling group", enabled: true, pcs: valid(withGPUs(1), scalingGroupGroup("a.b")),
			want: []string{`spec.template.podCliqueScalingGroups[0].annotations[grove.io/mnnvl-group]: Invalid value: "a.b"`},
		},
		{
			name: "a group while MNNVL is off", pcs: valid(withGPUs(1), scalingGroupGroup("nvl-a")),
			want: []string{`spec.template.podCliqueScalingGroups[0].annotations[grove.io/mnnvl-group]: Forbidden: MNNVL is not enabled in the operator configuration (mnnvl.enabled)`},
		},
		{
			name: "a group on the PodCliqueSet while MNNVL is off", pcs: valid(pcsGroup("nvl-a")),
			want: []string{`metadata.annotations[grove.io/mnnvl-group]: Forbidden: MNNVL is not enabled`},
		},
		// As in Grove: a CPU clique's group is accepted, and its pods are
		// left out of MNNVL.
		{name: "a group on a clique without GPUs is accepted", enabled: true, pcs: valid(withGPUs(1), cliqueGroup(2, "nvl-a"))},
		{
			name: "ComputeDomain name over 63 characters", enabled: true,
			pcs: valid(withGPUs(1), scalingGroupGroup(strings.Repeat("g", 60))),
			want: []string{`spec.template.podCliqueScalingGroups[0].annotations[grove.io/mnnvl-group]: Invalid value: "` + strings.Repeat("g", 60) +
				`": the ComputeDomain name "llm-0-` + strings.Repeat("g", 60) + `" would be 66 characters, over the limit of 63`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := mnnvlValidator
			v.MNNVLEnabled = tc.enabled
			_, err := v.ValidateCreate(context.Background(), tc.pcs)
			checkErrors(t, err, tc.want)
		})
	}
}

func TestMNNVLOnUpdate(t *testing.T) {
	cases := []struct {
		name     string
		enabled  bool
		old, pcs *copsev1alpha1.PodCliqueSet
		want     []string
	}{
		{name: "unchanged group", enabled: true, old: valid(withGPUs(1), pcsGroup("a")), pcs: valid(withGPUs(1), pcsGroup("a"), func(p *copsev1alpha1.PodCliqueSet) { p.Spec.Replicas = 3 })},
		{name: "a metadata-only update keeps working after MNNVL was turned off", old: valid(withGPUs(1), pcsGroup("a")),
			pcs: valid(withGPUs(1), pcsGroup("a"), func(p *copsev1alpha1.PodCliqueSet) { p.Labels = map[string]string{"x": "y"} })},
		{
			name: "changed on the PodCliqueSet, spec unchanged", enabled: true,
			old: valid(withGPUs(1), pcsGroup("a")), pcs: valid(withGPUs(1), pcsGroup("b")),
			want: []string{`metadata.annotations[grove.io/mnnvl-group]: Invalid value: "b": field is immutable (was "a")`},
		},
		{
			name: "added on the PodCliqueSet", enabled: true,
			old: valid(withGPUs(1)), pcs: valid(withGPUs(1), pcsGroup("none")),
			want: []string{`metadata.annotations[grove.io/mnnvl-group]: Invalid value: "none": field is immutable (was not set)`},
		},
		{
			name: "removed from a clique", enabled: true,
			old: valid(withGPUs(1), cliqueGroup(1, "a")), pcs: valid(withGPUs(1)),
			want: []string{`spec.template.cliques[1].annotations[grove.io/mnnvl-group]: Forbidden: field is immutable: cannot be removed (was "a")`},
		},
		{
			name: "changed on a scaling group", enabled: true,
			old: valid(withGPUs(1), scalingGroupGroup("a")), pcs: valid(withGPUs(1), scalingGroupGroup("b")),
			want: []string{`spec.template.podCliqueScalingGroups[0].annotations[grove.io/mnnvl-group]: Invalid value: "b": field is immutable (was "a")`},
		},
		{name: "a clique with its own group loses its GPUs", enabled: true,
			old: valid(withGPUs(1), cliqueGroup(1, "a")), pcs: valid(cliqueGroup(1, "a"))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := mnnvlValidator
			v.MNNVLEnabled = tc.enabled
			_, err := v.ValidateUpdate(context.Background(), tc.old, tc.pcs)
			checkErrors(t, err, tc.want)
		})
	}
}

func TestDefaultMNNVLGroup(t *testing.T) {
	ownedBy := func(apiVersion, kind string) func(*copsev1alpha1.PodCliqueSet) {
		return func(pcs *copsev1alpha1.PodCliqueSet) {
			pcs.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: "x", Controller: ptr.To(true)}}
		}
	}
	tests := []struct {
		name         string
		pcs          *copsev1alpha1.PodCliqueSet
		operation    admissionv1.Operation
		defaultGroup string
		want         map[string]string // the annotations after defaulting
	}{
		{name: "option off: no group", pcs: valid(withGPUs(1)), operation: admissionv1.Create},
		{name: "created without a group: the default group", pcs: valid(withGPUs(1)), operation: admissionv1.Create, defaultGroup: "nvl",
			want: map[string]string{groupKey: "nvl"}},
		{name: "created with a group of its own: kept", pcs: valid(withGPUs(1), pcsGroup("fabric")), operation: admissionv1.Create, defaultGroup: "nvl",
			want: map[string]string{groupKey: "fabric"}},
		{name: "created opted out: kept", pcs: valid(withGPUs(1), pcsGroup("none")), operation: admissionv1.Create, defaultGroup: "nvl",
			want: map[string]string{groupKey: "none"}},
		{name: "a TrainJob's PodCliqueSet takes the TrainJob's group", pcs: valid(withGPUs(1), ownedBy("trainer.kubeflow.org/v1alpha1", "TrainJob")),
			operation: admissionv1.Create, defaultGroup: "nvl"},
		{name: "another controller's PodCliqueSet gets the default group", pcs: valid(withGPUs(1), ownedBy("example.com/v1", "TrainJob")),
			operation: admissionv1.Create, defaultGroup: "nvl", want: map[string]string{groupKey: "nvl"}},
		{name: "updated: as it was (the annotation is immutable)", pcs: valid(withGPUs(1)), operation: admissionv1.Update, defaultGroup: "nvl"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := admission.NewContextWithRequest(context.Background(), admission.Request{
				AdmissionRequest: admissionv1.AdmissionRequest{Operation: tc.operation}})
			if err := (Defaulter{MNNVLDefaultGroup: tc.defaultGroup}).Default(ctx, tc.pcs); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, tc.pcs.Annotations, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
		})
	}
}
