package helm_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/charts/copse/crds"
	trainercrds "github.com/copse-dev/copse/charts/copse/trainer-crds"
	"github.com/copse-dev/copse/e2e/framework"
	copsewebhook "github.com/copse-dev/copse/internal/webhook"
)

// The release the specs install, and the names the chart gives its objects.
const (
	release           = "copse"
	releaseNamespace  = "copse-system"
	configurationName = "copse" // webhook.configurationName
	serviceAccount    = "copse-operator"
	operatorRoleName  = "copse-operator"
	configMapName     = "copse-config"
	certSecretName    = "copse-webhook-serving-cert"
	leaseName         = "copse-operator-leader"
	flowControlName   = "copse-operator" // PriorityLevelConfiguration and FlowSchema

	longWait = 2 * time.Minute
)

// The specs build on one another: install, run workloads, upgrade, uninstall.
var _ = Describe("Helm chart (local mode, operator as the chart's ServiceAccount)", Ordered, Label("helm"), func() {
	var (
		ports        framework.LocalOperatorPorts
		workloads    string // namespace of the user workloads
		chart        string
		caBundles    map[string][]byte // as injected by the operator after install
		saKubeconfig string
	)

	// startOperator runs the operator as the chart's ServiceAccount with the
	// configuration in the chart's ConfigMap; only what a local process must
	// change is changed: where it serves metrics and probes (free loopback
	// ports) and where it writes the certificate files.
	startOperator := func(ctx context.Context) *configv1alpha1.OperatorConfiguration {
		GinkgoHelper()
		env.Operator = nil // a stopped operator is replaced by a new process
		op, err := framework.StartChartOperator(ctx, env, framework.ChartOperatorOptions{
			Release: release, Namespace: releaseNamespace, Ports: ports})
		Expect(err).NotTo(HaveOccurred())
		AddReportEntry("operator configuration from the chart", string(op.RawConfig))
		Expect(op.ServiceAccount).To(Equal(releaseNamespace + "/" + serviceAccount))
		saKubeconfig = op.Kubeconfig
		return op.Config
	}

	stopOperator := func() {
		GinkgoHelper()
		Expect(env.Operator.Stop()).To(Succeed())
	}

	// expectNoForbidden fails if the API server refused any request of the
	// operator: its RBAC comes from the chart alone.
	expectNoForbidden := func() {
		GinkgoHelper()
		lines, err := env.Operator.LogLines("forbidden")
		Expect(err).NotTo(HaveOccurred())
		Expect(lines).To(BeEmpty(), "the API server refused requests of the operator: the chart's RBAC lacks a permission (log %s)", env.Operator.LogPath())
	}

	helmRun := func(ctx context.Context, args ...string) string {
		GinkgoHelper()
		out, err := helm.Run(ctx, args...)
		Expect(err).NotTo(HaveOccurred())
		AddReportEntry("helm "+strings.Join(args, " "), out)
		return out
	}

	BeforeAll(func(ctx context.Context) {
		var err error
		ports, err = framework.AllocateLocalOperatorPorts()
		Expect(err).NotTo(HaveOccurred())
		chart, err = framework.ChartDir()
		Expect(err).NotTo(HaveOccurred())
		workloads = env.NewNamespace(ctx, "workloads")

		By("removing the CRDs the suite's setup installed, so that the chart installs its own")
		all, err := copseCRDs()
		Expect(err).NotTo(HaveOccurred())
		// Deleting a CRD whose storage is still initializing (it was created
		// a moment ago) can leave it stuck behind its cleanup finalizer: the
		// API server's CRD finalizer fails to list the instances ("storage
		// is (re)initializing") and may not retry for minutes. Wait until
		// the watch cache serves each kind (resourceVersion "0" lists come
		// from it) first.
		// Every kind of every CRD, as metadata: a kind left out (as
		// ClusterTopologyBinding once was) can leave its CRD stuck.
		fromCache := &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}}
		Eventually(func(g Gomega) {
			for _, crd := range all {
				for _, version := range crd.Spec.Versions {
					if !version.Served {
						continue
					}
					list := &metav1.PartialObjectMetadataList{}
					list.SetGroupVersionKind(schema.GroupVersionKind{Group: crd.Spec.Group, Version: version.Name, Kind: crd.Spec.Names.ListKind})
					g.Expect(env.Client.List(ctx, list, fromCache)).To(Succeed(), "listing %s %s from the watch cache", crd.Name, version.Name)
				}
			}
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		for _, crd := range all {
			Expect(client.IgnoreNotFound(env.Client.Delete(ctx, crd.DeepCopy()))).To(Succeed())
		}
		Eventually(func(g Gomega) {
			for _, crd := range all {
				err := env.Client.Get(ctx, client.ObjectKey{Name: crd.Name}, &apiextensionsv1.CustomResourceDefinition{})
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "CRD %s still there", crd.Name)
			}
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
	})

	It("installs, and the operator runs with the chart's ServiceAccount and configuration", func(ctx context.Context) {
		out, err := framework.InstallLocalRelease(ctx, helm, release, releaseNamespace, ports)
		Expect(err).NotTo(HaveOccurred())
		AddReportEntry("helm install (local mode)", out)

		By("installing the CRDs from crds/ and, as templates, trainer-crds/")
		all, err := copseCRDs()
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			for _, want := range all {
				crd := &apiextensionsv1.CustomResourceDefinition{}
				g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: want.Name}, crd)).To(Succeed())
				g.Expect(crd.Status.Conditions).To(ContainElement(And(
					HaveField("Type", apiextensionsv1.Established), HaveField("Status", apiextensionsv1.ConditionTrue))))
			}
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())

		By("installing no Deployment and no Service in local mode")
		deployments, err := env.Clientset.AppsV1().Deployments(releaseNamespace).List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(deployments.Items).To(BeEmpty())
		services, err := env.Clientset.CoreV1().Services(releaseNamespace).List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(services.Items).To(BeEmpty())

		By("rendering no caBundle: the operator injects it")
		bundles, err := framework.WebhookCABundles(ctx, env.Client, configurationName)
		Expect(err).NotTo(HaveOccurred())
		Expect(bundles).To(HaveLen(len(copsewebhook.Endpoints())), "one webhook per endpoint, the TrainJob front-end's included")
		for name, ca := range bundles {
			Expect(ca).To(BeEmpty(), "%s has a caBundle before the operator ran", name)
		}

		By("starting the operator as system:serviceaccount:copse-system:copse-operator")
		startOperator(ctx)
		saConfig, err := clientcmd.BuildConfigFromFlags("", saKubeconfig)
		Expect(err).NotTo(HaveOccurred())
		saClient, err := kubernetes.NewForConfig(saConfig)
		Expect(err).NotTo(HaveOccurred())
		review, err := saClient.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(review.Status.UserInfo.Username).To(Equal("system:serviceaccount:" + releaseNamespace + ":" + serviceAccount))
		_, err = saClient.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the operator's identity may list Secrets in kube-system (%v): it is not the chart's ServiceAccount", err)

		By("waiting for the operator to inject its CA into both webhook configurations, and for admission to work")
		caBundles, err = framework.WaitForCABundles(ctx, env.Client, configurationName, longWait)
		Expect(err).NotTo(HaveOccurred(), "operator log: %s", env.Operator.LogPath())
		Expect(framework.WaitWebhooksActive(ctx, env.Client, workloads)).To(Succeed())

		secret := &corev1.Secret{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: releaseNamespace, Name: certSecretName}, secret)).To(Succeed())
		Expect(env.Operator.WaitForLeadership(ctx)).To(Succeed())
		expectNoForbidden()
	}, SpecTimeout(5*time.Minute))

	It("runs an inference and a training PodCliqueSet side by side", func(ctx context.Context) {
		inference := framework.NewPodCliqueSet(workloads, "serve", 1, framework.CliqueTemplate("server", 2, framework.PodSpec(0)))
		Expect(env.Client.Create(ctx, inference)).To(Succeed())
		training := framework.NewTrainingWorkers(workloads, "train", 1, 2, "3s", 0)
		Expect(env.Client.Create(ctx, training)).To(Succeed())

		Eventually(func(g Gomega) {
			g.Expect(env.GetPodCliqueSet(ctx, g, workloads, "serve").Status.AvailableReplicas).To(Equal(int32(1)))
			g.Expect(env.GetPodCliqueSet(ctx, g, workloads, "train").Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseSucceeded))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())

		By("keeping the inference pods running after the training workload ended")
		pods := env.LivePods(ctx, Default, workloads, "serve")
		Expect(pods).To(HaveLen(2))
		for i := range pods {
			Expect(framework.IsReady(&pods[i])).To(BeTrue(), "pod %s", pods[i].Name)
		}
		trainingPods := env.Pods(ctx, Default, workloads, "train")
		Expect(trainingPods).To(HaveLen(2))
		for _, p := range trainingPods {
			Expect(p.Status.Phase).To(Equal(corev1.PodSucceeded))
		}
		expectNoForbidden()
	}, SpecTimeout(5*time.Minute))

	It("classifies the operator's requests with the chart's FlowSchemas (API Priority and Fairness)", func(ctx context.Context) {
		By("installing a priority level and two FlowSchemas for the operator's ServiceAccount")
		level := &flowcontrolv1.PriorityLevelConfiguration{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: flowControlName}, level)).To(Succeed())
		operatorSchema := &flowcontrolv1.FlowSchema{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: flowControlName}, operatorSchema)).To(Succeed())
		leaseSchema := &flowcontrolv1.FlowSchema{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: flowControlName + "-leader-election"}, leaseSchema)).To(Succeed())
		for _, fs := range []*flowcontrolv1.FlowSchema{operatorSchema, leaseSchema} {
			Expect(fs.Status.Conditions).NotTo(ContainElement(And(
				HaveField("Type", flowcontrolv1.FlowSchemaConditionDangling), HaveField("Status", flowcontrolv1.ConditionTrue))),
				"FlowSchema %s points at a priority level that does not exist", fs.Name)
		}

		By("answering a request made with the ServiceAccount's token through copse's FlowSchema and priority level")
		saConfig, err := clientcmd.BuildConfigFromFlags("", saKubeconfig)
		Expect(err).NotTo(HaveOccurred())
		headers := responseHeaders(ctx, saConfig, "/api/v1/namespaces/"+workloads+"/pods?limit=1")
		Expect(headers.Get(flowSchemaUIDHeader)).To(Equal(string(operatorSchema.UID)), "the operator's request was classified by another FlowSchema")
		Expect(headers.Get(priorityLevelUIDHeader)).To(Equal(string(level.UID)))
		By("answering its Lease requests through the leader-election level")
		headers = responseHeaders(ctx, saConfig, "/apis/coordination.k8s.io/v1/namespaces/"+releaseNamespace+"/leases/"+leaseName)
		Expect(headers.Get(flowSchemaUIDHeader)).To(Equal(string(leaseSchema.UID)))
		By("leaving other identities alone")
		headers = responseHeaders(ctx, env.Cluster.RESTConfig(), "/api/v1/namespaces/"+workloads+"/pods?limit=1")
		Expect(headers.Get(flowSchemaUIDHeader)).NotTo(BeElementOf(string(operatorSchema.UID), string(leaseSchema.UID)))

		By("dispatching the requests the operator makes for a new workload in copse's priority level")
		copseRequests := func() float64 {
			GinkgoHelper()
			m, err := framework.ScrapeAPIServerMetrics(ctx, env.Clientset)
			Expect(err).NotTo(HaveOccurred())
			return m.Sum("apiserver_flowcontrol_dispatched_requests_total",
				map[string]string{"flow_schema": flowControlName, "priority_level": flowControlName})
		}
		before := copseRequests()
		const pods = 3
		Expect(env.Client.Create(ctx, framework.NewPodCliqueSet(workloads, "classified", 1,
			framework.CliqueTemplate("server", pods, framework.PodSpec(0))))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(env.GetPodCliqueSet(ctx, g, workloads, "classified").Status.AvailableReplicas).To(Equal(int32(1)))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		// At least the pod creations, the PodClique creation and the status
		// writes went through it.
		Expect(copseRequests()-before).To(BeNumerically(">", pods), "the operator's requests were not dispatched in priority level %s", flowControlName)
		Expect(env.Client.Delete(ctx, env.GetPodCliqueSet(ctx, Default, workloads, "classified"))).To(Succeed())
		expectNoForbidden()
	}, SpecTimeout(5*time.Minute))

	It("upgrades with a changed value, keeps the injected caBundle, and admission still works", func(ctx context.Context) {
		Expect(caBundles).NotTo(BeEmpty(), "the install spec did not get the CA")

		By("stopping the operator, as a rollout of the changed configuration would, so that only helm touches the webhook configurations")
		stopOperator()

		By("checking that a stopped operator blocks only creations and spec changes of grove.io objects outside the excluded namespaces")
		plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: workloads, Name: "plain"}, Spec: framework.PodSpec(0)}
		Expect(env.Client.Create(ctx, plain)).To(Succeed(), "pods are never sent to copse's webhooks")
		serve := env.GetPodCliqueSet(ctx, Default, workloads, "serve")
		patch := client.MergeFrom(serve.DeepCopy())
		serve.Labels = map[string]string{"touched": "while-operator-down"}
		Expect(env.Client.Patch(ctx, serve, patch)).To(Succeed(), "a metadata change needs no webhook (match condition)")
		err := env.Client.Create(ctx, framework.NewPodCliqueSet(workloads, "refused", 1, framework.CliqueTemplate("c", 1, framework.PodSpec(0))))
		Expect(err).To(HaveOccurred(), "failurePolicy Fail: a PodCliqueSet must not be admitted unchecked")
		Expect(err.Error()).To(ContainSubstring("failed calling webhook"))
		excluded := framework.NewPodCliqueSet(releaseNamespace, "excluded", 1, framework.CliqueTemplate("c", 1, framework.PodSpec(0)))
		Expect(env.Client.Create(ctx, excluded, client.DryRunAll)).To(Succeed(), "the release namespace is excluded from the webhooks")
		Expect(env.Client.Delete(ctx, plain, client.GracePeriodSeconds(0))).To(Succeed())

		helmRun(ctx, "upgrade", release, chart, "--namespace", releaseNamespace, "--reuse-values",
			"--set", "config.logging.level=debug", "--set", "config.controllers.podClique.concurrentSyncs=7", "--wait", "--timeout", "2m")

		By("changing the ConfigMap")
		cfg, _, err := framework.ConfigMapOperatorConfiguration(ctx, env.Client, releaseNamespace, configMapName, "config.yaml")
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Logging.Level).To(Equal(configv1alpha1.LogLevelDebug))
		Expect(cfg.Controllers.PodClique.ConcurrentSyncs).To(Equal(int32(7)))

		By("keeping the caBundle the operator injected (helm's three-way merge), while the operator is still down")
		bundles, err := framework.WebhookCABundles(ctx, env.Client, configurationName)
		Expect(err).NotTo(HaveOccurred())
		Expect(bundles).To(Equal(caBundles), "helm upgrade reset the injected caBundle")

		By("restarting the operator with the new configuration")
		running := startOperator(ctx)
		Expect(running.Logging.Level).To(Equal(configv1alpha1.LogLevelDebug))
		Eventually(func() (bool, error) { return lastRunLogged(env.Operator.LogPath(), `"level":"debug"`) }).
			WithContext(ctx).WithTimeout(30*time.Second).Should(BeTrue(), "the restarted operator logs no debug lines")

		By("admitting and reconciling a new PodCliqueSet")
		Expect(framework.WaitWebhooksActive(ctx, env.Client, workloads)).To(Succeed())
		Expect(env.Client.Create(ctx, framework.NewPodCliqueSet(workloads, "after-upgrade", 1,
			framework.CliqueTemplate("server", 1, framework.PodSpec(0))))).To(Succeed())
		Eventually(func(g Gomega) {
			pcs := env.GetPodCliqueSet(ctx, g, workloads, "after-upgrade")
			g.Expect(pcs.Spec.Template.TerminationDelay).NotTo(BeNil(), "not defaulted by the mutating webhook")
			g.Expect(pcs.Status.AvailableReplicas).To(Equal(int32(1)))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		bundles, err = framework.WebhookCABundles(ctx, env.Client, configurationName)
		Expect(err).NotTo(HaveOccurred())
		Expect(bundles).To(Equal(caBundles), "the restarted operator replaced a valid certificate")
		expectNoForbidden()
	}, SpecTimeout(5*time.Minute))

	It("uninstalls everything but the CRDs, and leaves the workloads' pods alone", func(ctx context.Context) {
		before := env.LivePods(ctx, Default, workloads, "serve")
		Expect(before).To(HaveLen(2))
		uids := map[types.UID]bool{}
		for _, p := range before {
			uids[p.UID] = true
		}

		By("stopping the operator, as deleting its Deployment would")
		expectNoForbidden()
		stopOperator()
		helmRun(ctx, "uninstall", release, "--namespace", releaseNamespace, "--wait", "--timeout", "2m")

		By("removing every object of the release")
		gone := []client.Object{
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNamespace, Name: serviceAccount}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNamespace, Name: configMapName}},
			&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: operatorRoleName}},
			&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: operatorRoleName}},
			&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNamespace, Name: operatorRoleName + "-leader-election"}},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNamespace, Name: operatorRoleName + "-leader-election"}},
			&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNamespace, Name: operatorRoleName + "-webhook-cert"}},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNamespace, Name: operatorRoleName + "-webhook-cert"}},
			&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: configurationName}},
			&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: configurationName}},
			&flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: flowControlName}},
			&flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: flowControlName + "-leader-election"}},
			&flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: flowControlName}},
		}
		for _, obj := range gone {
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T %s survived helm uninstall (%v)", obj, client.ObjectKeyFromObject(obj), err)
		}
		var helmSecrets corev1.SecretList
		Expect(env.Client.List(ctx, &helmSecrets, client.InNamespace(releaseNamespace), client.MatchingLabels{"owner": "helm", "name": release})).To(Succeed())
		Expect(helmSecrets.Items).To(BeEmpty(), "helm's release records survived")
		var labelled corev1.ServiceAccountList // one more sweep, by the chart's labels
		Expect(env.Client.List(ctx, &labelled, client.MatchingLabels{"app.kubernetes.io/instance": release, "app.kubernetes.io/managed-by": "Helm"})).To(Succeed())
		Expect(labelled.Items).To(BeEmpty())

		By("leaving in the release namespace only what the operator created (its certificate Secret, its Lease) and what Kubernetes puts in every namespace")
		Expect(namesIn(ctx, releaseNamespace)).To(ConsistOf(
			"Secret/"+certSecretName, "Lease/"+leaseName, "ConfigMap/kube-root-ca.crt", "ServiceAccount/default"))

		By("keeping the CRDs, and with them every PodCliqueSet and TrainJob")
		all, err := copseCRDs()
		Expect(err).NotTo(HaveOccurred())
		for _, crd := range all {
			Expect(env.Client.Get(ctx, client.ObjectKey{Name: crd.Name}, &apiextensionsv1.CustomResourceDefinition{})).To(Succeed(), "CRD %s was removed", crd.Name)
		}
		env.GetPodCliqueSet(ctx, Default, workloads, "serve")

		By("leaving the pods of a PodCliqueSet created before the uninstall running")
		Consistently(func(g Gomega) {
			pods := env.Pods(ctx, g, workloads, "serve")
			g.Expect(pods).To(HaveLen(len(uids)))
			for i := range pods {
				g.Expect(uids).To(HaveKey(pods[i].UID), "pod %s is new", pods[i].Name)
				g.Expect(pods[i].DeletionTimestamp).To(BeNil(), "pod %s is being deleted", pods[i].Name)
				g.Expect(framework.IsReady(&pods[i])).To(BeTrue(), "pod %s is not ready", pods[i].Name)
			}
		}).WithContext(ctx).WithTimeout(10 * time.Second).WithPolling(time.Second).Should(Succeed())

		By("blocking nothing once uninstalled: no webhook configuration is left to call")
		Expect(env.Client.Create(ctx, framework.NewPodCliqueSet(workloads, "after-uninstall", 1,
			framework.CliqueTemplate("c", 1, framework.PodSpec(0))), client.DryRunAll)).To(Succeed())
	}, SpecTimeout(5*time.Minute))
})

// namesIn lists "<Kind>/<name>" of the kinds the chart installs into a
// namespace, plus Leases.
func namesIn(ctx context.Context, namespace string) []string {
	GinkgoHelper()
	var names []string
	lists := []client.ObjectList{
		&corev1.SecretList{}, &corev1.ConfigMapList{}, &corev1.ServiceAccountList{}, &corev1.ServiceList{},
		&rbacv1.RoleList{}, &rbacv1.RoleBindingList{}, &coordinationv1.LeaseList{},
	}
	for _, list := range lists {
		Expect(env.Client.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
		kind := strings.TrimSuffix(fmt.Sprintf("%T", list), "List")
		kind = kind[strings.LastIndex(kind, ".")+1:]
		items, err := apimeta.ExtractList(list)
		Expect(err).NotTo(HaveOccurred())
		for _, item := range items {
			obj, err := apimeta.Accessor(item)
			Expect(err).NotTo(HaveOccurred())
			names = append(names, kind+"/"+obj.GetName())
		}
	}
	return names
}

// lastRunLogged reports whether the operator's latest run (the log after its
// last "=====" start line) logged a line containing substr.
func lastRunLogged(logPath, substr string) (bool, error) {
	data, err := os.ReadFile(logPath)
	if err != nil {
		return false, err
	}
	if i := bytes.LastIndex(data, []byte("\n=====")); i >= 0 {
		data = data[i:]
	}
	return bytes.Contains(data, []byte(substr)), nil
}

// The headers in which the API server names the FlowSchema and the priority
// level that classified a request.
const (
	flowSchemaUIDHeader    = "X-Kubernetes-PF-FlowSchema-UID"
	priorityLevelUIDHeader = "X-Kubernetes-PF-PriorityLevel-UID"
)

// responseHeaders GETs path from the API server as the identity of config
// and returns the response's headers, whatever its status.
func responseHeaders(ctx context.Context, config *rest.Config, path string) http.Header {
	GinkgoHelper()
	httpClient, err := rest.HTTPClientFor(config)
	Expect(err).NotTo(HaveOccurred())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(config.Host, "/")+path, nil)
	Expect(err).NotTo(HaveOccurred())
	resp, err := httpClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	return resp.Header
}

// copseCRDs are every CRD the chart installs: grove.io from crds/, and
// trainer.kubeflow.org from trainer-crds/ (templates kept on uninstall).
func copseCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	grove, err := crds.All()
	if err != nil {
		return nil, err
	}
	trainer, err := trainercrds.All()
	if err != nil {
		return nil, err
	}
	return append(grove, trainer...), nil
}
