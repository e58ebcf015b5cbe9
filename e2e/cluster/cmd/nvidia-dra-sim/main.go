// Command nvidia-dra-sim runs copse's simulated NVIDIA DRA driver for
// ComputeDomains (package e2e/cluster/nvidiadra) against a local cluster.
// e2e/cluster starts it as a component when a cluster is started with the
// simulated driver (Options.NVIDIADRA, `copse-cluster up --nvidia-dra`).
//
//	nvidia-dra-sim --kubeconfig FILE [--health-address 127.0.0.1:PORT]
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/copse-dev/copse/e2e/cluster/nvidiadra"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster (required)")
	health := flag.String("health-address", "", "address of the /healthz endpoint, which answers 200 after the first sync")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(*kubeconfig, *health, log); err != nil {
		log.Error("nvidia-dra-sim stopped", "err", err)
		os.Exit(1)
	}
}

func run(kubeconfig, health string, log *slog.Logger) error {
	if kubeconfig == "" {
		return fmt.Errorf("--kubeconfig is required")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.UserAgent = "nvidia-dra-sim"
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return nvidiadra.Run(ctx, cfg, health, log)
}
