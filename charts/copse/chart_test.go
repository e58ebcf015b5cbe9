package copse_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/webhook"
)

// The release every scenario is rendered as.
const (
	releaseName      = "copse"
	releaseNamespace = "copse-system"
	localWebhookURL  = "https://127.0.0.1:9443"
	testCABundle     = "-----BEGIN CERTIFICATE-----\nMIIBdGVzdA==\n-----END CERTIFICATE-----\n"
)

// scenario is one way to install the chart: the values given on top of
// values.yaml.
type scenario struct {
	name   string
	values map[string]any
}

// scenarios cover every certificate mode, local mode, disabled webhooks and
// the Kueue integration; rbac-reviewed.yaml has the RBAC of each.
var scenarios = []scenario{
	{name: "default"},
	{name: "localMode", values: map[string]any{"localMode": map[string]any{"enabled": true, "webhookURL": localWebhookURL}}},
	{name: "certificateSecret", values: map[string]any{"webhook": map[string]any{"certificate": map[string]any{
		"mode": "secret", "secretName": "my-webhook-tls", "secret": map[string]any{"caBundle": testCABundle}}}}},
	{name: "certificateCertManager", values: map[string]any{"webhook": map[string]any{"certificate": map[string]any{"mode": "certManager"}}}},
	{name: "webhookDisabled", values: map[string]any{"webhook": map[string]any{"enabled": false}}},
	{name: "kueue", values: map[string]any{"config": map[string]any{"kueue": map[string]any{"enabled": true}}}},
}

var helmOnce struct {
	sync.Once
	helm *framework.Helm
	err  error
}

// helm returns the pinned helm, building it into the tool cache (as `make
// helm` does) when it is not there yet. There is no skipping: without helm
// the chart is untested.
func helm(t *testing.T) *framework.Helm {
	t.Helper()
	helmOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		home, err := os.MkdirTemp("", "copse-chart-test-helm-")
		if err != nil {
			helmOnce.err = err
			return
		}
		helmOnce.helm, helmOnce.err = framework.NewHelm(ctx, "", home)
	})
	if helmOnce.err != nil {
		t.Fatalf("the pinned helm is needed to test the chart and could not be built (run `make helm` to see why): %v", helmOnce.err)
	}
	return helmOnce.helm
}

func chartDir(t *testing.T) string {
	t.Helper()
	dir, err := framework.ChartDir()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// template renders the chart for values with `helm template` and returns
// the documents by "<Kind>/<namespace>/<name>" (namespace empty for
// cluster-scoped objects). apiVersions are the kinds the cluster is to
// serve beyond the built-in ones (helm's --api-versions, "group/version/Kind").
func template(t *testing.T, values map[string]any, apiVersions ...string) map[string]map[string]any {
	t.Helper()
	out, err := templateErr(t, values, apiVersions...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func templateErr(t *testing.T, values map[string]any, apiVersions ...string) (map[string]map[string]any, error) {
	t.Helper()
	h := helm(t)
	args := []string{"template", releaseName, chartDir(t), "--namespace", releaseNamespace}
	for _, v := range apiVersions {
		args = append(args, "--api-versions", v)
	}
	if values != nil {
		data, err := yaml.Marshal(values)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "values.yaml")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--values", path)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rendered, err := h.Run(ctx, args...)
	if err != nil {
		return nil, err
	}
	docs := map[string]map[string]any{}
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(rendered), 4096)
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("decode helm template output: %v\n%s", err, rendered)
		}
		if doc == nil {
			continue
		}
		meta, _ := doc["metadata"].(map[string]any)
		name, _ := meta["name"].(string)
		ns, _ := meta["namespace"].(string)
		key := fmt.Sprintf("%s/%s/%s", doc["kind"], ns, name)
		if _, dup := docs[key]; dup {
			t.Fatalf("the chart renders %s twice", key)
		}
		docs[key] = doc
	}
	return docs, nil
}

// into converts a rendered document into a typed object.
func into(t *testing.T, doc map[string]any, obj any) {
	t.Helper()
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, obj); err != nil {
		t.Fatalf("decode %v into %T: %v", doc["kind"], obj, err)
	}
}

func get(t *testing.T, docs map[string]map[string]any, key string, obj any) {
	t.Helper()
	doc, ok := docs[key]
	if !ok {
		t.Fatalf("the chart does not render %s; it renders %v", key, sortedKeys(docs))
	}
	into(t, doc, obj)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// --- webhooks ------------------------------------------------------------

func TestWebhookConfigurationsMatchTheOperatorsEndpoints(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			docs := template(t, sc.values)
			webhooksEnabled := sc.name != "webhookDisabled"
			mutating := &admissionregistrationv1.MutatingWebhookConfiguration{}
			validating := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			_, hasMutating := docs["MutatingWebhookConfiguration//copse"]
			_, hasValidating := docs["ValidatingWebhookConfiguration//copse"]
			if !webhooksEnabled {
				if hasMutating || hasValidating {
					t.Fatal("webhook.enabled=false still renders webhook configurations")
				}
				return
			}
			get(t, docs, "MutatingWebhookConfiguration//copse", mutating)
			get(t, docs, "ValidatingWebhookConfiguration//copse", validating)

			type entry struct {
				name         string
				clientConfig admissionregistrationv1.WebhookClientConfig
				rules        []admissionregistrationv1.RuleWithOperations
				conditions   []admissionregistrationv1.MatchCondition
				failure      *admissionregistrationv1.FailurePolicyType
				sideEffects  *admissionregistrationv1.SideEffectClass
				timeout      *int32
				reviews      []string
				nsSelector   *metav1.LabelSelector
				objSelector  *metav1.LabelSelector
			}
			var got []entry
			for _, w := range mutating.Webhooks {
				got = append(got, entry{w.Name, w.ClientConfig, w.Rules, w.MatchConditions, w.FailurePolicy, w.SideEffects,
					w.TimeoutSeconds, w.AdmissionReviewVersions, w.NamespaceSelector, w.ObjectSelector})
			}
			mutatingCount := len(got)
			for _, w := range validating.Webhooks {
				got = append(got, entry{w.Name, w.ClientConfig, w.Rules, w.MatchConditions, w.FailurePolicy, w.SideEffects,
					w.TimeoutSeconds, w.AdmissionReviewVersions, w.NamespaceSelector, w.ObjectSelector})
			}

			// Exactly the endpoints, mutating ones in the mutating configuration.
			var wantMutating, wantValidating []webhook.Endpoint
			for _, ep := range webhook.Endpoints() {
				if ep.Mutating {
					wantMutating = append(wantMutating, ep)
				} else {
					wantValidating = append(wantValidating, ep)
				}
			}
			want := append(slices.Clone(wantMutating), wantValidating...)
			if mutatingCount != len(wantMutating) || len(got) != len(want) {
				t.Fatalf("the chart has %d mutating and %d validating webhooks; webhook.Endpoints() has %d and %d",
					mutatingCount, len(got)-mutatingCount, len(wantMutating), len(wantValidating))
			}
			for i, ep := range want {
				w := got[i]
				if w.name != ep.Name {
					t.Errorf("webhook %d is %q, webhook.Endpoints() says %q", i, w.name, ep.Name)
				}
				// Where the API server sends it.
				switch sc.name {
				case "localMode":
					if w.clientConfig.Service != nil || w.clientConfig.URL == nil || *w.clientConfig.URL != localWebhookURL+ep.Path {
						t.Errorf("%s: clientConfig %+v, want url %s", ep.Name, w.clientConfig, localWebhookURL+ep.Path)
					}
				default:
					svc := w.clientConfig.Service
					if w.clientConfig.URL != nil || svc == nil || svc.Name != "copse-webhook" || svc.Namespace != releaseNamespace ||
						svc.Path == nil || *svc.Path != ep.Path || svc.Port == nil || *svc.Port != 443 {
						t.Errorf("%s: clientConfig %+v, want service copse-system/copse-webhook:443 path %s", ep.Name, w.clientConfig, ep.Path)
					}
				}
				// caBundle: only a user-provided CA is rendered; the operator
				// or cert-manager inject theirs.
				wantCA := ""
				if sc.name == "certificateSecret" {
					wantCA = testCABundle
				}
				if string(w.clientConfig.CABundle) != wantCA {
					t.Errorf("%s: caBundle %q, want %q", ep.Name, w.clientConfig.CABundle, wantCA)
				}
				wantRules := []admissionregistrationv1.RuleWithOperations{{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{ep.Group}, APIVersions: []string{ep.Version},
						Resources: []string{ep.Resource}, Scope: ptrTo(admissionregistrationv1.ScopeType(ep.Scope))},
				}}
				if diff := cmp.Diff(wantRules, w.rules); diff != "" {
					t.Errorf("%s: rules (-want +got):\n%s", ep.Name, diff)
				}
				if diff := cmp.Diff(webhook.MatchConditions(), w.conditions); diff != "" {
					t.Errorf("%s: matchConditions must be webhook.MatchConditions() (-want +got):\n%s", ep.Name, diff)
				}
				if w.failure == nil || *w.failure != webhook.FailurePolicy {
					t.Errorf("%s: failurePolicy %v, want webhook.FailurePolicy (%s)", ep.Name, ptr.Deref(w.failure, ""), webhook.FailurePolicy)
				}
				if w.sideEffects == nil || *w.sideEffects != admissionregistrationv1.SideEffectClassNone {
					t.Errorf("%s: sideEffects %v, want None", ep.Name, w.sideEffects)
				}
				switch {
				case w.timeout == nil:
					t.Errorf("%s: no timeoutSeconds, want webhook.TimeoutSeconds (%d)", ep.Name, webhook.TimeoutSeconds)
				case *w.timeout != webhook.TimeoutSeconds:
					t.Errorf("%s: timeoutSeconds %d, want webhook.TimeoutSeconds (%d)", ep.Name, *w.timeout, webhook.TimeoutSeconds)
				}
				if !slices.Equal(w.reviews, []string{"v1"}) {
					t.Errorf("%s: admissionReviewVersions %v, want [v1]", ep.Name, w.reviews)
				}
				if w.objSelector != nil && (len(w.objSelector.MatchLabels) > 0 || len(w.objSelector.MatchExpressions) > 0) {
					t.Errorf("%s: unexpected objectSelector %+v", ep.Name, w.objSelector)
				}
				excluded := namespacesExcluded(w.nsSelector)
				for _, ns := range []string{"kube-system", releaseNamespace} {
					if !excluded[ns] {
						t.Errorf("%s: namespaceSelector %+v does not exclude namespace %s", ep.Name, w.nsSelector, ns)
					}
				}
			}

			injectFrom := mutating.Annotations["cert-manager.io/inject-ca-from"]
			if injectFrom != validating.Annotations["cert-manager.io/inject-ca-from"] {
				t.Errorf("the two configurations disagree on cert-manager.io/inject-ca-from")
			}
			wantInject := ""
			if sc.name == "certificateCertManager" {
				wantInject = releaseNamespace + "/copse-webhook"
			}
			if injectFrom != wantInject {
				t.Errorf("cert-manager.io/inject-ca-from is %q, want %q", injectFrom, wantInject)
			}
		})
	}
}

// namespacesExcluded are the namespaces a selector surely leaves out:
// those of a "kubernetes.io/metadata.name NotIn" expression.
func namespacesExcluded(sel *metav1.LabelSelector) map[string]bool {
	out := map[string]bool{}
	if sel == nil {
		return out
	}
	for _, expr := range sel.MatchExpressions {
		if expr.Key == corev1.LabelMetadataName && expr.Operator == metav1.LabelSelectorOpNotIn {
			for _, v := range expr.Values {
				out[v] = true
			}
		}
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }

// --- operator configuration -------------------------------------------

// operatorConfig decodes the rendered ConfigMap as the operator loads its
// --config file: strictly, defaulted and validated.
func operatorConfig(t *testing.T, docs map[string]map[string]any) *configv1alpha1.OperatorConfiguration {
	t.Helper()
	cm := &corev1.ConfigMap{}
	get(t, docs, "ConfigMap/copse-system/copse-config", cm)
	cfg, err := configv1alpha1.Decode([]byte(cm.Data["config.yaml"]))
	if err != nil {
		t.Fatalf("the operator would refuse the chart's configuration: %v\n%s", err, cm.Data["config.yaml"])
	}
	return cfg
}

func TestConfigMapIsAValidOperatorConfiguration(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			cfg := operatorConfig(t, template(t, sc.values))
			if cfg.LeaderElection.ResourceNamespace != releaseNamespace {
				t.Errorf("leaderElection.resourceNamespace %q, want the release namespace", cfg.LeaderElection.ResourceNamespace)
			}
			wh := cfg.WebhookServer
			certs := wh.Certificates
			switch sc.name {
			case "default":
				want := configv1alpha1.WebhookCertificatesConfiguration{
					Mode:                     configv1alpha1.WebhookCertificateModeSelfManaged,
					SecretName:               "copse-webhook-serving-cert",
					SecretNamespace:          releaseNamespace,
					WebhookConfigurationName: "copse",
					DNSNames:                 []string{"copse-webhook.copse-system.svc", "copse-webhook.copse-system.svc.cluster.local"},
					Validity:                 metav1.Duration{Duration: 8760 * time.Hour},
					RotateBefore:             metav1.Duration{Duration: 720 * time.Hour},
				}
				if diff := cmp.Diff(want, certs); diff != "" {
					t.Errorf("webhookServer.certificates (-want +got):\n%s", diff)
				}
				if wh.Port != 9443 || cfg.Server.Metrics.BindAddress != ":8080" || cfg.Server.HealthProbes.BindAddress != ":8081" {
					t.Errorf("ports: webhook %d, metrics %q, health %q", wh.Port, cfg.Server.Metrics.BindAddress, cfg.Server.HealthProbes.BindAddress)
				}
			case "localMode":
				if certs.Mode != configv1alpha1.WebhookCertificateModeSelfManaged ||
					!slices.Equal(certs.IPAddresses, []string{"127.0.0.1"}) || len(certs.DNSNames) != 0 {
					t.Errorf("local mode: certificates %+v, want SelfManaged for IP 127.0.0.1 only", certs)
				}
				if wh.Host != "127.0.0.1" || wh.Port != 9443 {
					t.Errorf("local mode: webhook server on %s:%d, want the URL's 127.0.0.1:9443", wh.Host, wh.Port)
				}
			case "certificateSecret", "certificateCertManager":
				if certs.Mode != configv1alpha1.WebhookCertificateModeProvided {
					t.Errorf("certificates.mode %q, want Provided", certs.Mode)
				}
			case "webhookDisabled":
				if *wh.Enabled {
					t.Error("webhook.enabled=false leaves webhookServer.enabled true")
				}
			}
		})
	}
}

func TestConfigValuesReachTheConfigMap(t *testing.T) {
	cfg := operatorConfig(t, template(t, map[string]any{"config": map[string]any{
		"clientConnection":        map[string]any{"qps": 12.5},
		"logging":                 map[string]any{"level": "debug", "format": "text"},
		"controllers":             map[string]any{"podClique": map[string]any{"concurrentSyncs": 11}},
		"scheduler":               map[string]any{"backend": "none"},
		"leaderElection":          map[string]any{"enabled": false, "resourceName": "my-lease", "leaseDuration": "30s"},
		"startupGate":             map[string]any{"image": "mirror.example.com/busybox:1.37.0"},
		"topologyAwareScheduling": map[string]any{"enabled": true},
		"mnnvl":                   map[string]any{"enabled": true, "defaultGroup": "nvl72"},
	}}))
	switch {
	case cfg.ClientConnection.QPS != 12.5 || cfg.ClientConnection.Burst != configv1alpha1.DefaultBurst:
		t.Errorf("clientConnection %+v", cfg.ClientConnection)
	case cfg.Logging.Level != configv1alpha1.LogLevelDebug || cfg.Logging.Format != configv1alpha1.LogFormatText:
		t.Errorf("logging %+v", cfg.Logging)
	case cfg.Controllers.PodClique.ConcurrentSyncs != 11 ||
		cfg.Controllers.PodCliqueSet.ConcurrentSyncs != configv1alpha1.DefaultPodCliqueSetConcurrentSyncs:
		t.Errorf("controllers %+v", cfg.Controllers)
	case cfg.Scheduler.Backend != configv1alpha1.SchedulerBackendNone:
		t.Errorf("scheduler %+v", cfg.Scheduler)
	case *cfg.LeaderElection.Enabled || cfg.LeaderElection.ResourceName != "my-lease" || cfg.LeaderElection.LeaseDuration.Duration != 30*time.Second:
		t.Errorf("leaderElection %+v", cfg.LeaderElection)
	case cfg.StartupGate.Image != "mirror.example.com/busybox:1.37.0":
		t.Errorf("startupGate %+v", cfg.StartupGate)
	case !cfg.TopologyAwareScheduling.Enabled:
		t.Errorf("topologyAwareScheduling %+v", cfg.TopologyAwareScheduling)
	case !cfg.MNNVL.Enabled || cfg.MNNVL.DefaultGroup != "nvl72":
		t.Errorf("mnnvl %+v", cfg.MNNVL)
	}
}

// Placement features are off unless asked for, as in the operator.
func TestPlacementFeaturesOffByDefault(t *testing.T) {
	cfg := operatorConfig(t, template(t, nil))
	if cfg.TopologyAwareScheduling.Enabled || cfg.MNNVL.Enabled || cfg.MNNVL.DefaultGroup != "" {
		t.Errorf("topologyAwareScheduling %+v, mnnvl %+v; want both off, and no MNNVL default group", cfg.TopologyAwareScheduling, cfg.MNNVL)
	}
}

// The chart pins no client rate limit, concurrency or startup gate image of its own: unset, they
// are the operator's defaults, whatever those are in the operator the chart
// installs.
func TestClientAndConcurrencyDefaultToTheOperators(t *testing.T) {
	docs := template(t, nil)
	cm := &corev1.ConfigMap{}
	get(t, docs, "ConfigMap/copse-system/copse-config", cm)
	raw := map[string]any{}
	if err := yaml.Unmarshal([]byte(cm.Data["config.yaml"]), &raw); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"clientConnection", "controllers", "startupGate"} {
		if v, set := raw[key]; set {
			t.Errorf("the default ConfigMap sets %s: %v; leave it to the operator's defaults", key, v)
		}
	}
	cfg := operatorConfig(t, docs)
	defaults := configv1alpha1.NewDefaultOperatorConfiguration()
	if diff := cmp.Diff(defaults.ClientConnection, cfg.ClientConnection); diff != "" {
		t.Errorf("clientConnection differs from the operator's defaults (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(defaults.Controllers, cfg.Controllers); diff != "" {
		t.Errorf("controllers differ from the operator's defaults (-want +got):\n%s", diff)
	}
	if cfg.StartupGate != defaults.StartupGate {
		t.Errorf("startupGate %+v differs from the operator's default %+v", cfg.StartupGate, defaults.StartupGate)
	}
}

// --- API Priority and Fairness ------------------------------------------

func TestFlowControlClassifiesTheOperatorsServiceAccount(t *testing.T) {
	for _, sc := range []scenario{
		{name: "default"},
		{name: "own ServiceAccount", values: map[string]any{"serviceAccount": map[string]any{"create": false, "name": "mine"}}},
		{name: "localMode", values: scenarios[1].values},
	} {
		t.Run(sc.name, func(t *testing.T) {
			docs := template(t, sc.values)
			wantSA := "copse-operator"
			if sc.name == "own ServiceAccount" {
				wantSA = "mine"
			}
			level := &flowcontrolv1.PriorityLevelConfiguration{}
			get(t, docs, "PriorityLevelConfiguration//copse-operator", level)
			limited := level.Spec.Limited
			if level.Spec.Type != flowcontrolv1.PriorityLevelEnablementLimited || limited == nil {
				t.Fatalf("priority level %+v, want type Limited", level.Spec)
			}
			if limited.NominalConcurrencyShares == nil || *limited.NominalConcurrencyShares != 20 ||
				limited.LendablePercent == nil || *limited.LendablePercent != 50 ||
				limited.BorrowingLimitPercent == nil || *limited.BorrowingLimitPercent != 100 {
				t.Errorf("shares %+v", limited)
			}
			want := flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{
				Queues: 64, HandSize: 6, QueueLengthLimit: 256}}
			if diff := cmp.Diff(want, limited.LimitResponse); diff != "" {
				t.Errorf("limitResponse (-want +got):\n%s", diff)
			}

			operator := &flowcontrolv1.FlowSchema{}
			get(t, docs, "FlowSchema//copse-operator", operator)
			lease := &flowcontrolv1.FlowSchema{}
			get(t, docs, "FlowSchema//copse-operator-leader-election", lease)
			subject := []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindServiceAccount,
				ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Name: wantSA, Namespace: releaseNamespace}}}
			for _, fs := range []*flowcontrolv1.FlowSchema{operator, lease} {
				if len(fs.Spec.Rules) != 1 {
					t.Fatalf("%s: %d rules, want 1", fs.Name, len(fs.Spec.Rules))
				}
				if diff := cmp.Diff(subject, fs.Spec.Rules[0].Subjects); diff != "" {
					t.Errorf("%s: subjects (-want +got):\n%s", fs.Name, diff)
				}
				// The built-in schemas that also match a ServiceAccount:
				// kube-system-service-accounts (900), service-accounts (9000).
				if fs.Spec.MatchingPrecedence >= 900 {
					t.Errorf("%s: matchingPrecedence %d: the built-in kube-system-service-accounts (900) would match first", fs.Name, fs.Spec.MatchingPrecedence)
				}
			}
			if operator.Spec.PriorityLevelConfiguration.Name != level.Name {
				t.Errorf("the operator's FlowSchema points at %q, not at the chart's priority level", operator.Spec.PriorityLevelConfiguration.Name)
			}
			if operator.Spec.DistinguisherMethod == nil || operator.Spec.DistinguisherMethod.Type != flowcontrolv1.FlowDistinguisherMethodByNamespaceType {
				t.Errorf("distinguisher %+v, want ByNamespace", operator.Spec.DistinguisherMethod)
			}
			all := []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"},
				Namespaces: []string{"*"}, ClusterScope: true}}
			if diff := cmp.Diff(all, operator.Spec.Rules[0].ResourceRules); diff != "" {
				t.Errorf("the operator's FlowSchema must take every request of its ServiceAccount (-want +got):\n%s", diff)
			}
			if lease.Spec.MatchingPrecedence >= operator.Spec.MatchingPrecedence {
				t.Errorf("the Lease schema (%d) must match before the operator's (%d)", lease.Spec.MatchingPrecedence, operator.Spec.MatchingPrecedence)
			}
			if lease.Spec.PriorityLevelConfiguration.Name != "leader-election" {
				t.Errorf("Lease requests go to %q, want the built-in leader-election level", lease.Spec.PriorityLevelConfiguration.Name)
			}
			leases := []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"get", "create", "update"},
				APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Namespaces: []string{releaseNamespace}}}
			if diff := cmp.Diff(leases, lease.Spec.Rules[0].ResourceRules); diff != "" {
				t.Errorf("Lease schema rules (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFlowControlValues(t *testing.T) {
	docs := template(t, map[string]any{"flowControl": map[string]any{"enabled": false}})
	for key := range docs {
		if strings.HasPrefix(key, "FlowSchema/") || strings.HasPrefix(key, "PriorityLevelConfiguration/") {
			t.Errorf("flowControl.enabled=false renders %s", key)
		}
	}

	docs = template(t, map[string]any{"flowControl": map[string]any{
		"matchingPrecedence":          500,
		"leaderElectionPriorityLevel": "",
		"priorityLevel": map[string]any{"nominalConcurrencyShares": 7, "lendablePercent": 0, "borrowingLimitPercent": nil,
			"queuing": map[string]any{"queues": 8, "handSize": 2, "queueLengthLimit": 10}},
	}})
	if _, ok := docs["FlowSchema//copse-operator-leader-election"]; ok {
		t.Error("leaderElectionPriorityLevel \"\" still renders the Lease schema")
	}
	operator := &flowcontrolv1.FlowSchema{}
	get(t, docs, "FlowSchema//copse-operator", operator)
	if operator.Spec.MatchingPrecedence != 500 {
		t.Errorf("matchingPrecedence %d", operator.Spec.MatchingPrecedence)
	}
	level := &flowcontrolv1.PriorityLevelConfiguration{}
	get(t, docs, "PriorityLevelConfiguration//copse-operator", level)
	l := level.Spec.Limited
	if *l.NominalConcurrencyShares != 7 || *l.LendablePercent != 0 || l.BorrowingLimitPercent != nil ||
		*l.LimitResponse.Queuing != (flowcontrolv1.QueuingConfiguration{Queues: 8, HandSize: 2, QueueLengthLimit: 10}) {
		t.Errorf("priority level %+v, queuing %+v", l, l.LimitResponse.Queuing)
	}
}

// --- workload objects --------------------------------------------------

func TestDeployment(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			docs := template(t, sc.values)
			if sc.name == "localMode" {
				for key := range docs {
					if strings.HasPrefix(key, "Deployment/") || strings.HasPrefix(key, "Service/") {
						t.Errorf("local mode renders %s: nothing of the operator runs in the cluster", key)
					}
				}
				return
			}
			cfg := operatorConfig(t, docs)
			d := &appsv1.Deployment{}
			get(t, docs, "Deployment/copse-system/copse-operator", d)
			pod := d.Spec.Template.Spec
			if pod.ServiceAccountName != "copse-operator" {
				t.Errorf("serviceAccountName %q", pod.ServiceAccountName)
			}
			if len(pod.Containers) != 1 {
				t.Fatalf("%d containers, want 1", len(pod.Containers))
			}
			c := pod.Containers[0]
			if !slices.Equal(c.Args, []string{"--config", "/etc/copse/config.yaml"}) {
				t.Errorf("args %v", c.Args)
			}
			if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" ||
				c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
				t.Errorf("probes: liveness %+v, readiness %+v", c.LivenessProbe, c.ReadinessProbe)
			}
			ports := map[string]int32{}
			for _, p := range c.Ports {
				ports[p.Name] = p.ContainerPort
			}
			if ports["health"] != 8081 || ports["metrics"] != 8080 {
				t.Errorf("container ports %v do not match the configuration's bind addresses", ports)
			}
			if cfg.WebhookServer.Enabled != nil && *cfg.WebhookServer.Enabled && ports["webhook"] != cfg.WebhookServer.Port {
				t.Errorf("container port webhook %d, configuration port %d", ports["webhook"], cfg.WebhookServer.Port)
			}
			sec := c.SecurityContext
			if sec == nil || sec.ReadOnlyRootFilesystem == nil || !*sec.ReadOnlyRootFilesystem || sec.RunAsNonRoot == nil || !*sec.RunAsNonRoot ||
				sec.AllowPrivilegeEscalation == nil || *sec.AllowPrivilegeEscalation {
				t.Errorf("container securityContext %+v", sec)
			}
			if c.Resources.Requests.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
				t.Errorf("resources %+v", c.Resources)
			}
			var podNamespace *corev1.EnvVar
			for i := range c.Env {
				if c.Env[i].Name == "POD_NAMESPACE" {
					podNamespace = &c.Env[i]
				}
			}
			if podNamespace == nil || podNamespace.ValueFrom == nil || podNamespace.ValueFrom.FieldRef == nil ||
				podNamespace.ValueFrom.FieldRef.FieldPath != "metadata.namespace" {
				t.Errorf("POD_NAMESPACE from the downward API is missing: %+v", c.Env)
			}

			// The certificate directory: written by the operator (an
			// emptyDir) or the mounted Secret.
			var certMount *corev1.VolumeMount
			for i := range c.VolumeMounts {
				if c.VolumeMounts[i].MountPath == cfg.WebhookServer.CertDir {
					certMount = &c.VolumeMounts[i]
				}
			}
			if sc.name == "webhookDisabled" {
				if certMount != nil {
					t.Errorf("webhooks disabled, yet a certificate volume is mounted")
				}
				return
			}
			if certMount == nil {
				t.Fatalf("nothing is mounted at certDir %s", cfg.WebhookServer.CertDir)
			}
			var vol *corev1.Volume
			for i := range pod.Volumes {
				if pod.Volumes[i].Name == certMount.Name {
					vol = &pod.Volumes[i]
				}
			}
			switch sc.name {
			case "default":
				if vol == nil || vol.EmptyDir == nil || certMount.ReadOnly {
					t.Errorf("mode selfManaged needs a writable emptyDir at certDir, got %+v (%+v)", vol, certMount)
				}
			case "certificateSecret":
				if vol == nil || vol.Secret == nil || vol.Secret.SecretName != "my-webhook-tls" {
					t.Errorf("mode secret must mount Secret my-webhook-tls at certDir, got %+v", vol)
				}
			case "certificateCertManager":
				if vol == nil || vol.Secret == nil || vol.Secret.SecretName != "copse-webhook-serving-cert" {
					t.Errorf("mode certManager must mount the Certificate's Secret at certDir, got %+v", vol)
				}
				cert := map[string]any{}
				get(t, docs, "Certificate/copse-system/copse-webhook", &cert)
				spec, _ := cert["spec"].(map[string]any)
				if spec["secretName"] != "copse-webhook-serving-cert" {
					t.Errorf("Certificate secretName %v", spec["secretName"])
				}
				if _, ok := docs["Issuer/copse-system/copse-selfsigned"]; !ok {
					t.Error("no self-signed Issuer rendered")
				}
			}
			for key := range docs {
				if strings.HasPrefix(key, "Secret/") {
					t.Errorf("the chart renders %s: it must never own a certificate Secret", key)
				}
			}
		})
	}
}

func TestServices(t *testing.T) {
	monitorValues := map[string]any{"metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true}}}
	docs := template(t, monitorValues, serviceMonitorKind)
	webhookSvc := &corev1.Service{}
	get(t, docs, "Service/copse-system/copse-webhook", webhookSvc)
	if len(webhookSvc.Spec.Ports) != 1 || webhookSvc.Spec.Ports[0].Port != 443 || webhookSvc.Spec.Ports[0].TargetPort.String() != "webhook" {
		t.Errorf("webhook Service ports %+v", webhookSvc.Spec.Ports)
	}
	metricsSvc := &corev1.Service{}
	get(t, docs, "Service/copse-system/copse-metrics", metricsSvc)
	d := &appsv1.Deployment{}
	get(t, docs, "Deployment/copse-system/copse-operator", d)
	for _, svc := range []*corev1.Service{webhookSvc, metricsSvc} {
		for k, v := range svc.Spec.Selector {
			if d.Spec.Template.Labels[k] != v {
				t.Errorf("Service %s selects %s=%s, which the operator's pods do not carry", svc.Name, k, v)
			}
		}
	}
	if _, ok := docs["ServiceMonitor/copse-system/copse-operator"]; !ok {
		t.Error("metrics.serviceMonitor.enabled renders no ServiceMonitor")
	}
	if _, ok := template(t, nil, serviceMonitorKind)["ServiceMonitor/copse-system/copse-operator"]; ok {
		t.Error("a ServiceMonitor is rendered by default")
	}
	if _, ok := template(t, monitorValues)["ServiceMonitor/copse-system/copse-operator"]; ok {
		t.Error("a ServiceMonitor is rendered on a cluster that does not serve the kind")
	}
}

func TestInvalidValuesAreRefused(t *testing.T) {
	for name, values := range map[string]map[string]any{
		"unknown top-level key":       {"replicas": 2},
		"unknown nested key":          {"webhook": map[string]any{"certificate": map[string]any{"caBundle": "x"}}},
		"unknown config field":        {"config": map[string]any{"logging": map[string]any{"verbosity": 3}}},
		"certificate mode":            {"webhook": map[string]any{"certificate": map[string]any{"mode": "SelfManaged"}}},
		"log level":                   {"config": map[string]any{"logging": map[string]any{"level": "warn"}}},
		"scheduler backend":           {"config": map[string]any{"scheduler": map[string]any{"backend": "kai"}}},
		"duration":                    {"config": map[string]any{"leaderElection": map[string]any{"leaseDuration": "15"}}},
		"port type":                   {"webhook": map[string]any{"port": "9443"}},
		"local mode without URL":      {"localMode": map[string]any{"enabled": true}},
		"local mode with http URL":    {"localMode": map[string]any{"enabled": true, "webhookURL": "http://127.0.0.1:9443"}},
		"local mode with certManager": {"localMode": map[string]any{"enabled": true, "webhookURL": localWebhookURL}, "webhook": map[string]any{"certificate": map[string]any{"mode": "certManager"}}},
		"secret mode without CA":      {"webhook": map[string]any{"certificate": map[string]any{"mode": "secret"}}},
		"hand larger than queues":     {"flowControl": map[string]any{"priorityLevel": map[string]any{"queuing": map[string]any{"queues": 4, "handSize": 6}}}},
		"precedence after the built-in service-accounts schema": {"flowControl": map[string]any{"matchingPrecedence": 9500}},
		"lendable above 100 percent":                            {"flowControl": map[string]any{"priorityLevel": map[string]any{"lendablePercent": 101}}},
		"zero concurrency shares":                               {"flowControl": map[string]any{"priorityLevel": map[string]any{"nominalConcurrencyShares": 0}}},
		"unknown flowControl key":                               {"flowControl": map[string]any{"queues": 8}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := templateErr(t, values); err == nil {
				t.Errorf("helm template accepted %v", values)
			}
		})
	}
}
