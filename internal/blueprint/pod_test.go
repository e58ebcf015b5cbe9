package blueprint

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/testfixtures"
)

// buildTestPod builds the pod of index for pclq of the fixture PodCliqueSet,
// with the given decorators.
func buildTestPod(t *testing.T, pclq *copsev1alpha1.PodClique, index int, decorators ...PodDecorator) *corev1.Pod {
	t.Helper()
	pc := podContextFor(t, pclq)
	pc.Index = index
	pod, err := BuildPod(pc, decorators)
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

// podContextFor is the context of pclq's pod 0 in the fixture PodCliqueSet.
func podContextFor(t *testing.T, pclq *copsev1alpha1.PodClique) PodContext {
	t.Helper()
	id, err := IdentityOf(pclq)
	if err != nil {
		t.Fatal(err)
	}
	return PodContext{
		PodCliqueSet: testfixtures.PodCliqueSet(copsev1alpha1.WorkloadTypeInference),
		PodClique:    pclq,
		Identity:     id,
		Owner:        *metav1.NewControllerRef(pclq, copsev1alpha1.SchemeGroupVersion.WithKind("PodClique")),
	}
}

func envOf(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		if _, dup := out[e.Name]; dup {
			out[e.Name] = "DUPLICATE"
			continue
		}
		out[e.Name] = e.Value
	}
	return out
}

func TestBuildPodStandalone(t *testing.T) {
	pclq := testfixtures.StandaloneClique(3)
	before := pclq.DeepCopy()
	pod := buildTestPod(t, pclq, 2)

	wantMeta := metav1.ObjectMeta{
		Namespace:    "ml",
		GenerateName: "llm-1-leader-",
		Labels: map[string]string{
			"team":                   "inference",
			labels.ManagedByKey:      labels.ManagedByValue,
			labels.PartOfKey:         "llm",
			labels.ReplicaKey:        "1",
			labels.ComponentKey:      labels.ComponentPodCliqueOfSet,
			labels.PodCliqueKey:      "llm-1-leader",
			labels.CliqueTemplateKey: "leader",
			labels.PodGangKey:        "llm-1",
			labels.PodIndexKey:       "2",
		},
		Annotations: map[string]string{"example.com/owner": "team-a"},
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "grove.io/v1alpha1", Kind: "PodClique", Name: "llm-1-leader", UID: "pclq-uid",
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}},
	}
	if diff := cmp.Diff(wantMeta, pod.ObjectMeta); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
	if pod.Spec.Hostname != "llm-1-leader-2" || pod.Spec.Subdomain != "llm-1" {
		t.Errorf("hostname %q subdomain %q, want llm-1-leader-2 under llm-1", pod.Spec.Hostname, pod.Spec.Subdomain)
	}
	if pod.Spec.SchedulingGroup != nil {
		t.Errorf("schedulingGroup %v: gang membership is a decorator's, not the builder's", pod.Spec.SchedulingGroup)
	}

	wantEnv := map[string]string{
		"GROVE_PCS_NAME":         "llm",
		"GROVE_PCS_INDEX":        "1",
		"GROVE_PCLQ_NAME":        "llm-1-leader",
		"GROVE_HEADLESS_SERVICE": "llm-1.ml.svc.cluster.local",
		"GROVE_PCLQ_POD_INDEX":   "2",
	}
	for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
		want := wantEnv
		if c.Name == "main" {
			want = map[string]string{}
			for k, v := range wantEnv {
				want[k] = v
			}
			want["GROVE_PCS_NAME"] = "user-value"
		}
		if diff := cmp.Diff(want, envOf(c)); diff != "" {
			t.Errorf("container %s env (-want +got):\n%s", c.Name, diff)
		}
	}
	if diff := cmp.Diff(before, pclq); diff != "" {
		t.Errorf("BuildPod changed the PodClique (-before +after):\n%s", diff)
	}
}

func TestBuildPodGrouped(t *testing.T) {
	pod := buildTestPod(t, testfixtures.GroupedClique(3), 0)
	want := map[string]string{
		"GROVE_PCS_NAME":               "llm",
		"GROVE_PCS_INDEX":              "1",
		"GROVE_PCLQ_NAME":              "llm-1-decode-2-worker",
		"GROVE_HEADLESS_SERVICE":       "llm-1.ml.svc.cluster.local",
		"GROVE_PCLQ_POD_INDEX":         "0",
		"GROVE_PCSG_NAME":              "llm-1-decode",
		"GROVE_PCSG_INDEX":             "2",
		"GROVE_PCSG_TEMPLATE_NUM_PODS": "5",
	}
	if diff := cmp.Diff(want, envOf(pod.Spec.Containers[0])); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	if pod.Spec.Hostname != "llm-1-decode-2-worker-0" || pod.Spec.Subdomain != "llm-1" {
		t.Errorf("hostname %q subdomain %q", pod.Spec.Hostname, pod.Spec.Subdomain)
	}
	if pod.Annotations != nil {
		t.Errorf("annotations %v, want none", pod.Annotations)
	}
}

func TestBuildPodAppliesDecoratorsInOrder(t *testing.T) {
	var order []string
	mark := func(name string) PodDecorator {
		return PodDecorator{Name: name, Decorate: func(pod *corev1.Pod, pc PodContext) error {
			order = append(order, name)
			pod.Labels["decorated-by"] = name
			if pc.Index != 1 || pc.Identity.Clique != "leader" {
				t.Errorf("decorator %s got context index %d clique %q", name, pc.Index, pc.Identity.Clique)
			}
			return nil
		}}
	}
	pod := buildTestPod(t, testfixtures.StandaloneClique(2), 1, mark("first"), mark("second"))
	if diff := cmp.Diff([]string{"first", "second"}, order); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if pod.Labels["decorated-by"] != "second" {
		t.Errorf("the later decorator must see and may change the earlier one's result")
	}
}

func TestBuildPodFailsWithItsDecorator(t *testing.T) {
	pclq := testfixtures.StandaloneClique(1)
	id, _ := IdentityOf(pclq)
	failing := PodDecorator{Name: "gang", Decorate: func(*corev1.Pod, PodContext) error { return errors.New("no gang label") }}
	_, err := BuildPod(PodContext{PodCliqueSet: testfixtures.PodCliqueSet(""), PodClique: pclq, Identity: id}, []PodDecorator{failing})
	if err == nil || !strings.Contains(err.Error(), "pod decorator gang: no gang label") {
		t.Errorf("error %v, want one naming the decorator", err)
	}
}

func TestBuildPodOfBrokenScalingGroup(t *testing.T) {
	pclq := testfixtures.GroupedClique(1)
	id, _ := IdentityOf(pclq)
	pcs := testfixtures.PodCliqueSet("")
	pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].CliqueNames = append(pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].CliqueNames, "ghost")
	if _, err := Pod(PodContext{PodCliqueSet: pcs, PodClique: pclq, Identity: id}); err == nil || !strings.Contains(err.Error(), "ghost") {
		t.Errorf("error %v, want one naming the missing clique", err)
	}
}

// TestBuildPodCarriesAttempt: a restarted Training replica's PodCliques are
// labelled with the attempt, and their pods inherit it like every other
// PodClique label.
func TestBuildPodCarriesAttempt(t *testing.T) {
	for _, pclq := range []*copsev1alpha1.PodClique{testfixtures.StandaloneClique(2), testfixtures.GroupedClique(2)} {
		pclq.Labels[labels.AttemptKey] = "2"
		pod := buildTestPod(t, pclq, 1)
		if got := pod.Labels[labels.AttemptKey]; got != "2" {
			t.Errorf("%s: pod label %s=%q, want 2", pclq.Name, labels.AttemptKey, got)
		}
	}
}
