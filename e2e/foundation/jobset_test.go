package foundation_test

import (
	"context"
	"net/url"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
)

// Labels JobSet v0.12.0 puts on the pods of its Jobs: the first by the
// controller (and JobSet's pod webhooks only see pods that carry it), the
// second by its pod defaulting webhook (mpod.kb.io).
const (
	labelJobSetName    = "jobset.sigs.k8s.io/jobset-name"
	labelJobSetPodPrio = "jobset.sigs.k8s.io/priority"
)

func getJobSet(ctx context.Context, namespace, name string) *unstructured.Unstructured {
	GinkgoHelper()
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(framework.JobSetGVR.GroupVersion().WithKind("JobSet"))
	Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, got)).To(Succeed())
	return got
}

// nestedField reads one field of obj, failing the spec if it is absent.
func nestedField(obj map[string]any, fields ...string) any {
	GinkgoHelper()
	v, found, err := unstructured.NestedFieldNoCopy(obj, fields...)
	Expect(err).NotTo(HaveOccurred())
	Expect(found).To(BeTrue(), "%s is not set", strings.Join(fields, "."))
	return v
}

func jobSetConditionTrue(js *unstructured.Unstructured, conditionType string) bool {
	conditions, _, _ := unstructured.NestedSlice(js.Object, "status", "conditions")
	for _, c := range conditions {
		if c, ok := c.(map[string]any); ok && c["type"] == conditionType && c["status"] == string(metav1.ConditionTrue) {
			return true
		}
	}
	return false
}

var _ = Describe("JobSet controller with its webhooks", Label("foundation"), func() {
	var namespace string

	BeforeEach(func(ctx context.Context) {
		namespace = env.NewNamespace(ctx, "jobset")
	})

	It("registers JobSet's webhook configurations under JobSet's names, calling the local controller", func(ctx context.Context) {
		mutating := &admissionregistrationv1.MutatingWebhookConfiguration{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: "jobset-mutating-webhook-configuration"}, mutating)).To(Succeed())
		validating := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: "jobset-validating-webhook-configuration"}, validating)).To(Succeed())

		paths := map[string]string{}
		selectors := map[string]*metav1.LabelSelector{}
		configs := map[string]admissionregistrationv1.WebhookClientConfig{}
		for _, w := range mutating.Webhooks {
			configs[w.Name], selectors[w.Name] = w.ClientConfig, w.ObjectSelector
		}
		for _, w := range validating.Webhooks {
			configs[w.Name], selectors[w.Name] = w.ClientConfig, w.ObjectSelector
		}
		for name, config := range configs {
			Expect(config.Service).To(BeNil(), "%s still names an in-cluster Service", name)
			Expect(config.URL).NotTo(BeNil(), name)
			u, err := url.Parse(*config.URL)
			Expect(err).NotTo(HaveOccurred(), name)
			Expect(u.Scheme).To(Equal("https"), name)
			Expect(u.Hostname()).To(Equal("127.0.0.1"), name)
			Expect(config.CABundle).NotTo(BeEmpty(), name)
			paths[name] = u.Path
		}
		Expect(paths).To(Equal(map[string]string{
			"mjobset.kb.io": "/mutate-jobset-x-k8s-io-v1alpha2-jobset",
			"mpod.kb.io":    "/mutate--v1-pod",
			"vjobset.kb.io": "/validate-jobset-x-k8s-io-v1alpha2-jobset",
			"vpod.kb.io":    "/validate--v1-pod",
		}))
		// JobSet's own patches keep its pod webhooks off every other pod
		// (copse's among them).
		onlyJobSetPods := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: labelJobSetName, Operator: metav1.LabelSelectorOpExists},
		}}
		Expect(selectors["mpod.kb.io"]).To(Equal(onlyJobSetPods))
		Expect(selectors["vpod.kb.io"]).To(Equal(onlyJobSetPods))
	})

	It("applies JobSet's defaults to a JobSet created through the API server", func(ctx context.Context) {
		js, err := framework.NewJobSet(namespace, "defaults", batchv1.JobSpec{
			Parallelism: ptr.To[int32](1),
			Completions: ptr.To[int32](1),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "main", Image: "example.com/train:1"}},
			}},
		})
		Expect(err).NotTo(HaveOccurred())
		// Suspended: this spec is about what is stored, not about pods.
		Expect(unstructured.SetNestedField(js.Object, true, "spec", "suspend")).To(Succeed())
		// A failure-policy rule without a name: the CRD requires one, so the
		// JobSet is admitted only if the defaulting webhook names it first.
		Expect(unstructured.SetNestedMap(js.Object, map[string]any{
			"maxRestarts": int64(1),
			"rules":       []any{map[string]any{"action": "FailJobSet"}},
		}, "spec", "failurePolicy")).To(Succeed())
		Expect(env.Client.Create(ctx, js)).To(Succeed())

		got := getJobSet(ctx, namespace, "defaults").Object
		By("JobSet's defaulting webhook (mjobset.kb.io)")
		Expect(nestedField(got, "spec", "successPolicy", "operator")).To(Equal("All"))
		Expect(nestedField(got, "spec", "startupPolicy", "startupPolicyOrder")).To(Equal("AnyOrder"))
		Expect(nestedField(got, "spec", "network", "enableDNSHostnames")).To(BeTrue())
		Expect(nestedField(got, "spec", "network", "publishNotReadyAddresses")).To(BeTrue())
		rules := nestedField(got, "spec", "failurePolicy", "rules").([]any)
		Expect(rules).To(HaveLen(1))
		Expect(rules[0]).To(HaveKeyWithValue("name", "failurePolicyRule0"))
		rjobs := nestedField(got, "spec", "replicatedJobs").([]any)
		Expect(rjobs).To(HaveLen(1))
		rjob := rjobs[0].(map[string]any)
		Expect(nestedField(rjob, "template", "spec", "completionMode")).To(Equal("Indexed"))
		Expect(nestedField(rjob, "template", "spec", "template", "spec", "restartPolicy")).To(Equal("OnFailure"))

		By("the JobSet CRD's schema defaults")
		Expect(nestedField(rjob, "replicas")).To(Equal(int64(1)))
		Expect(nestedField(rjob, "groupName")).To(Equal("default"))
		Expect(nestedField(got, "spec", "failurePolicy", "restartStrategy")).To(Equal("Recreate"))
	})

	It("refuses a JobSet whose network subdomain is not a DNS name, naming the field", func(ctx context.Context) {
		js, err := framework.NewJobSet(namespace, "bad-subdomain", batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "main", Image: "example.com/train:1"}},
			}},
		})
		Expect(err).NotTo(HaveOccurred())
		// The CRD schema accepts any string here; JobSet's validating
		// webhook requires an RFC 1123 subdomain.
		Expect(unstructured.SetNestedField(js.Object, "Not_A_DNS_Name", "spec", "network", "subdomain")).To(Succeed())
		err = env.Client.Create(ctx, js)
		framework.ExpectAdmissionInvalid(err, framework.JobSetValidatingWebhook,
			"spec.network.subdomain", `"Not_A_DNS_Name"`, "RFC 1123 subdomain")
	})

	It("runs a JobSet of one replicated Job of 2 pods to Completed on the simulated nodes", func(ctx context.Context) {
		js, err := framework.NewJobSet(namespace, "runs", batchv1.JobSpec{
			Parallelism: ptr.To[int32](2),
			Completions: ptr.To[int32](2),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
					cluster.AnnotationRunDuration: "2s",
					cluster.AnnotationExitCode:    "0",
				}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "example.com/train:1"}}},
			},
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(env.Client.Create(ctx, js)).To(Succeed())

		Eventually(func(g Gomega) {
			got := getJobSet(ctx, namespace, "runs")
			g.Expect(jobSetConditionTrue(got, framework.ConditionJobSetCompleted)).To(BeTrue(),
				"conditions: %v", got.Object["status"])
		}).WithContext(ctx).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(Succeed())

		pods := &corev1.PodList{}
		Expect(env.Client.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels{labelJobSetName: "runs"})).To(Succeed())
		Expect(pods.Items).To(HaveLen(2))
		for _, pod := range pods.Items {
			Expect(pod.Status.Phase).To(Equal(corev1.PodSucceeded), pod.Name)
			Expect(pod.Spec.NodeName).To(HavePrefix("gpu-"), "%s ran on a simulated node", pod.Name)
			Expect(pod.Labels).To(HaveKey(labelJobSetPodPrio), "%s passed JobSet's pod defaulting webhook (mpod.kb.io)", pod.Name)
		}
	})
})
