package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/e2e/process"
)

// installChart installs (or upgrades) the chart in local mode: everything
// but the Deployment, with webhooks calling the local operator's port.
func installChart(ctx context.Context, env *framework.Env, ports framework.LocalOperatorPorts) error {
	helm, err := framework.NewHelm(ctx, env.Cluster.Kubeconfig(), filepath.Join(env.Cluster.Dir(), "helm"))
	if err != nil {
		return err
	}
	chart, err := framework.ChartDir()
	if err != nil {
		return err
	}
	out, err := helm.Run(ctx, "upgrade", "--install", releaseName, chart,
		"--namespace", releaseNamespace, "--create-namespace",
		"--set", "localMode.enabled=true",
		"--set", "localMode.webhookURL="+ports.WebhookURL(),
		// The fleet has a ClusterTopologyBinding and the simulated NVIDIA DRA
		// driver: packing and MNNVL are on.
		"--set", "config.topologyAwareScheduling.enabled=true",
		"--set", "config.mnnvl.enabled=true",
		"--wait", "--timeout", "2m")
	if err != nil {
		return fmt.Errorf("helm install: %w\n%s", err, out)
	}
	fmt.Print(indent(out))
	return nil
}

// startOperator starts copse-operator in its own session, so that it keeps
// running after the demo returns, with a token of the chart's
// ServiceAccount (so the demo runs with exactly the chart's permissions) and
// the configuration the chart rendered, moved to loopback ports.
func startOperator(ctx context.Context, env *framework.Env, dir string, ports framework.LocalOperatorPorts) error {
	if err := stopRecordedProcess(operatorPIDFile(dir)); err != nil {
		return err
	}
	opDir := filepath.Join(dir, "operator")
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return err
	}
	kubeconfig := filepath.Join(opDir, "kubeconfig")
	if err := framework.WriteServiceAccountKubeconfig(ctx, env, releaseNamespace, releaseName+"-operator", kubeconfig, 24*time.Hour); err != nil {
		return err
	}
	cfg, _, err := framework.ConfigMapOperatorConfiguration(ctx, env.Client, releaseNamespace, releaseName+"-config", "config.yaml")
	if err != nil {
		return err
	}
	localise(cfg, opDir, ports)
	configPath := filepath.Join(opDir, "config.yaml")
	if err := framework.WriteOperatorConfiguration(configPath, cfg); err != nil {
		return err
	}
	binary, err := framework.EnsureOperatorBinary(ctx, filepath.Join(opDir, "bin"))
	if err != nil {
		return err
	}
	operator, err := process.Start(process.Spec{
		Name: "copse-operator", Binary: binary, Args: []string{"--kubeconfig", kubeconfig, "--config", configPath},
		LogPath: filepath.Join(dir, "logs", "copse-operator.log"), Detach: true,
	})
	if err != nil {
		return err
	}
	if err := os.WriteFile(operatorPIDFile(dir), []byte(strconv.Itoa(operator.PID())), 0o644); err != nil {
		return err
	}
	if err := waitReady(ctx, "http://"+cfg.Server.HealthProbes.BindAddress+"/readyz", 2*time.Minute); err != nil {
		return fmt.Errorf("copse-operator (log %s): %w", operator.LogPath(), err)
	}
	if _, err := framework.WaitForCABundles(ctx, env.Client, releaseName, time.Minute); err != nil {
		return err
	}
	// The chart keeps its webhooks away from its own namespace, so the
	// admission probes run where the samples go.
	if err := ensureNamespace(ctx, env.Client, demoNamespace); err != nil {
		return err
	}
	return framework.WaitWebhooksActive(ctx, env.Client, demoNamespace)
}

// localise moves the chart's in-cluster configuration to this machine:
// loopback ports, a local certificate directory, and the release namespace
// where a pod would have read it from its environment.
func localise(cfg *configv1alpha1.OperatorConfiguration, dir string, ports framework.LocalOperatorPorts) {
	cfg.Server.HealthProbes.BindAddress = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports.HealthProbes))
	cfg.Server.Metrics.BindAddress = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports.Metrics))
	cfg.WebhookServer.Host = "127.0.0.1"
	cfg.WebhookServer.Port = int32(ports.Webhook)
	cfg.WebhookServer.CertDir = filepath.Join(dir, "certs")
	cfg.LeaderElection.ResourceNamespace = releaseNamespace
	cfg.WebhookServer.Certificates.SecretNamespace = releaseNamespace
}

func waitReady(ctx context.Context, url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get(url)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready at %s after %s", url, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// startJobSet starts the JobSet controller with its webhooks, detached so
// that it keeps running after the demo returns, as the operator does, and
// records its pid for `down`.
func startJobSet(ctx context.Context, env *framework.Env, dir string) (*framework.JobSet, error) {
	if err := stopRecordedProcess(jobSetPIDFile(dir)); err != nil {
		return nil, err
	}
	jobset, err := framework.StartJobSet(ctx, env, framework.JobSetOptions{Detach: true, Progress: os.Stdout})
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(jobSetPIDFile(dir), []byte(strconv.Itoa(jobset.PID())), 0o644); err != nil {
		return nil, err
	}
	return jobset, nil
}

func operatorPIDFile(dir string) string { return filepath.Join(dir, "operator", "copse-operator.pid") }

// jobSetPIDFile is next to the configuration StartJobSet writes.
func jobSetPIDFile(dir string) string { return filepath.Join(dir, "jobset", "jobset-controller.pid") }

// stopRecordedProcess stops the process whose pid a demo wrote to pidFile
// (SIGTERM to its session's group, SIGKILL after 10 seconds) and removes the
// file; without the file there is nothing to stop.
func stopRecordedProcess(pidFile string) error {
	raw, err := os.ReadFile(pidFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		return fmt.Errorf("pid file %s: %w", pidFile, err)
	}
	if err := process.Adopt(process.Spec{Name: strings.TrimSuffix(filepath.Base(pidFile), ".pid")}, pid).Stop(10 * time.Second); err != nil {
		return err
	}
	return os.Remove(pidFile)
}

// down stops the JobSet controller, the operator and the cluster (Kueue, a
// component of the cluster, with it) and removes the directory.
func down(dir string) error {
	for _, pidFile := range []string{jobSetPIDFile(dir), operatorPIDFile(dir)} {
		if err := stopRecordedProcess(pidFile); err != nil {
			return err
		}
	}
	c, err := cluster.Load(dir)
	if errors.Is(err, cluster.ErrNoCluster) {
		fmt.Printf("no demo cluster in %s\n", dir)
		return nil
	}
	if err != nil {
		return err
	}
	if err := c.Stop(); err != nil {
		return err
	}
	fmt.Printf("stopped the JobSet controller, the operator, Kueue and the cluster in %s\n", dir)
	return nil
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ") + "\n"
}
