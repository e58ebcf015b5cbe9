package core_test

import (
	"context"
	"fmt"
	"strconv"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
)

var _ = Describe("PodCliqueSet generated objects", Label("core"), func() {
	It("creates every documented object, name, label, hostname and variable, and deletes them all with the PodCliqueSet", func(ctx context.Context) {
		namespace := env.NewNamespace(ctx, "objects")

		leader := cliqueTemplate("leader", 1, podSpec(0))
		leader.Labels = map[string]string{"team": "nlp"}
		leader.Annotations = map[string]string{"example.com/note": "leader"}
		pcs := newPCS(namespace, "llm", 2,
			leader,
			cliqueTemplate("worker", 3, podSpec(0)),
			cliqueTemplate("prefill", 1, podSpec(0)),
			cliqueTemplate("decode", 2, podSpec(0)),
		)
		pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{{
			Name: "serve", CliqueNames: []string{"prefill", "decode"}, Replicas: ptr.To[int32](2), MinAvailable: ptr.To[int32](1),
		}}
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())

		// Expected PodCliques: name -> (replica, scaling group object, group replica, clique, replicas, gang).
		type want struct {
			replica                int
			group, clique, gang    string
			groupReplica, replicas int
		}
		wantCliques := map[string]want{}
		for r := range 2 {
			base := fmt.Sprintf("llm-%d", r)
			wantCliques[fmt.Sprintf("llm-%d-leader", r)] = want{replica: r, clique: "leader", replicas: 1, gang: base}
			wantCliques[fmt.Sprintf("llm-%d-worker", r)] = want{replica: r, clique: "worker", replicas: 3, gang: base}
			for j := range 2 {
				group := fmt.Sprintf("llm-%d-serve", r)
				gang := base
				if j >= 1 { // minAvailable 1: the second group replica is its own gang
					gang = fmt.Sprintf("%s-%d", group, j)
				}
				wantCliques[fmt.Sprintf("%s-%d-prefill", group, j)] = want{replica: r, group: group, groupReplica: j, clique: "prefill", replicas: 1, gang: gang}
				wantCliques[fmt.Sprintf("%s-%d-decode", group, j)] = want{replica: r, group: group, groupReplica: j, clique: "decode", replicas: 2, gang: gang}
			}
		}

		By("waiting for every pod to run and both replicas to be available")
		Eventually(func(g Gomega) {
			pods := podsOf(ctx, g, namespace, "llm")
			g.Expect(pods).To(HaveLen(20))
			for i := range pods {
				g.Expect(isReady(&pods[i])).To(BeTrue(), "pod %s not ready", pods[i].Name)
			}
			got := getPCS(ctx, g, namespace, "llm")
			g.Expect(got.Status.AvailableReplicas).To(Equal(int32(2)))
			g.Expect(got.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseRunning))
			// A replica is available once its group meets minAvailable (1);
			// wait until both group replicas are counted as well.
			for r := range 2 {
				pcsg := &copsev1alpha1.PodCliqueScalingGroup{}
				g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: fmt.Sprintf("llm-%d-serve", r)}, pcsg)).To(Succeed())
				g.Expect(pcsg.Status.AvailableReplicas).To(Equal(int32(2)))
			}
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())

		By("checking the replica Services")
		for r := range 2 {
			svc := &corev1.Service{}
			Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: fmt.Sprintf("llm-%d", r)}, svc)).To(Succeed())
			Expect(svc.Spec.ClusterIP).To(Equal(corev1.ClusterIPNone))
			Expect(svc.Spec.Selector).To(Equal(map[string]string{labels.ManagedByKey: labels.ManagedByValue, labels.PartOfKey: "llm", labels.ReplicaKey: strconv.Itoa(r)}))
			Expect(metav1.IsControlledBy(svc, pcs)).To(BeTrue())
		}

		By("checking the PodCliqueScalingGroups")
		for r := range 2 {
			pcsg := &copsev1alpha1.PodCliqueScalingGroup{}
			Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: fmt.Sprintf("llm-%d-serve", r)}, pcsg)).To(Succeed())
			Expect(pcsg.Spec.Replicas).To(Equal(int32(2)))
			Expect(pcsg.Spec.CliqueNames).To(Equal([]string{"prefill", "decode"}))
			Expect(pcsg.Labels).To(HaveKeyWithValue(labels.ReplicaKey, strconv.Itoa(r)))
			Expect(metav1.IsControlledBy(pcsg, pcs)).To(BeTrue())
		}

		By("checking every PodClique")
		var cliques copsev1alpha1.PodCliqueList
		Expect(env.Client.List(ctx, &cliques, client.InNamespace(namespace), client.MatchingLabels{labels.PartOfKey: "llm"})).To(Succeed())
		Expect(cliques.Items).To(HaveLen(len(wantCliques)))
		for _, pclq := range cliques.Items {
			w, ok := wantCliques[pclq.Name]
			Expect(ok).To(BeTrue(), "unexpected PodClique %s", pclq.Name)
			Expect(pclq.Spec.Replicas).To(Equal(int32(w.replicas)), pclq.Name)
			Expect(pclq.Labels).To(HaveKeyWithValue(labels.ReplicaKey, strconv.Itoa(w.replica)))
			Expect(pclq.Labels).To(HaveKeyWithValue(labels.PodCliqueKey, pclq.Name))
			Expect(pclq.Labels).To(HaveKeyWithValue(labels.CliqueTemplateKey, w.clique))
			Expect(pclq.Labels).To(HaveKeyWithValue(labels.PodGangKey, w.gang))
			owner := metav1.GetControllerOf(&pclq)
			Expect(owner).NotTo(BeNil())
			if w.group == "" {
				Expect(owner.Kind).To(Equal("PodCliqueSet"))
				Expect(pclq.Labels).To(HaveKeyWithValue(labels.ComponentKey, labels.ComponentPodCliqueOfSet))
			} else {
				Expect(owner.Kind).To(Equal("PodCliqueScalingGroup"))
				Expect(owner.Name).To(Equal(w.group))
				Expect(pclq.Labels).To(HaveKeyWithValue(labels.ScalingGroupKey, w.group))
				Expect(pclq.Labels).To(HaveKeyWithValue(labels.ScalingGroupReplicaKey, strconv.Itoa(w.groupReplica)))
				Expect(pclq.Labels).To(HaveKeyWithValue(labels.ComponentKey, labels.ComponentPodCliqueOfGroup))
			}
			if w.clique == "leader" {
				Expect(pclq.Labels).To(HaveKeyWithValue("team", "nlp"), "template labels go on the PodClique")
				Expect(pclq.Annotations).To(HaveKeyWithValue("example.com/note", "leader"))
			}
		}

		By("checking every pod: labels, hostname, subdomain, gang, environment")
		pods := podsOf(ctx, Default, namespace, "llm")
		seen := map[string]bool{}
		for _, pod := range pods {
			pclqName := pod.Labels[labels.PodCliqueKey]
			w, ok := wantCliques[pclqName]
			Expect(ok).To(BeTrue(), "pod %s has PodClique label %q", pod.Name, pclqName)
			index := pod.Labels[labels.PodIndexKey]
			hostname := pclqName + "-" + index
			Expect(seen[hostname]).To(BeFalse(), "two pods with hostname %s", hostname)
			seen[hostname] = true
			Expect(pod.Spec.Hostname).To(Equal(hostname))
			Expect(pod.Spec.Subdomain).To(Equal(fmt.Sprintf("llm-%d", w.replica)))
			Expect(pod.Spec.SchedulingGroup).NotTo(BeNil())
			Expect(*pod.Spec.SchedulingGroup.PodGroupName).To(Equal(w.gang))
			Expect(pod.Labels).To(HaveKeyWithValue(labels.ReplicaKey, strconv.Itoa(w.replica)))
			Expect(pod.Labels).To(HaveKeyWithValue(labels.AttemptKey, "0"))
			owner := metav1.GetControllerOf(&pod)
			Expect(owner).NotTo(BeNil())
			Expect(owner.Name).To(Equal(pclqName))

			vars := envOf(&pod)
			Expect(vars).To(HaveKeyWithValue("GROVE_PCS_NAME", "llm"))
			Expect(vars).To(HaveKeyWithValue("GROVE_PCS_INDEX", strconv.Itoa(w.replica)))
			Expect(vars).To(HaveKeyWithValue("GROVE_PCLQ_NAME", pclqName))
			Expect(vars).To(HaveKeyWithValue("GROVE_PCLQ_POD_INDEX", index))
			Expect(vars).To(HaveKeyWithValue("GROVE_HEADLESS_SERVICE", fmt.Sprintf("llm-%d.%s.svc.cluster.local", w.replica, namespace)))
			if w.group != "" {
				Expect(vars).To(HaveKeyWithValue("GROVE_PCSG_NAME", w.group))
				Expect(vars).To(HaveKeyWithValue("GROVE_PCSG_INDEX", strconv.Itoa(w.groupReplica)))
				Expect(vars).To(HaveKeyWithValue("GROVE_PCSG_TEMPLATE_NUM_PODS", "3"))
			} else {
				Expect(vars).NotTo(HaveKey("GROVE_PCSG_NAME"))
			}
			if w.clique == "leader" {
				Expect(pod.Labels).To(HaveKeyWithValue("team", "nlp"))
				Expect(pod.Annotations).To(HaveKeyWithValue("example.com/note", "leader"))
			}
		}
		Expect(seen).To(HaveLen(20))

		By("checking the Workload and its PodGroups")
		workload := &schedulingv1beta1.Workload{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "llm"}, workload)).To(Succeed())
		Expect(metav1.IsControlledBy(workload, pcs)).To(BeTrue())
		wantGroups := map[string]int32{"llm-0": 7, "llm-1": 7, "llm-0-serve-1": 3, "llm-1-serve-1": 3}
		var groups schedulingv1beta1.PodGroupList
		Expect(env.Client.List(ctx, &groups, client.InNamespace(namespace))).To(Succeed())
		Expect(groups.Items).To(HaveLen(len(wantGroups)))
		for _, pg := range groups.Items {
			minCount, ok := wantGroups[pg.Name]
			Expect(ok).To(BeTrue(), "unexpected PodGroup %s", pg.Name)
			Expect(pg.Spec.SchedulingPolicy.Gang).NotTo(BeNil())
			Expect(pg.Spec.SchedulingPolicy.Gang.MinCount).To(Equal(minCount), pg.Name)
			Expect(pg.Spec.WorkloadRef.WorkloadName).To(Equal("llm"))
			Expect(metav1.IsControlledBy(&pg, pcs)).To(BeTrue())
		}

		By("deleting the PodCliqueSet: nothing it generated is left")
		Expect(env.Client.Delete(ctx, pcs)).To(Succeed())
		Eventually(func(g Gomega) {
			selector := client.MatchingLabels{labels.PartOfKey: "llm"}
			ns := client.InNamespace(namespace)
			var pods corev1.PodList
			g.Expect(env.Client.List(ctx, &pods, ns, selector)).To(Succeed())
			g.Expect(pods.Items).To(BeEmpty(), "pods left")
			var cliques copsev1alpha1.PodCliqueList
			g.Expect(env.Client.List(ctx, &cliques, ns)).To(Succeed())
			g.Expect(cliques.Items).To(BeEmpty(), "PodCliques left")
			var pcsgs copsev1alpha1.PodCliqueScalingGroupList
			g.Expect(env.Client.List(ctx, &pcsgs, ns)).To(Succeed())
			g.Expect(pcsgs.Items).To(BeEmpty(), "PodCliqueScalingGroups left")
			var services corev1.ServiceList
			g.Expect(env.Client.List(ctx, &services, ns, selector)).To(Succeed())
			g.Expect(services.Items).To(BeEmpty(), "Services left")
			var podGroups schedulingv1beta1.PodGroupList
			g.Expect(env.Client.List(ctx, &podGroups, ns)).To(Succeed())
			g.Expect(podGroups.Items).To(BeEmpty(), "PodGroups left")
			var workloads schedulingv1beta1.WorkloadList
			g.Expect(env.Client.List(ctx, &workloads, ns)).To(Succeed())
			g.Expect(workloads.Items).To(BeEmpty(), "Workloads left")
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
	})
})
