package framework

import (
	"bytes"
	"crypto/tls"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	kueueconfig "sigs.k8s.io/kueue/apis/config/v1beta2"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/yaml"
)

func TestKueueConfiguration(t *testing.T) {
	const certDir = "/tmp/cluster/kueue/certs"
	tests := []struct {
		name     string
		opts     KueueOptions
		wantRate *kueueconfig.ClientConnection
	}{
		{name: "Kueue's client rate limit", opts: KueueOptions{}},
		{name: "a client rate limit of its own", opts: KueueOptions{QPS: 200, Burst: 400},
			wantRate: &kueueconfig.ClientConnection{QPS: ptr.To[float32](200), Burst: ptr.To[int32](400)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := kueueConfiguration(9443, 8081, certDir, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			var cfg kueueconfig.Configuration
			if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
				t.Fatalf("Kueue's configuration does not decode strictly as %s: %v\n%s", kueueconfig.SchemeGroupVersion, err, data)
			}
			if cfg.APIVersion != "config.kueue.x-k8s.io/v1beta2" || cfg.Kind != "Configuration" {
				t.Errorf("apiVersion, kind = %s, %s; want config.kueue.x-k8s.io/v1beta2, Configuration", cfg.APIVersion, cfg.Kind)
			}
			if w := cfg.Webhook; w.Host != "127.0.0.1" || w.Port == nil || *w.Port != 9443 || w.CertDir != certDir {
				t.Errorf("webhook = %+v; want 127.0.0.1:9443 serving %s", w, certDir)
			}
			if got := cfg.Health.HealthProbeBindAddress; got != "127.0.0.1:8081" {
				t.Errorf("health probes on %q, want 127.0.0.1:8081", got)
			}
			if got := cfg.Metrics.BindAddress; got != "0" {
				t.Errorf("metrics on %q, want off (0)", got)
			}
			if cfg.LeaderElection == nil || cfg.LeaderElection.LeaderElect == nil || *cfg.LeaderElection.LeaderElect {
				t.Errorf("leaderElection = %+v, want leaderElect: false", cfg.LeaderElection)
			}
			if cfg.InternalCertManagement == nil || cfg.InternalCertManagement.Enable == nil || *cfg.InternalCertManagement.Enable {
				t.Errorf("internalCertManagement = %+v, want enable: false", cfg.InternalCertManagement)
			}
			// Kueue's default is false too, but the file says it: a job
			// without a queue is never Kueue's.
			if !bytes.Contains(data, []byte("manageJobsWithoutQueueName: false")) || cfg.ManageJobsWithoutQueueName {
				t.Errorf("manageJobsWithoutQueueName is not written as false:\n%s", data)
			}
			wantFrameworks := []string{"batch/job", "jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob"}
			if cfg.Integrations == nil || !slices.Equal(cfg.Integrations.Frameworks, wantFrameworks) {
				t.Errorf("integrations = %+v, want frameworks %v", cfg.Integrations, wantFrameworks)
			}
			for _, gate := range []string{"VisibilityOnDemand", "MultiKueue"} {
				if on, set := cfg.FeatureGates[gate]; !set || on {
					t.Errorf("feature gate %s = %v (set %v), want off", gate, on, set)
				}
			}
			if tt.wantRate == nil && cfg.ClientConnection != nil {
				t.Errorf("clientConnection = %+v, want Kueue's default", cfg.ClientConnection)
			}
			if tt.wantRate != nil && (cfg.ClientConnection == nil || *cfg.ClientConnection.QPS != *tt.wantRate.QPS || *cfg.ClientConnection.Burst != *tt.wantRate.Burst) {
				t.Errorf("clientConnection = %+v, want qps %v burst %v", cfg.ClientConnection, *tt.wantRate.QPS, *tt.wantRate.Burst)
			}
		})
	}
}

// kueueLikeWebhooks is a rendered webhook component shaped like Kueue's:
// webhooks for Kueue's own kinds, for the integrations StartKueue runs, and
// for pods and Deployments, whose integrations it does not run.
func kueueLikeWebhooks(t *testing.T, leaveOut ...string) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	t.Helper()
	type hook struct{ name, group, resource string }
	hooks := []hook{
		{"mclusterqueue.kb.io", "kueue.x-k8s.io", "clusterqueues"}, {"vclusterqueue.kb.io", "kueue.x-k8s.io", "clusterqueues"},
		{"mworkload.kb.io", "kueue.x-k8s.io", "workloads"}, {"vworkload.kb.io", "kueue.x-k8s.io", "workloads"},
		{"mjob.kb.io", "batch", "jobs"}, {"vjob.kb.io", "batch", "jobs"},
		{"mjobset.kb.io", "jobset.x-k8s.io", "jobsets"}, {"vjobset.kb.io", "jobset.x-k8s.io", "jobsets"},
		{"mtrainjob.kb.io", "trainer.kubeflow.org", "trainjobs"}, {"vtrainjob.kb.io", "trainer.kubeflow.org", "trainjobs"},
		{"mpod.kb.io", "", "pods"}, {"vpod.kb.io", "", "pods"},
		{"mdeployment.kb.io", "apps", "deployments"}, {"vdeployment.kb.io", "apps", "deployments"},
	}
	var mutating, validating strings.Builder
	mutating.WriteString("apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata: {name: mutating-webhook-configuration}\nwebhooks:\n")
	validating.WriteString("apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: validating-webhook-configuration}\nwebhooks:\n")
	for _, h := range hooks {
		if slices.Contains(leaveOut, h.name) {
			continue
		}
		into := &validating
		if strings.HasPrefix(h.name, "m") {
			into = &mutating
		}
		into.WriteString("- name: " + h.name + "\n  admissionReviewVersions: [v1]\n  sideEffects: None\n" +
			"  clientConfig: {service: {name: webhook-service, namespace: system, path: /" + h.name + "}}\n" +
			"  rules: [{apiGroups: [\"" + h.group + "\"], apiVersions: [v1], operations: [CREATE], resources: [" + h.resource + "]}]\n")
	}
	m, v, err := componentWebhookConfigurations([]byte(mutating.String()+"---\n"+validating.String()), "Kueue", kueueNamePrefix, "https://127.0.0.1:9443", []byte("ca"))
	if err != nil {
		t.Fatal(err)
	}
	return m, v
}

func TestKeepKueueWebhooks(t *testing.T) {
	tests := []struct {
		name      string
		leaveOut  []string
		wantError string
	}{
		{name: "every webhook Kueue needs is there"},
		{name: "an integration without a validating webhook", leaveOut: []string{"vtrainjob.kb.io"},
			wantError: "no mutating and validating webhook for: trainer.kubeflow.org/trainjob"},
		{name: "no ClusterQueue webhook", leaveOut: []string{"mclusterqueue.kb.io"},
			wantError: "no mutating and validating webhook for: ClusterQueues (mclusterqueue.kb.io, vclusterqueue.kb.io)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mutating, validating := kueueLikeWebhooks(t, tt.leaveOut...)
			err := keepKueueWebhooks(mutating, validating, kueueIntegrations)
			if tt.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantError) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, w := range mutating.Webhooks {
				names = append(names, w.Name)
			}
			for _, w := range validating.Webhooks {
				names = append(names, w.Name)
			}
			want := []string{"mclusterqueue.kb.io", "mworkload.kb.io", "mjob.kb.io", "mjobset.kb.io", "mtrainjob.kb.io",
				"vclusterqueue.kb.io", "vworkload.kb.io", "vjob.kb.io", "vjobset.kb.io", "vtrainjob.kb.io"}
			if !slices.Equal(names, want) {
				t.Errorf("kept %v, want %v (no pod or Deployment webhook)", names, want)
			}
			if mutating.Name != "kueue-mutating-webhook-configuration" || validating.Name != "kueue-validating-webhook-configuration" {
				t.Errorf("names = %s, %s; want Kueue's install's", mutating.Name, validating.Name)
			}
		})
	}
}

func TestEnsureKueueMetricsCertificate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "etc", "kueue", "metrics", "certs")
	// Suites start Kueue concurrently; all of them find one valid pair.
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { errs[i] = ensureKueueMetricsCertificate(dir) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")); err != nil {
		t.Fatalf("not a certificate and its key: %v", err)
	}
	before, err := os.ReadFile(filepath.Join(dir, "tls.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := ensureKueueMetricsCertificate(dir); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(filepath.Join(dir, "tls.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Error("a second call replaced the certificate a running Kueue watches")
	}
	leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), ".certs-*"))
	if len(leftovers) > 0 {
		t.Errorf("temporary directories left behind: %v", leftovers)
	}
}

func TestKueueQueuesObjects(t *testing.T) {
	q := KueueQueues{
		ClusterQueue: "team",
		Flavor: KueueFlavor{Name: "gb200", NodeLabels: map[string]string{"nvidia.com/gpu.clique": "rack-0"},
			Tolerations: []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}}, TopologyName: "gb200"},
		Quota: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("72"), corev1.ResourceMemory: resource.MustParse("1Ti"),
			corev1.ResourceCPU: resource.MustParse("100")},
		PreemptLowerPriority: true,
		Namespaces:           []string{"a", "b"},
		PriorityClasses:      map[string]int32{"low": 10, "high": 1000},
	}
	objects := q.Objects()
	if len(objects) != 6 {
		t.Fatalf("%d objects, want a flavor, a ClusterQueue, 2 LocalQueues and 2 priority classes", len(objects))
	}
	flavor := objects[0].(*kueue.ResourceFlavor)
	if flavor.Name != "gb200" || flavor.Spec.NodeLabels["nvidia.com/gpu.clique"] != "rack-0" || len(flavor.Spec.Tolerations) != 1 ||
		flavor.Spec.TopologyName == nil || *flavor.Spec.TopologyName != "gb200" {
		t.Errorf("flavor = %+v", flavor.Spec)
	}
	cq := objects[1].(*kueue.ClusterQueue)
	group := cq.Spec.ResourceGroups[0]
	wantOrder := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, "nvidia.com/gpu"}
	if !slices.Equal(group.CoveredResources, wantOrder) {
		t.Errorf("coveredResources = %v, want %v", group.CoveredResources, wantOrder)
	}
	for i, quota := range group.Flavors[0].Resources {
		if quota.Name != wantOrder[i] || !quota.NominalQuota.Equal(q.Quota[wantOrder[i]]) {
			t.Errorf("quota %d = %s %s, want %s of %v (in coveredResources' order)", i, quota.Name, quota.NominalQuota.String(), wantOrder[i], q.Quota)
		}
	}
	if cq.Spec.Preemption == nil || cq.Spec.Preemption.WithinClusterQueue != kueue.PreemptionPolicyLowerPriority {
		t.Errorf("preemption = %+v, want withinClusterQueue LowerPriority", cq.Spec.Preemption)
	}
	for i, ns := range []string{"a", "b"} {
		lq := objects[2+i].(*kueue.LocalQueue)
		if lq.Namespace != ns || lq.Name != "team" || lq.Spec.ClusterQueue != "team" {
			t.Errorf("LocalQueue %d = %s/%s -> %s, want %s/team -> team", i, lq.Namespace, lq.Name, lq.Spec.ClusterQueue, ns)
		}
	}
	high, low := objects[4].(*kueue.WorkloadPriorityClass), objects[5].(*kueue.WorkloadPriorityClass)
	if high.Name != "high" || high.Value != 1000 || low.Name != "low" || low.Value != 10 {
		t.Errorf("priority classes = %s=%d, %s=%d", high.Name, high.Value, low.Name, low.Value)
	}
	if (KueueQueues{ClusterQueue: "x", Flavor: KueueFlavor{Name: "x"}}).Objects()[1].(*kueue.ClusterQueue).Spec.Preemption != nil {
		t.Error("a ClusterQueue without PreemptLowerPriority preempts")
	}
}
