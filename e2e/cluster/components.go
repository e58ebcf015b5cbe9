package cluster

import (
	"fmt"
	"net"
	"path/filepath"
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

var componentOrder = []string{Etcd, KubeAPIServer, KubeControllerManager, KubeScheduler, Kwok}

// featureGates turns on the Workload API (Workload, PodGroup) and
// topology-aware gang scheduling. The apiserver, scheduler and
// controller-manager must agree on them.
const featureGates = "GenericWorkload=true,TopologyAwareWorkloadScheduling=true"

// Address ranges of the simulated network.
const (
	serviceCIDR = "10.96.0.0/16"
	podCIDR     = "10.64.0.0/12" // kwok hands out pod IPs from here
)

// Ports are the loopback ports of one cluster's components.
type Ports struct {
	EtcdClient        int `json:"etcdClient"`
	EtcdPeer          int `json:"etcdPeer"`
	APIServer         int `json:"apiServer"`
	ControllerManager int `json:"controllerManager"`
	Scheduler         int `json:"scheduler"`
	Kwok              int `json:"kwok"`
}

// freePorts asks the kernel for unused ports. All listeners stay open until
// every port is chosen so that no port is handed out twice; another process
// may still grab one before the component binds it, which then shows up as
// a start failure naming the port.
func freePorts() (Ports, error) {
	var ports [6]int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return Ports{}, fmt.Errorf("pick free port: %w", err)
		}
		listeners = append(listeners, l)
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return Ports{ports[0], ports[1], ports[2], ports[3], ports[4], ports[5]}, nil
}

// layout is where a cluster keeps its files inside its directory.
type layout struct{ dir string }

func (l layout) state() string               { return filepath.Join(l.dir, "state.json") }
func (l layout) adminKubeconfig() string     { return filepath.Join(l.dir, "kubeconfig") }
func (l layout) log(component string) string { return filepath.Join(l.dir, "logs", component+".log") }
func (l layout) kubeconfig(comp string) string {
	return filepath.Join(l.dir, "kubeconfigs", comp+".kubeconfig")
}
func (l layout) etcdData() string { return filepath.Join(l.dir, "etcd") }
func (l layout) certDir(component string) string {
	return filepath.Join(l.dir, "pki", component)
}
func (l layout) saKey() string      { return filepath.Join(l.dir, "pki", "service-account.key") }
func (l layout) saPub() string      { return filepath.Join(l.dir, "pki", "service-account.pub") }
func (l layout) tokenFile() string  { return filepath.Join(l.dir, "pki", "tokens.csv") }
func (l layout) kwokStages() string { return filepath.Join(l.dir, "kwok", "stages") }
func (l layout) kwokHome() string   { return filepath.Join(l.dir, "kwok", "home") }

// apiserverCert is the certificate kube-apiserver generates for itself in
// its --cert-dir; the file also holds the CA that signed it.
func (l layout) apiserverCert() string {
	return filepath.Join(l.certDir(KubeAPIServer), "apiserver.crt")
}

// apiserverCA holds just the CA of apiserverCert, written by Start.
func (l layout) apiserverCA() string { return filepath.Join(l.dir, "pki", "ca.crt") }

func (l layout) dirs() []string {
	return []string{
		filepath.Join(l.dir, "logs"), filepath.Join(l.dir, "kubeconfigs"), filepath.Join(l.dir, "pki"),
		l.etcdData(), l.certDir(KubeAPIServer), l.certDir(KubeControllerManager), l.certDir(KubeScheduler),
		l.kwokStages(), l.kwokHome(),
	}
}

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
		"--authorization-mode=RBAC",
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

func kwokArgs(l layout, p Ports, stageFiles []string) []string {
	args := []string{
		"--kubeconfig=" + l.kubeconfig(Kwok),
		"--manage-all-nodes=false",
		"--manage-nodes-with-label-selector=" + LabelType + "=" + TypeKwok,
		fmt.Sprintf("--server-address=127.0.0.1:%d", p.Kwok),
		"--cidr=" + podCIDR,
	}
	for _, f := range stageFiles {
		args = append(args, "--config="+f)
	}
	return args
}

// kwokEnv points HOME into the cluster directory: kwok otherwise also loads
// ~/.kwok/kwok.yaml, whose stages would mix with copse's.
func kwokEnv(l layout) []string {
	return []string{"HOME=" + l.kwokHome()}
}
