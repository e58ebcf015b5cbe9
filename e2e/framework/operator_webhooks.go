package framework

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook"
)

// webhookActivationTimeout bounds the wait for the API server to start
// calling newly configured webhooks; it usually takes well under a second.
const webhookActivationTimeout = 30 * time.Second

// WebhookConfigurationName is the name of both webhook configurations
// (mutating and validating) that StartOperator installs for a suite.
func WebhookConfigurationName(suite string) string { return "copse-e2e-" + suite }

// webhookClientConfig points the API server at path on the operator's
// loopback webhook server.
func webhookClientConfig(baseURL, path string, caPEM []byte) admissionregistrationv1.WebhookClientConfig {
	return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(baseURL + path), CABundle: caPEM}
}

func webhookRules(endpoint webhook.Endpoint) []admissionregistrationv1.RuleWithOperations {
	return []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{
			APIGroups:   []string{endpoint.Group},
			APIVersions: []string{endpoint.Version},
			Resources:   []string{endpoint.Resource},
			Scope:       ptr.To(admissionregistrationv1.ScopeType(endpoint.Scope)),
		},
	}}
}

// installWebhookConfigurations creates (or replaces) the mutating and the
// validating configuration for every endpoint the operator serves, as the
// Helm chart would in a real cluster: webhook.FailurePolicy (Fail) and
// webhook.TimeoutSeconds, no side effects, and only spec changes sent
// (webhook.MatchConditions), so a stopped operator never blocks metadata
// updates such as finalizer removal.
// Only the endpoints the operator serves are configured: the TrainJob
// front-end's only with trainJob (controllers.trainJob.enabled), as the Helm
// chart does.
func installWebhookConfigurations(ctx context.Context, c client.Client, name, baseURL string, caPEM []byte, trainJob bool) error {
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, endpoint := range servedEndpoints(trainJob) {
		if endpoint.Mutating {
			mutating.Webhooks = append(mutating.Webhooks, admissionregistrationv1.MutatingWebhook{
				Name:                    endpoint.Name,
				ClientConfig:            webhookClientConfig(baseURL, endpoint.Path, caPEM),
				Rules:                   webhookRules(endpoint),
				MatchConditions:         webhook.MatchConditions(),
				FailurePolicy:           ptr.To(webhook.FailurePolicy),
				SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
				AdmissionReviewVersions: []string{"v1"},
				TimeoutSeconds:          ptr.To(webhook.TimeoutSeconds),
			})
			continue
		}
		validating.Webhooks = append(validating.Webhooks, admissionregistrationv1.ValidatingWebhook{
			Name:                    endpoint.Name,
			ClientConfig:            webhookClientConfig(baseURL, endpoint.Path, caPEM),
			Rules:                   webhookRules(endpoint),
			MatchConditions:         webhook.MatchConditions(),
			FailurePolicy:           ptr.To(webhook.FailurePolicy),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To(webhook.TimeoutSeconds),
		})
	}
	return applyWebhookConfigurations(ctx, c, mutating, validating)
}

// applyWebhookConfigurations creates mutating and validating, or replaces
// the webhooks of those that exist.
func applyWebhookConfigurations(ctx context.Context, c client.Client,
	mutating *admissionregistrationv1.MutatingWebhookConfiguration, validating *admissionregistrationv1.ValidatingWebhookConfiguration) error {
	if err := createOrReplace(ctx, c, mutating, func(existing *admissionregistrationv1.MutatingWebhookConfiguration) {
		existing.Webhooks = mutating.Webhooks
	}); err != nil {
		return err
	}
	return createOrReplace(ctx, c, validating, func(existing *admissionregistrationv1.ValidatingWebhookConfiguration) {
		existing.Webhooks = validating.Webhooks
	})
}

// createOrReplace creates obj, or, when it exists, applies replace to the
// stored object and updates it.
func createOrReplace[T client.Object](ctx context.Context, c client.Client, obj T, replace func(existing T)) error {
	kind := fmt.Sprintf("%T", obj)
	err := c.Create(ctx, obj)
	if err == nil {
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create %s %s: %w", kind, obj.GetName(), err)
	}
	existing := obj.DeepCopyObject().(T)
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), existing); err != nil {
		return fmt.Errorf("get %s %s: %w", kind, obj.GetName(), err)
	}
	replace(existing)
	if err := c.Update(ctx, existing); err != nil {
		return fmt.Errorf("update %s %s: %w", kind, obj.GetName(), err)
	}
	return nil
}

// waitCABundleInjected waits until every webhook of the mutating and the
// validating configuration called name carries the same non-empty caBundle,
// as an operator in certificates mode SelfManaged injects it, and returns it.
func waitCABundleInjected(ctx context.Context, c client.Client, name string) ([]byte, error) {
	bundles, err := WaitForCABundles(ctx, c, name, webhookActivationTimeout)
	if err != nil {
		return nil, fmt.Errorf("caBundle not injected by the operator: %w", err)
	}
	var caPEM []byte
	for webhook, ca := range bundles {
		if caPEM != nil && !bytes.Equal(ca, caPEM) {
			return nil, fmt.Errorf("webhook %s of %s has a caBundle that differs from the others'", webhook, name)
		}
		caPEM = ca
	}
	return caPEM, nil
}

// checkWebhookEndpointsServed posts an empty AdmissionReview to every path
// of webhook.Endpoints, trusting only caPEM, so that an operator that does
// not register a webhook fails here by name instead of making every write of
// that kind fail once the configurations are installed.
func checkWebhookEndpointsServed(ctx context.Context, baseURL string, caPEM []byte, trainJob bool) error {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return errors.New("webhook CA certificate is not valid PEM")
	}
	httpClient := &http.Client{
		Timeout:   time.Duration(webhook.TimeoutSeconds) * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
	}
	defer httpClient.CloseIdleConnections()
	body := []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"e2e-probe","operation":"DELETE"}}`)
	for _, endpoint := range servedEndpoints(trainJob) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+endpoint.Path, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := httpClient.Do(req)
		if err != nil {
			return fmt.Errorf("probe webhook %s at %s: %w", endpoint.Name, req.URL, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound {
			return fmt.Errorf("copse-operator does not serve webhook %s at %s (404): "+
				"is registerWebhooks (operator/webhooks.go) called when the webhook server is enabled?", endpoint.Name, endpoint.Path)
		}
	}
	return nil
}

// servedEndpoints are the webhook endpoints an operator serves: all, but
// the TrainJob front-end's only with trainJob.
func servedEndpoints(trainJob bool) []webhook.Endpoint {
	var out []webhook.Endpoint
	for _, endpoint := range webhook.Endpoints() {
		if endpoint.TrainJob && !trainJob {
			continue
		}
		out = append(out, endpoint)
	}
	return out
}

// waitWebhooksActive waits until the API server calls every webhook: the
// configurations reach it through an informer, so for a moment after they
// are created requests may still be admitted without them. Each probe is a
// dry-run create that only the webhook would change or refuse, in namespace.
func waitWebhooksActive(ctx context.Context, c client.Client, namespace string) error {
	return waitProbesPass(ctx, c, webhookProbes(namespace))
}

// waitProbesPass waits until every probe finds its webhook called.
func waitProbesPass(ctx context.Context, c client.Client, probes []webhookProbe) error {
	var pending []string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, webhookActivationTimeout, true, func(ctx context.Context) (bool, error) {
		pending = pending[:0]
		for _, probe := range probes {
			if problem := probe.check(ctx, c); problem != "" {
				pending = append(pending, probe.webhook+": "+problem)
			}
		}
		return len(pending) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("webhooks not active after %s:\n  %s", webhookActivationTimeout, strings.Join(pending, "\n  "))
	}
	return nil
}

// webhookProbe checks that the API server calls one webhook; check returns
// "" once it does, and otherwise what it saw instead.
type webhookProbe struct {
	webhook string
	check   func(ctx context.Context, c client.Client) string
}

func webhookProbes(namespace string) []webhookProbe {
	meta := metav1.ObjectMeta{Name: "webhook-probe", Namespace: namespace}
	podSpec := probePodSpec()
	probeSet := func(minAvailable int32) *copsev1alpha1.PodCliqueSet {
		pcs := &copsev1alpha1.PodCliqueSet{ObjectMeta: meta}
		pcs.Spec.Replicas = 1
		pcs.Spec.Template.Cliques = []*grovecorev1alpha1.PodCliqueTemplateSpec{{
			Name: "probe",
			Spec: grovecorev1alpha1.PodCliqueSpec{RoleName: "probe", Replicas: 1, MinAvailable: &minAvailable, PodSpec: podSpec},
		}}
		return pcs
	}
	return []webhookProbe{
		{webhook: "default.podcliquesets.grove.io", check: func(ctx context.Context, c client.Client) string {
			pcs := probeSet(1)
			if err := c.Create(ctx, pcs, client.DryRunAll); err != nil {
				return err.Error()
			}
			if pcs.Spec.Template.TerminationDelay == nil {
				return "a PodCliqueSet was stored without the default terminationDelay"
			}
			return ""
		}},
		refusalProbe("validate.podcliquesets.grove.io", func() client.Object { return probeSet(2) }),
		refusalProbe("validate.podcliques.grove.io", func() client.Object {
			return &copsev1alpha1.PodClique{ObjectMeta: meta, Spec: grovecorev1alpha1.PodCliqueSpec{RoleName: "probe", PodSpec: podSpec}}
		}),
		refusalProbe("validate.podcliquescalinggroups.grove.io", func() client.Object {
			return &copsev1alpha1.PodCliqueScalingGroup{ObjectMeta: meta,
				Spec: grovecorev1alpha1.PodCliqueScalingGroupSpec{Replicas: 0, CliqueNames: []string{"probe"}}}
		}),
	}
}

// probePodSpec is the pod of every probe's workload, never created.
func probePodSpec() corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "example.com/probe:1"}}}
}

// refusalProbe expects webhook to refuse the dry-run create of newInvalid()'s
// object, which the CRD schema alone accepts.
func refusalProbe(webhook string, newInvalid func() client.Object) webhookProbe {
	return webhookProbe{webhook: webhook, check: func(ctx context.Context, c client.Client) string {
		err := c.Create(ctx, newInvalid(), client.DryRunAll)
		switch {
		case err == nil:
			return "an invalid object was admitted"
		case !strings.Contains(err.Error(), fmt.Sprintf("admission webhook %q denied the request", webhook)):
			return err.Error()
		}
		return ""
	}}
}
