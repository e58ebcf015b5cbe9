package trainjob

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/mnnvl"
)

// gpuTrainJob is pcsTrainJob whose trainer nodes request 4 GPUs each, with
// annotations.
func gpuTrainJob(gpus bool, annotations map[string]string) *trainerv1alpha1.TrainJob {
	tj := pcsTrainJob(2)
	tj.Annotations = annotations
	if gpus {
		tj.Spec.Trainer.ResourcesPerNode = &corev1.ResourceRequirements{Limits: corev1.ResourceList{mnnvl.GPUResource: resource.MustParse("4")}}
	}
	return tj
}

// mnnvlRuntime has a CPU dataset initializer and the trainer "node".
func mnnvlRuntime() Runtime {
	return runtimeWith(torchPolicy(),
		replicatedJob("dataset-initializer", AncestorDatasetInitializer, DatasetInitializerName),
		replicatedJob("node", AncestorTrainer, NodeName))
}

func TestPodCliqueSetBackendCarriesTheMNNVLGroup(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        map[string]string
	}{
		{name: "no annotation", want: nil},
		{name: "a group", annotations: map[string]string{mnnvl.GroupAnnotation: "nvl-a", "other": "x"}, want: map[string]string{mnnvl.GroupAnnotation: "nvl-a"}},
		{name: "opted out", annotations: map[string]string{mnnvl.GroupAnnotation: "none"}, want: map[string]string{mnnvl.GroupAnnotation: "none"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tj := gpuTrainJob(true, tc.annotations)
			tj.Spec.Initializer = &trainerv1alpha1.Initializer{Dataset: &trainerv1alpha1.DatasetInitializer{StorageUri: ptr.To("hf://org/data")}}
			objects, err := BuildPodCliqueSetObjects(tj, onPodCliqueSet(mnnvlRuntime()), nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, objects.PodCliqueSet.Annotations); diff != "" {
				t.Errorf("PodCliqueSet annotations (-want +got):\n%s", diff)
			}
			if len(objects.PodCliqueSet.CliqueTemplate(NodeName).Spec.PodSpec.ResourceClaims) > 0 {
				t.Error("the build gave the pods a claim: on this backend the PodCliqueSet's pod decorator does")
			}
		})
	}
}

func TestAddJobSetMNNVL(t *testing.T) {
	for _, tc := range []struct {
		name        string
		gpus        bool
		annotations map[string]string
		want        bool
	}{
		{name: "GPU trainer without a group: none (MNNVL is opt-in)", gpus: true},
		{name: "GPU trainer with a group: one domain per TrainJob", gpus: true, annotations: map[string]string{mnnvl.GroupAnnotation: "nvl-a"}, want: true},
		{name: "no GPUs, with a group: none", annotations: map[string]string{mnnvl.GroupAnnotation: "nvl-a"}},
		{name: "GPU trainer opted out", gpus: true, annotations: map[string]string{mnnvl.GroupAnnotation: "none"}},
		{name: "no GPUs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tj := gpuTrainJob(tc.gpus, tc.annotations)
			tj.Spec.Initializer = &trainerv1alpha1.Initializer{Dataset: &trainerv1alpha1.DatasetInitializer{StorageUri: ptr.To("hf://org/data")}}
			objects, err := BuildJobSetObjects(tj, mnnvlRuntime())
			if err != nil {
				t.Fatal(err)
			}
			before := objects.JobSet.DeepCopy()
			AddJobSetMNNVL(objects, tj)
			if !tc.want {
				if objects.ComputeDomain != nil {
					t.Errorf("ComputeDomain %v, want none", objects.ComputeDomain.Object)
				}
				if diff := cmp.Diff(before, objects.JobSet); diff != "" {
					t.Errorf("the JobSet changed (-before +after):\n%s", diff)
				}
				return
			}
			cd := objects.ComputeDomain
			if cd == nil {
				t.Fatal("no ComputeDomain")
			}
			template, _, _ := unstructured.NestedString(cd.Object, "spec", "channel", "resourceClaimTemplate", "name")
			if cd.GetName() != "tj-mnnvl" || cd.GetNamespace() != "ns" || template != "tj-mnnvl" || !metav1.IsControlledBy(cd, tj) ||
				cd.GetLabels()[labels.ManagedByKey] != labels.ManagedByValue || cd.GetLabels()[TrainJobNameLabel] != "tj" {
				t.Errorf("ComputeDomain %v", cd.Object)
			}
			for _, rjob := range objects.JobSet.Spec.ReplicatedJobs {
				spec := rjob.Template.Spec.Template.Spec
				gpu := rjob.Name == "node"
				wantEntries := 0
				if gpu {
					wantEntries = 1
				}
				if len(spec.ResourceClaims) != wantEntries {
					t.Errorf("%s: resourceClaims %v, want %d entries", rjob.Name, spec.ResourceClaims, wantEntries)
				}
				for _, c := range spec.Containers {
					if got := len(c.Resources.Claims) == 1 && c.Resources.Claims[0].Name == mnnvl.ClaimName; got != (gpu && mnnvl.RequestsGPUs(&corev1.PodSpec{Containers: []corev1.Container{c}})) {
						t.Errorf("%s container %s: claims %v", rjob.Name, c.Name, c.Resources.Claims)
					}
				}
			}
		})
	}
}

func TestKeepJobSetComputeDomain(t *testing.T) {
	tj := gpuTrainJob(true, map[string]string{mnnvl.GroupAnnotation: "nvl-a"})
	build := func(withMNNVL bool) *JobSetObjects {
		t.Helper()
		objects, err := BuildJobSetObjects(tj, mnnvlRuntime())
		if err != nil {
			t.Fatal(err)
		}
		if withMNNVL {
			AddJobSetMNNVL(objects, tj)
		}
		return objects
	}
	// claimOn is a JobSet whose node pods carry the channel claim of
	// template, or no claim for "".
	claimOn := func(template string) *jobsetv1alpha2.JobSet {
		objects := build(false)
		if template != "" {
			for i := range objects.JobSet.Spec.ReplicatedJobs {
				mnnvl.AddClaim(&objects.JobSet.Spec.ReplicatedJobs[i].Template.Spec.Template.Spec, template)
			}
		}
		return objects.JobSet
	}
	for _, tc := range []struct {
		name     string
		mnnvl    bool
		existing *jobsetv1alpha2.JobSet
		// wantDomain is the ComputeDomain and claim template of the
		// build after, "" for none.
		wantDomain string
	}{
		{"no JobSet yet: the build's own name", true, nil, "tj-mnnvl"},
		{"a JobSet with the build's claim: unchanged", true, claimOn("tj-mnnvl"), "tj-mnnvl"},
		{"a JobSet made before the rename keeps its domain", true, claimOn("tj"), "tj"},
		{"a JobSet without a claim (Kubeflow Trainer's, or made before MNNVL was on): none", true, claimOn(""), ""},
		{"MNNVL off in the build: nothing added", false, claimOn("tj"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objects := build(tc.mnnvl)
			KeepJobSetComputeDomain(objects, tj, tc.existing)
			gotDomain := ""
			if objects.ComputeDomain != nil {
				gotDomain = objects.ComputeDomain.GetName()
				template, _, _ := unstructured.NestedString(objects.ComputeDomain.Object, "spec", "channel", "resourceClaimTemplate", "name")
				if template != gotDomain || !metav1.IsControlledBy(objects.ComputeDomain, tj) {
					t.Errorf("ComputeDomain %s: channel template %q, owners %v", gotDomain, template, objects.ComputeDomain.GetOwnerReferences())
				}
			}
			if gotDomain != tc.wantDomain {
				t.Errorf("ComputeDomain %q, want %q", gotDomain, tc.wantDomain)
			}
			gotTemplate, _ := jobSetChannelTemplate(objects.JobSet)
			if gotTemplate != tc.wantDomain {
				t.Errorf("the pods' channel claim names %q, want %q", gotTemplate, tc.wantDomain)
			}
			if tc.wantDomain == "" {
				for _, rjob := range objects.JobSet.Spec.ReplicatedJobs {
					for _, c := range rjob.Template.Spec.Template.Spec.Containers {
						if len(c.Resources.Claims) > 0 {
							t.Errorf("%s container %s keeps claims %v", rjob.Name, c.Name, c.Resources.Claims)
						}
					}
				}
			}
			if tc.existing != nil && tc.mnnvl {
				// The pod templates now match the existing JobSet's claims,
				// which JobSet would refuse to change.
				for i, rjob := range objects.JobSet.Spec.ReplicatedJobs {
					want := tc.existing.Spec.ReplicatedJobs[i].Template.Spec.Template.Spec
					got := rjob.Template.Spec.Template.Spec
					if diff := cmp.Diff(want.ResourceClaims, got.ResourceClaims); diff != "" {
						t.Errorf("%s resourceClaims differ from the existing JobSet's:\n%s", rjob.Name, diff)
					}
					if diff := cmp.Diff(want.Containers, got.Containers); diff != "" {
						t.Errorf("%s containers differ from the existing JobSet's:\n%s", rjob.Name, diff)
					}
				}
			}
		})
	}
}

func TestValidateComputeDomainName(t *testing.T) {
	name := func(n int) string { return strings.Repeat("a", n) }
	grouped := map[string]string{mnnvl.GroupAnnotation: "nvl-a"}
	for _, tc := range []struct {
		desc        string
		name        string
		gpus        bool
		annotations map[string]string
		backend     trainerv1alpha1.RuntimeBackend
		want        string // "" for no error
	}{
		{desc: "57 characters: <name>-mnnvl is 63", name: name(57), gpus: true, annotations: grouped},
		{desc: "58 characters: 64, refused", name: name(58), gpus: true, annotations: grouped,
			want: `metadata.name: Invalid value: "` + name(58) + `": its ComputeDomain "` + name(58) + `-mnnvl" (its MNNVL group on the runtime's JobSet backend gives GPU pods one) would be 64 characters, over the limit of 63: shorten the name by 1 character(s), or opt out with grove.io/mnnvl-group: none`},
		{desc: "no GPUs: no ComputeDomain", name: name(63), annotations: grouped},
		{desc: "no group: no ComputeDomain", name: name(63), gpus: true},
		{desc: "opted out: no ComputeDomain", name: name(63), gpus: true, annotations: map[string]string{mnnvl.GroupAnnotation: "none"}},
		{desc: "PodCliqueSet backend: the PodCliqueSet's rules", name: name(63), gpus: true, annotations: grouped, backend: trainerv1alpha1.RuntimeBackendPodCliqueSet},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			tj := gpuTrainJob(tc.gpus, tc.annotations)
			tj.Name = tc.name
			runtime := mnnvlRuntime()
			runtime.Spec.Backend = tc.backend
			plan, err := NewPlan(tj, runtime)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if errs := ValidateComputeDomainName(plan); len(errs) > 0 {
				got = errs.ToAggregate().Error()
			}
			if got != tc.want {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}
