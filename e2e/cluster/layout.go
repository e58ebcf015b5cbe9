package cluster

import "path/filepath"

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
