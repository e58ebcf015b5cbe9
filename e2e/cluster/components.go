package cluster

import (
	"fmt"
	"strings"
)

// Component names, in start order. They name log files, kubeconfigs and
// entries of the state file.
const (
	Etcd                  = "etcd"
	KubeAPIServer         = "kube-apiserver"
	KubeControllerManager = "kube-controller-manager"
	KubeScheduler         = "kube-scheduler"
	Kwok                  = "kwok"
)

// featureGates turns on the Workload API (Workload, PodGroup) and
// topology-aware gang scheduling. The apiserver, scheduler and
// controller-manager must agree on them.
const featureGates = "GenericWorkload=true,TopologyAwareWorkloadScheduling=true"

// Address ranges of the simulated network.
const (
	serviceCIDR = "10.96.0.0/16"
	podCIDR     = "10.64.0.0/12" // kwok hands out pod IPs from here
)

func loopbackURL(scheme string, port int) string {
	return fmt.Sprintf("%s://127.0.0.1:%d", scheme, port)
}

func etcdArgs(l layout, p Ports) []string {
	client, peer := loopbackURL("http", p.EtcdClient), loopbackURL("http", p.EtcdPeer)
	return []string{
		"--name=copse",
		"--data-dir=" + l.etcdData(),
		"--listen-client-urls=" + client,
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=copse=" + peer,
		// Throwaway data: durability is not worth an fsync per write on a
		// shared CI disk.
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	}
}

func apiserverArgs(l layout, p Ports) []string {
	return []string{
		"--etcd-servers=" + loopbackURL("http", p.EtcdClient),
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", p.APIServer),
		"--advertise-address=127.0.0.1",
		// 1.37 refuses a loopback advertise address with the default
		// endpoint reconciler; nothing in-cluster talks to the apiserver
		// through the kubernetes Service anyway (pods do not really run).
		"--endpoint-reconciler-type=none",
		"--cert-dir=" + l.certDir(KubeAPIServer),
		"--token-auth-file=" + l.tokenFile(),
		// Node: the real nodes' kubelets (realnode.go) are authorized as
		// any kubelet is; everyone else is authorized by RBAC.
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + l.saPub(),
		"--service-account-signing-key-file=" + l.saKey(),
		"--service-cluster-ip-range=" + serviceCIDR,
		"--runtime-config=scheduling.k8s.io/v1beta1=true",
		"--feature-gates=" + featureGates,
		// The plugin taints every new node not-ready until a node-lifecycle
		// controller clears it. That controller is off (see
		// controllerManagerArgs), so the taint would never go away.
		"--disable-admission-plugins=TaintNodesByCondition",
		"--allow-privileged=true",
		// Real nodes (realnode.go) are named for the cluster, not the
		// host: the API server reaches their kubelets (logs, exec) by
		// address.
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		"--profiling=false",
	}
}

func controllerManagerArgs(l layout, p Ports) []string {
	return []string{
		"--kubeconfig=" + l.kubeconfig(KubeControllerManager),
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", p.ControllerManager),
		"--cert-dir=" + l.certDir(KubeControllerManager),
		"--leader-elect=false",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + l.saKey(),
		"--root-ca-file=" + l.apiserverCA(),
		// kwok sends no node heartbeats, so the node-lifecycle controller
		// would mark every node NotReady after 40s and evict its pods.
		// Without it nodes stay schedulable for as long as the cluster runs.
		"--controllers=" + strings.Join([]string{"*", "-node-lifecycle-controller"}, ","),
		// The HPA controller acts on every autoscaler each second instead of
		// every 15: specs wait for it in seconds.
		"--horizontal-pod-autoscaler-sync-period=1s",
		"--feature-gates=" + featureGates,
		"--profiling=false",
	}
}

func schedulerArgs(l layout, p Ports) []string {
	return []string{
		"--kubeconfig=" + l.kubeconfig(KubeScheduler),
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", p.Scheduler),
		"--cert-dir=" + l.certDir(KubeScheduler),
		"--leader-elect=false",
		"--feature-gates=" + featureGates,
		"--profiling=false",
	}
}

func kwokArgs(l layout, p Ports, configs []string) []string {
	args := []string{
		"--kubeconfig=" + l.kubeconfig(Kwok),
		"--manage-all-nodes=false",
		"--manage-nodes-with-label-selector=" + LabelType + "=" + TypeKwok,
		fmt.Sprintf("--server-address=127.0.0.1:%d", p.Kwok),
		"--cidr=" + podCIDR,
	}
	for _, f := range configs {
		args = append(args, "--config="+f)
	}
	return args
}

// kwokEnv points HOME into the cluster directory: kwok otherwise also loads
// ~/.kwok/kwok.yaml, whose stages would mix with copse's.
func kwokEnv(l layout) []string {
	return []string{"HOME=" + l.kwokHome()}
}
