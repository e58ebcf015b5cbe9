package framework

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/onsi/ginkgo/v2"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/process"
)

// Kubeflow Trainer's own controller manager (cmd/trainer-controller-manager
// of github.com/kubeflow/trainer/v2, the version hack/tools/trainer-oracle
// pins, built by the same tools row), run as a local process like JobSet and
// Kueue, for the specs of a move from Trainer to copse: Trainer makes the
// runtime snapshots and JobSets copse then adopts. Its webhook
// configurations come from the module's kustomize component, so nothing of
// Trainer is copied into copse.
const (
	trainerBinary = "trainer-controller-manager"
	// trainerWebhookComponent is the module's webhook component: the
	// configurations defaulter.trainer.kubeflow.org and
	// validator.trainer.kubeflow.org, the names its certificate manager
	// uses too.
	trainerWebhookComponent       = "manifests/base/webhook"
	trainerServingCertificateName = "trainer-webhook"
	// TrainerTrainJobValidatingWebhook is Trainer's TrainJob validation.
	TrainerTrainJobValidatingWebhook = "validator.trainjob.trainer.kubeflow.org"
)

// Trainer is a Kubeflow Trainer controller manager run against a cluster,
// its webhooks served on 127.0.0.1 and registered with the API server.
type Trainer struct {
	*process.Process
	// Version is the pinned github.com/kubeflow/trainer/v2 version.
	Version string

	client client.Client
	// mutating and validating are the webhook configurations it installed.
	mutating, validating string
}

// StartTrainer builds (or finds cached) Trainer's controller manager and
// starts it against env's cluster with leader election, metrics and its
// certificate management off, its webhook server on a free loopback port
// with a test certificate, waits until it is ready, installs Trainer's
// webhook configurations pointed at that port, and returns once the API
// server calls them (a dry-run TrainJob of a runtime that does not exist is
// refused by Trainer). It reconciles every TrainJob of the cluster, as an
// installed Trainer does. The trainer.kubeflow.org CRDs are copse's, a
// superset of Trainer's. progress nil means GinkgoWriter.
func StartTrainer(ctx context.Context, env *Env, progress io.Writer) (*Trainer, error) {
	if progress == nil {
		progress = ginkgo.GinkgoWriter
	}
	tool, moduleDir, err := ensureToolModule(ctx, cluster.ToolTrainerOracle, progress)
	if err != nil {
		return nil, fmt.Errorf("start Kubeflow Trainer: %w", err)
	}
	t := &Trainer{Version: tool.Version, client: env.Client}
	controller := localController{
		product: "Kubeflow Trainer", tool: tool, moduleDir: moduleDir, binary: trainerBinary, dirName: "trainer",
		certificateName: trainerServingCertificateName, certsInTempDir: true,
		configuration: func(webhookPort, healthPort int, _ string) ([]byte, error) {
			return trainerConfiguration(webhookPort, healthPort), nil
		},
		webhookComponent: trainerWebhookComponent,
		selectWebhooks: func(m *admissionregistrationv1.MutatingWebhookConfiguration, v *admissionregistrationv1.ValidatingWebhookConfiguration) error {
			t.mutating, t.validating = m.Name, v.Name
			return nil
		},
		probes:   []webhookProbe{trainJobWebhookProbe(metav1.NamespaceDefault, TrainerTrainJobValidatingWebhook)},
		progress: progress,
	}
	proc, err := controller.start(ctx, env)
	if err != nil {
		return nil, fmt.Errorf("start Kubeflow Trainer: %w", err)
	}
	t.Process = proc
	return t, nil
}

// Stop uninstalls Trainer as far as the cluster sees it: the process ends
// (SIGTERM, SIGKILL after 20 seconds) and its webhook configurations are
// deleted, so that the API server no longer calls webhooks no one serves.
// Everything Trainer made (snapshots, JobSets, TrainJob status) stays.
func (t *Trainer) Stop(ctx context.Context) error {
	err := t.Process.Stop(localControllerStopGrace)
	for _, obj := range []client.Object{
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: t.mutating}},
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: t.validating}},
	} {
		if obj.GetName() == "" {
			continue
		}
		if derr := t.client.Delete(ctx, obj); derr != nil && !apierrors.IsNotFound(derr) {
			err = errors.Join(err, fmt.Errorf("delete Kubeflow Trainer's webhook configuration %s: %w", obj.GetName(), derr))
		}
	}
	return err
}

// trainerConfiguration is Trainer's configuration file
// (config.trainer.kubeflow.org/v1alpha1): everything on loopback, no leader
// election, no metrics, no certificate management (it would look for an
// in-cluster Service and Secret); its webhook server reads the certificate
// from controller-runtime's default directory (certsInTempDir).
func trainerConfiguration(webhookPort, healthPort int) []byte {
	return fmt.Appendf(nil, `apiVersion: config.trainer.kubeflow.org/v1alpha1
kind: Configuration
leaderElection:
  leaderElect: false
health:
  healthProbeBindAddress: %q
metrics:
  bindAddress: "0"
webhook:
  host: 127.0.0.1
  port: %d
certManagement:
  enable: false
`, loopback(healthPort), webhookPort)
}

// trainJobWebhookProbe expects webhook, a TrainJob validation (copse's or
// Trainer's), to refuse the dry-run create of a TrainJob whose runtime does
// not exist, in namespace.
func trainJobWebhookProbe(namespace, webhook string) webhookProbe {
	return refusalProbe(webhook, func() client.Object {
		return &trainerv1alpha1.TrainJob{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "webhook-probe"},
			Spec:       trainerv1alpha1.TrainJobSpec{RuntimeRef: trainerv1alpha1.RuntimeRef{Name: "e2e-webhook-probe-no-such-runtime"}},
		}
	})
}
