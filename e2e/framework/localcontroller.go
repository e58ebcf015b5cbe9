package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/process"
)

// The start and stop of a local controller.
const (
	// localControllerReadyTimeout bounds the wait for /readyz after the
	// start.
	localControllerReadyTimeout = 2 * time.Minute
	// localControllerStopGrace is how long Stop waits after SIGTERM.
	localControllerStopGrace = 20 * time.Second
	// localControllerLogTailLines is how much of the log an error quotes.
	localControllerLogTailLines = 30
)

// ensureToolModule returns the pinned tool called name, built, and the
// directory of its module's source (CRDs, webhook manifests).
func ensureToolModule(ctx context.Context, name string, progress io.Writer) (cluster.BuiltTool, string, error) {
	tool, err := cluster.EnsureTool(ctx, name, progress)
	if err != nil {
		return cluster.BuiltTool{}, "", err
	}
	moduleDir, err := tool.ModuleSource(ctx)
	if err != nil {
		return cluster.BuiltTool{}, "", err
	}
	return tool, moduleDir, nil
}

// localController is a third-party controller (JobSet, Kueue) run as a local
// process next to a cluster, with its own webhooks served on a loopback port
// with a test certificate and registered with the API server from its
// module's webhook component.
type localController struct {
	// product names it in messages ("JobSet").
	product string
	// tool is its pinned tool and moduleDir that module's source.
	tool      cluster.BuiltTool
	moduleDir string
	// binary is the tool's binary to run; its log file is named after it.
	binary string
	// dirName is its directory under the cluster directory (certificates,
	// configuration).
	dirName string
	// certificateName names the test certificate its webhook server serves.
	certificateName string
	// configuration writes its configuration file for these ports and
	// certificate directory; the process is started with --config.
	configuration func(webhookPort, healthPort int, certDir string) ([]byte, error)
	// webhookComponent is the kustomize component of its webhook
	// configurations in the module, and namePrefix the prefix its own
	// install gives their names.
	webhookComponent, namePrefix string
	// selectWebhooks, when set, edits the configurations before they are
	// installed.
	selectWebhooks func(*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) error
	// probes find its webhooks called by the API server.
	probes []webhookProbe
	// certsInTempDir: its webhook server reads its certificate from
	// controller-runtime's default directory, under the temporary
	// directory (Kubeflow Trainer has no setting for it), so the
	// certificate is written to <dir>/tmp/k8s-webhook-server/serving-certs
	// and the process runs with TMPDIR=<dir>/tmp.
	certsInTempDir bool
	// detach lets the process outlive this one.
	detach   bool
	progress io.Writer
}

// start writes the certificate and the configuration, starts the process,
// waits until it is ready, installs its webhook configurations and waits
// until the API server calls them. On failure the process is stopped and
// the error quotes the end of its log.
func (l localController) start(ctx context.Context, env *Env) (*process.Process, error) {
	dir := filepath.Join(env.Cluster.Dir(), l.dirName)
	certDir := filepath.Join(dir, "certs")
	var processEnv []string
	if l.certsInTempDir {
		tmp := filepath.Join(dir, "tmp")
		certDir = filepath.Join(tmp, "k8s-webhook-server", "serving-certs")
		processEnv = append(processEnv, "TMPDIR="+tmp)
	}
	caPEM, err := WriteServingCertificate(certDir, l.certificateName)
	if err != nil {
		return nil, err
	}
	ports, err := cluster.FreePorts(2)
	if err != nil {
		return nil, err
	}
	webhookPort, healthPort := ports[0], ports[1]
	config, err := l.configuration(webhookPort, healthPort, certDir)
	if err != nil {
		return nil, err
	}
	configPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(configPath, config, 0o600); err != nil {
		return nil, fmt.Errorf("write %s's configuration: %w", l.product, err)
	}
	logPath := filepath.Join(env.Cluster.Dir(), "logs", l.binary+".log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	args := []string{"--config", configPath, "--kubeconfig", env.Cluster.Kubeconfig(), "--zap-devel=false", "--zap-log-level=info"}
	fmt.Fprintf(l.progress, "starting %s %s (log: %s)\n", l.binary, l.tool.Version, logPath)
	proc, err := process.Start(process.Spec{
		Name: l.binary, Binary: l.tool.Path(l.binary), Args: args, Env: processEnv, LogPath: logPath, Detach: l.detach,
	})
	if err != nil {
		return nil, err
	}
	if err := l.register(ctx, env, proc, "https://"+loopback(webhookPort), "http://"+loopback(healthPort)+"/readyz", caPEM); err != nil {
		_ = proc.Stop(localControllerStopGrace)
		return nil, fmt.Errorf("%w; last log lines (%s):\n%s", err, logPath, proc.LogTail(localControllerLogTailLines))
	}
	return proc, nil
}

// register waits until the process is ready (its /readyz turns 200 once the
// webhook server serves), installs the webhook configurations and waits
// until the API server calls them.
func (l localController) register(ctx context.Context, env *Env, proc *process.Process, webhookURL, readyURL string, caPEM []byte) error {
	if err := waitReadyz(ctx, l.binary, readyURL, localControllerReadyTimeout, proc.ExitReason); err != nil {
		return err
	}
	rendered, err := renderKustomization(ctx, env, l.moduleDir, l.webhookComponent, l.product)
	if err != nil {
		return err
	}
	mutating, validating, err := componentWebhookConfigurations(rendered, l.product, l.namePrefix, webhookURL, caPEM)
	if err != nil {
		return err
	}
	if l.selectWebhooks != nil {
		if err := l.selectWebhooks(mutating, validating); err != nil {
			return err
		}
	}
	if err := applyWebhookConfigurations(ctx, env.Client, mutating, validating); err != nil {
		return err
	}
	return waitProbesPass(ctx, env.Client, l.probes)
}

// renderKustomization renders the kustomization at dir inside a module's
// source (moduleDir) with the cluster's kubectl; product names the module
// in errors.
func renderKustomization(ctx context.Context, env *Env, moduleDir, dir, product string) ([]byte, error) {
	rendered, err := exec.CommandContext(ctx, env.Cluster.Binaries().Kubectl, "kustomize", filepath.Join(moduleDir, dir)).Output()
	if err != nil {
		return nil, fmt.Errorf("render %s's webhook configurations (kubectl kustomize %s): %w", product, dir, commandError(err))
	}
	return rendered, nil
}

// componentWebhookConfigurations picks the MutatingWebhookConfiguration and
// the ValidatingWebhookConfiguration out of a controller's rendered webhook
// component (product names it in errors: "JobSet", "Kueue"), names them as
// the product's own install does (namePrefix + the component's name), and
// points every webhook, which names an in-cluster Service, at the same path
// under baseURL, trusting caPEM.
func componentWebhookConfigurations(rendered []byte, product, namePrefix, baseURL string, caPEM []byte) (
	*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	var mutating *admissionregistrationv1.MutatingWebhookConfiguration
	var validating *admissionregistrationv1.ValidatingWebhookConfiguration
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(rendered), 4096)
	for {
		var obj unstructured.Unstructured
		if err := decoder.Decode(&obj.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, nil, fmt.Errorf("decode %s's webhook component: %w", product, err)
		}
		var into any
		switch obj.GetKind() {
		case "MutatingWebhookConfiguration":
			if mutating != nil {
				return nil, nil, fmt.Errorf("%s's webhook component has more than one MutatingWebhookConfiguration", product)
			}
			mutating = &admissionregistrationv1.MutatingWebhookConfiguration{}
			into = mutating
		case "ValidatingWebhookConfiguration":
			if validating != nil {
				return nil, nil, fmt.Errorf("%s's webhook component has more than one ValidatingWebhookConfiguration", product)
			}
			validating = &admissionregistrationv1.ValidatingWebhookConfiguration{}
			into = validating
		default:
			continue // the Service the webhooks would call in a cluster
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, into); err != nil {
			return nil, nil, fmt.Errorf("decode %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	if mutating == nil || validating == nil {
		return nil, nil, fmt.Errorf("%s's webhook component lacks a MutatingWebhookConfiguration or a ValidatingWebhookConfiguration", product)
	}
	mutating.ObjectMeta = metav1.ObjectMeta{Name: namePrefix + mutating.Name}
	validating.ObjectMeta = metav1.ObjectMeta{Name: namePrefix + validating.Name}
	// Each webhook names an in-cluster Service; its path moves under baseURL.
	localise := func(webhook string, config *admissionregistrationv1.WebhookClientConfig) error {
		if config.Service == nil || config.Service.Path == nil || *config.Service.Path == "" {
			return fmt.Errorf("%s's webhook %s: clientConfig.service.path is not set, so there is no path to call it at", product, webhook)
		}
		*config = webhookClientConfig(baseURL, *config.Service.Path, caPEM)
		return nil
	}
	for i := range mutating.Webhooks {
		if err := localise(mutating.Webhooks[i].Name, &mutating.Webhooks[i].ClientConfig); err != nil {
			return nil, nil, err
		}
	}
	for i := range validating.Webhooks {
		if err := localise(validating.Webhooks[i].Name, &validating.Webhooks[i].ClientConfig); err != nil {
			return nil, nil, err
		}
	}
	return mutating, validating, nil
}

// commandError adds what a failed command wrote to standard error.
func commandError(err error) error {
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) && len(exitErr.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, bytes.TrimSpace(exitErr.Stderr))
	}
	return err
}
