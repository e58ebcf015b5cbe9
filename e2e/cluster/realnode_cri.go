package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The real node's container runtime, spoken to as the kubelet does: over
// the CRI, on containerd's socket.

func dialCRI(socket string) (runtimeapi.RuntimeServiceClient, func(), error) {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, fmt.Errorf("CRI client for %s: %w", socket, err)
	}
	return runtimeapi.NewRuntimeServiceClient(conn), func() { _ = conn.Close() }, nil
}

// criReady is a probe that passes once containerd's CRI plugin reports the
// runtime and the network ready (the CNI configuration loaded), which is
// what the kubelet waits for before it reports its node Ready.
func criReady(socket string) probe {
	return func(ctx context.Context) error {
		rt, closeConn, err := dialCRI(socket)
		if err != nil {
			return err
		}
		defer closeConn()
		status, err := rt.Status(ctx, &runtimeapi.StatusRequest{})
		if err != nil {
			return fmt.Errorf("CRI status: %w", err)
		}
		// Only the two conditions the kubelet requires: containerd adds
		// others, such as its deprecation warnings (cgroup v1 is one).
		ready := map[string]bool{}
		for _, cond := range status.GetStatus().GetConditions() {
			ready[cond.GetType()] = cond.GetStatus()
			if !cond.GetStatus() && (cond.GetType() == runtimeapi.RuntimeReady || cond.GetType() == runtimeapi.NetworkReady) {
				return fmt.Errorf("CRI condition %s is false: %s %s", cond.GetType(), cond.GetReason(), cond.GetMessage())
			}
		}
		if !ready[runtimeapi.RuntimeReady] || !ready[runtimeapi.NetworkReady] {
			return fmt.Errorf("CRI status reports no %s and %s conditions", runtimeapi.RuntimeReady, runtimeapi.NetworkReady)
		}
		return nil
	}
}

// removeAllSandboxes stops and removes every pod sandbox of the runtime,
// as the kubelet does for a pod it is done with: its containers are killed,
// its network torn down (the CNI plugin releases the address and the
// veth), its mounts and shim go away. What is left on the host after a
// real node is stopped is then only what the node's directory holds.
func removeAllSandboxes(ctx context.Context, socket string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	rt, closeConn, err := dialCRI(socket)
	if err != nil {
		return err
	}
	defer closeConn()
	list, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("list pod sandboxes: %w", err)
	}
	var errs []error
	for _, sb := range list.GetItems() {
		if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.GetId()}); err != nil {
			errs = append(errs, fmt.Errorf("stop pod sandbox %s/%s: %w", sb.GetMetadata().GetNamespace(), sb.GetMetadata().GetName(), err))
			continue
		}
		if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.GetId()}); err != nil {
			errs = append(errs, fmt.Errorf("remove pod sandbox %s/%s: %w", sb.GetMetadata().GetNamespace(), sb.GetMetadata().GetName(), err))
		}
	}
	return errors.Join(errs...)
}
