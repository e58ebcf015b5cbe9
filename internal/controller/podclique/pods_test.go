package podclique

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
)

func testTemplate(t *testing.T, pclq *copsev1alpha1.PodClique, gang bool, groupPods int32) podTemplate {
	t.Helper()
	id, err := identityOf(pclq, gang)
	if err != nil {
		t.Fatal(err)
	}
	owner := *metav1.NewControllerRef(pclq, copsev1alpha1.SchemeGroupVersion.WithKind("PodClique"))
	return podTemplate{pclq: pclq, id: id, owner: owner, gangScheduling: gang, groupPods: groupPods}
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
	pclq := testStandaloneClique(3)
	before := pclq.DeepCopy()
	pod := buildPod(testTemplate(t, pclq, true, 0), 2)

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
	if diff := cmp.Diff(&corev1.PodSchedulingGroup{PodGroupName: ptr.To("llm-1")}, pod.Spec.SchedulingGroup); diff != "" {
		t.Errorf("schedulingGroup (-want +got):\n%s", diff)
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
		t.Errorf("buildPod changed the PodClique (-before +after):\n%s", diff)
	}
}

func TestBuildPodGrouped(t *testing.T) {
	pod := buildPod(testTemplate(t, testGroupedClique(3), true, 5), 0)
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
	if got := ptr.Deref(pod.Spec.SchedulingGroup.PodGroupName, ""); got != "llm-1-decode-2" {
		t.Errorf("podGroupName %q, want the scaled gang llm-1-decode-2", got)
	}
	if pod.Spec.Hostname != "llm-1-decode-2-worker-0" || pod.Spec.Subdomain != "llm-1" {
		t.Errorf("hostname %q subdomain %q", pod.Spec.Hostname, pod.Spec.Subdomain)
	}
	if pod.Annotations != nil {
		t.Errorf("annotations %v, want none", pod.Annotations)
	}
}

func TestBuildPodWithoutGangScheduling(t *testing.T) {
	pclq := testStandaloneClique(1)
	pclq.Spec.PodSpec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To("users-own")}
	pod := buildPod(testTemplate(t, pclq, false, 0), 0)
	if got := ptr.Deref(pod.Spec.SchedulingGroup.PodGroupName, ""); got != "users-own" {
		t.Errorf("podGroupName %q: without gang scheduling the user's pod spec must be left alone", got)
	}
}

// TestBuildPodCarriesAttempt: a restarted Training replica's PodCliques are
// labelled with the attempt, and their pods inherit it like every other
// PodClique label.
func TestBuildPodCarriesAttempt(t *testing.T) {
	for _, pclq := range []*copsev1alpha1.PodClique{testStandaloneClique(2), testGroupedClique(2)} {
		pclq.Labels[labels.AttemptKey] = "2"
		pod := buildPod(testTemplate(t, pclq, true, 5), 1)
		if got := pod.Labels[labels.AttemptKey]; got != "2" {
			t.Errorf("%s: pod label %s=%q, want 2", pclq.Name, labels.AttemptKey, got)
		}
	}
}
