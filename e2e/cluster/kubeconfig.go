package cluster

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// contextName is the kubeconfig context (and cluster entry) of every
// kubeconfig this package writes.
const contextName = "copse"

// writeKubeconfig writes a self-contained kubeconfig (CA embedded) for one
// token identity.
func writeKubeconfig(path, server string, caPEM []byte, id identity) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[contextName] = &clientcmdapi.Cluster{
		Server:                   server,
		CertificateAuthorityData: caPEM,
	}
	cfg.AuthInfos[id.user] = &clientcmdapi.AuthInfo{Token: id.token}
	cfg.Contexts[contextName] = &clientcmdapi.Context{Cluster: contextName, AuthInfo: id.user}
	cfg.CurrentContext = contextName
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}

func restConfigFromKubeconfig(path string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", path, err)
	}
	// Tests create objects in bursts; client-go's default 5 QPS would make
	// the client, not the cluster, the bottleneck.
	cfg.QPS = 200
	cfg.Burst = 400
	return cfg, nil
}
