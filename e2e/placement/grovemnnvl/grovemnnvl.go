// Package grovemnnvl is what copse's ports of Grove's auto-MNNVL e2e suite
// (Grove's operator/e2e/tests/auto-mnnvl) share: Grove's manifests
// (manifests/, byte for byte, see manifests/PROVENANCE.md), applied as
// Grove's suite applies them (only metadata.name changes), and Grove's
// assertions on ComputeDomains and channel claims. The specs are in the
// suites of the configurations Grove runs them in: e2e/placement (the
// ComputeDomain CRD is served; MNNVL enabled, and disabled for a while) and
// e2e/placement/withoutcomputedomains (it is not).
//
// Where Grove's assertion reads something copse keeps elsewhere, the port
// reads copse's place and says so (docs/placement.md lists the differences):
// the channel claim is on each pod, not in the PodClique's spec.
package grovemnnvl

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/mnnvl"
)

// Grove's manifests, by the tests that apply them.
const (
	// ComprehensiveBare: a GPU and a CPU clique, no annotation
	// (testNoMNNVLArtifactsWhenDisabled).
	ComprehensiveBare = "mnnvl-comprehensive-bare.yaml"
	// ComprehensiveMix: group "default" on the PodCliqueSet, every
	// inherit/override/none combination below it (testMNNVLEndToEnd).
	ComprehensiveMix = "mnnvl-comprehensive-mix.yaml"
	// CPUWithAnnotation: group "default" on the PodCliqueSet and on a CPU
	// clique (testCPUPCLQIgnoredEvenWithAnnotation).
	CPUWithAnnotation = "mnnvl-cpu-with-annotation.yaml"
	// GPUBare: one GPU clique, no annotation (testNoAnnotationNoMNNVL).
	GPUBare = "mnnvl-gpu-bare.yaml"
	// GPUDefault: one GPU clique, group "default" on the PodCliqueSet.
	GPUDefault = "mnnvl-gpu-default.yaml"
	// GPUInvalid: a group value with spaces (testInvalidAnnotationRejected).
	GPUInvalid = "mnnvl-gpu-invalid.yaml"
	// GPUOptOut: group "none" on the PodCliqueSet
	// (testExplicitOptOutHonored).
	GPUOptOut = "mnnvl-gpu-optout.yaml"
)

// Wait bounds every wait, as Grove's suite's poll timeout does.
const Wait = 2 * time.Minute

//go:embed manifests/*.yaml
var manifests embed.FS

// Manifest is the PodCliqueSet of one of Grove's manifests, named name in
// namespace.
func Manifest(file, namespace, name string) (*unstructured.Unstructured, error) {
	raw, err := manifests.ReadFile("manifests/" + file)
	if err != nil {
		return nil, fmt.Errorf("read Grove's manifest %s: %w", file, err)
	}
	var found *unstructured.Unstructured
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		obj := &unstructured.Unstructured{}
		err := decoder.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("decode Grove's manifest %s: %w", file, err)
		}
		if len(obj.Object) == 0 {
			continue // the comment before the first "---"
		}
		if found != nil {
			return nil, fmt.Errorf("Grove's manifest %s holds more than one object", file)
		}
		found = obj
	}
	if found == nil || found.GetKind() != "PodCliqueSet" {
		return nil, fmt.Errorf("Grove's manifest %s holds no PodCliqueSet", file)
	}
	found.SetName(name)
	found.SetNamespace(namespace)
	return found, nil
}

// Apply creates the PodCliqueSet of one of Grove's manifests under name, as
// Grove's applyMNNVLYAML does: the object as Grove wrote it, renamed.
func Apply(ctx context.Context, c client.Client, file, namespace, name string) error {
	pcs, err := Manifest(file, namespace, name)
	if err != nil {
		return err
	}
	return c.Create(ctx, pcs)
}

// Scale sets a PodCliqueSet's spec.replicas with a merge patch, as Grove's
// suite scales it.
func Scale(ctx context.Context, c client.Client, namespace, name string, replicas int) error {
	pcs := &copsev1alpha1.PodCliqueSet{}
	pcs.Namespace, pcs.Name = namespace, name
	patch := []byte(`{"spec":{"replicas":` + strconv.Itoa(replicas) + `}}`)
	return c.Patch(ctx, pcs, client.RawPatch(types.MergePatchType, patch))
}

// ComputeDomainName is Grove's name of a replica's ComputeDomain and of its
// channel's ResourceClaimTemplate: <pcs>-<replica>-<group>.
func ComputeDomainName(pcs string, replica int, group string) string {
	return fmt.Sprintf("%s-%d-%s", pcs, replica, group)
}

// ComputeDomains lists a namespace's ComputeDomains matching opts. A cluster
// that does not serve the kind has none, as Grove's suite reads it.
func ComputeDomains(ctx context.Context, c client.Client, namespace string, opts ...client.ListOption) ([]unstructured.Unstructured, error) {
	list := mnnvl.NewComputeDomainList()
	err := c.List(ctx, list, append([]client.ListOption{client.InNamespace(namespace)}, opts...)...)
	if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
		return nil, nil
	}
	return list.Items, err
}

// WaitComputeDomainCount waits until a PodCliqueSet has n ComputeDomains
// (Grove's waitForComputeDomainCount: those labelled part-of the
// PodCliqueSet).
func WaitComputeDomainCount(ctx context.Context, c client.Client, namespace, pcs string, n int) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		domains, err := ComputeDomains(ctx, c, namespace, client.MatchingLabels{labels.PartOfKey: pcs})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(domains).To(HaveLen(n), "ComputeDomains of %s", pcs)
	}).WithContext(ctx).WithTimeout(Wait).Should(Succeed())
}

// GetComputeDomain reads one ComputeDomain.
func GetComputeDomain(ctx context.Context, c client.Client, namespace, name string) (*unstructured.Unstructured, error) {
	cd := mnnvl.NewComputeDomain()
	return cd, c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, cd)
}

// ExpectComputeDomainContent is Grove's verifyComputeDomainContent: the
// ComputeDomain of group in replica exists, has exactly one owner reference,
// the PodCliqueSet's, is labelled part-of it and with the replica's index,
// has numNodes 0 and a channel template of its own name. (Grove also checks
// its own finalizer grove.io/computedomain-finalizer, which copse does not
// put on ComputeDomains: docs/placement.md says why.)
func ExpectComputeDomainContent(ctx context.Context, c client.Client, namespace, pcs string, replica int, group string, pcsUID types.UID) {
	GinkgoHelper()
	name := ComputeDomainName(pcs, replica, group)
	cd, err := GetComputeDomain(ctx, c, namespace, name)
	Expect(err).NotTo(HaveOccurred(), "ComputeDomain %s should exist", name)
	owners := cd.GetOwnerReferences()
	Expect(owners).To(HaveLen(1), "ComputeDomain %s should have exactly one owner reference", name)
	Expect(owners[0].Kind).To(Equal("PodCliqueSet"))
	Expect(owners[0].Name).To(Equal(pcs))
	Expect(owners[0].UID).To(Equal(pcsUID))
	Expect(cd.GetLabels()).To(HaveKeyWithValue(labels.PartOfKey, pcs))
	Expect(cd.GetLabels()).To(HaveKeyWithValue(labels.ReplicaKey, strconv.Itoa(replica)))
	numNodes, found, err := unstructured.NestedInt64(cd.Object, "spec", "numNodes")
	Expect(err).NotTo(HaveOccurred())
	Expect(found).To(BeTrue(), "numNodes should be set for ComputeDomain %s", name)
	Expect(numNodes).To(BeZero(), "numNodes should be 0 for elastic mode")
	template, found, err := unstructured.NestedString(cd.Object, "spec", "channel", "resourceClaimTemplate", "name")
	Expect(err).NotTo(HaveOccurred())
	Expect(found).To(BeTrue(), "resourceClaimTemplate.name should be set for ComputeDomain %s", name)
	Expect(template).To(Equal(name), "ComputeDomain %s should reference its own template", name)
}

// WaitPodClique waits until a PodClique exists and returns it (Grove's
// waitForPCLQ).
func WaitPodClique(ctx context.Context, c client.Client, namespace, name string) *copsev1alpha1.PodClique {
	GinkgoHelper()
	pclq := &copsev1alpha1.PodClique{}
	Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pclq)).To(Succeed())
	}).WithContext(ctx).WithTimeout(Wait).Should(Succeed(), "PodClique %s", name)
	return pclq
}

// PodCliquePods waits until a PodClique exists and has its spec.replicas
// pods, and returns them: copse puts the channel claim on each pod as it
// creates it, where Grove's assertions read the PodClique's spec.
func PodCliquePods(ctx context.Context, c client.Client, namespace, name string) []corev1.Pod {
	GinkgoHelper()
	pclq := WaitPodClique(ctx, c, namespace, name)
	var pods []corev1.Pod
	Eventually(func(g Gomega) {
		list := &corev1.PodList{}
		g.Expect(c.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{labels.PodCliqueKey: name})).To(Succeed())
		pods = pods[:0]
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil && !framework.IsTerminal(&p) {
				pods = append(pods, p)
			}
		}
		g.Expect(pods).To(HaveLen(int(pclq.Spec.Replicas)), "pods of PodClique %s", name)
	}).WithContext(ctx).WithTimeout(Wait).Should(Succeed())
	return pods
}

// ExpectChannelClaim is Grove's requirePodSpecMNNVLClaim on each pod of a
// PodClique: the pod claims mnnvl-claim from the template of its replica's
// ComputeDomain of group, and every container that requests GPUs uses it.
func ExpectChannelClaim(ctx context.Context, c client.Client, namespace, pclq, pcs string, replica int, group string) {
	GinkgoHelper()
	want := ComputeDomainName(pcs, replica, group)
	for _, pod := range PodCliquePods(ctx, c, namespace, pclq) {
		var claim *corev1.PodResourceClaim
		for i := range pod.Spec.ResourceClaims {
			if pod.Spec.ResourceClaims[i].Name == mnnvl.ClaimName {
				claim = &pod.Spec.ResourceClaims[i]
			}
		}
		Expect(claim).NotTo(BeNil(), "pod %s of GPU clique %s should include the MNNVL resourceClaim", pod.Name, pclq)
		Expect(claim.ResourceClaimTemplateName).To(HaveValue(Equal(want)), "pod %s", pod.Name)
		for _, container := range pod.Spec.Containers {
			if mnnvl.RequestsGPUs(&corev1.PodSpec{Containers: []corev1.Container{container}}) {
				Expect(container.Resources.Claims).To(ContainElement(corev1.ResourceClaim{Name: mnnvl.ClaimName}),
					"GPU container %s of pod %s should reference the MNNVL claim", container.Name, pod.Name)
			}
		}
	}
}

// ExpectNoChannelClaim is Grove's requireNoPodSpecMNNVLClaim on each pod of
// a PodClique: neither the pod nor any of its containers has the claim.
func ExpectNoChannelClaim(ctx context.Context, c client.Client, namespace, pclq string) {
	GinkgoHelper()
	for _, pod := range PodCliquePods(ctx, c, namespace, pclq) {
		Expect(pod.Spec.ResourceClaims).NotTo(ContainElement(HaveField("Name", mnnvl.ClaimName)),
			"pod %s of PodClique %s should not have the MNNVL resourceClaim", pod.Name, pclq)
		for _, container := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
			Expect(container.Resources.Claims).NotTo(ContainElement(HaveField("Name", mnnvl.ClaimName)),
				"container %s of pod %s should not reference the MNNVL claim", container.Name, pod.Name)
		}
	}
}

// DeletePodCliqueSet deletes a PodCliqueSet by name, as Grove's deletePCS
// (a missing one is fine).
func DeletePodCliqueSet(ctx context.Context, c client.Client, namespace, name string) {
	pcs := &copsev1alpha1.PodCliqueSet{}
	pcs.Namespace, pcs.Name = namespace, name
	_ = c.Delete(ctx, pcs)
}

// NoArtifactsWhenDisabled is Grove's testNoMNNVLArtifactsWhenDisabled,
// which Grove runs with MNNVL disabled and on a cluster without the
// ComputeDomain CRD: a GPU and a CPU clique without the annotation get
// their PodCliques (so the reconciler has run), no ComputeDomain exists in
// the namespace, and no pod has the claim.
func NoArtifactsWhenDisabled(ctx context.Context, c client.Client, namespace string) {
	GinkgoHelper()
	const name = "test-no-artifacts"
	Expect(Apply(ctx, c, ComprehensiveBare, namespace, name)).To(Succeed())
	defer DeletePodCliqueSet(ctx, c, namespace, name)
	cliques := []string{name + "-0-gpu", name + "-0-cpu"}
	for _, pclq := range cliques {
		WaitPodClique(ctx, c, namespace, pclq)
	}
	domains, err := ComputeDomains(ctx, c, namespace)
	Expect(err).NotTo(HaveOccurred())
	Expect(domains).To(BeEmpty())
	for _, pclq := range cliques {
		ExpectNoChannelClaim(ctx, c, namespace, pclq)
	}
}
