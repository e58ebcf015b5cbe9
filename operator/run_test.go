package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// These tests run the whole operator in-process against a stand-in API
// server that answers only discovery, which is all the operator asks for
// while it has no controllers and no leader election.

func TestRunServesProbesUntilCancelled(t *testing.T) {
	apiServer := newDiscoveryOnlyAPIServer(t, true)
	healthAddress := "127.0.0.1:" + strconv.Itoa(freePort(t))

	cfg := configv1alpha1.NewDefaultOperatorConfiguration()
	cfg.LeaderElection.Enabled = ptr.To(false)
	cfg.WebhookServer.Host = "127.0.0.1"
	cfg.WebhookServer.Port = int32(freePort(t))
	cfg.WebhookServer.CertDir = writeSelfSignedCertificate(t)
	cfg.Server.HealthProbes.BindAddress = healthAddress
	cfg.Server.Metrics.BindAddress = "0"

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- run(ctx, &rest.Config{Host: apiServer.URL}, cfg) }()

	readyz := waitForStatusOK(t, "http://"+healthAddress+"/readyz?verbose", stopped)
	for _, check := range []string{"[+]ping ok", "[+]webhook-server ok"} {
		if !strings.Contains(readyz, check) {
			t.Errorf("/readyz does not report %q:\n%s", check, readyz)
		}
	}
	waitForStatusOK(t, "http://"+healthAddress+"/healthz", stopped)

	cancel()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("run returned %v after cancellation, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return after cancellation")
	}
}

func TestRunRefusesForcedWorkloadBackendThatIsNotServed(t *testing.T) {
	apiServer := newDiscoveryOnlyAPIServer(t, false)
	cfg := configv1alpha1.NewDefaultOperatorConfiguration()
	cfg.Scheduler.Backend = configv1alpha1.SchedulerBackendWorkload

	err := run(context.Background(), &rest.Config{Host: apiServer.URL}, cfg)
	if err == nil || !strings.Contains(err.Error(), `scheduler backend "workload" needs the API server to serve scheduling.k8s.io/v1beta1`) {
		t.Fatalf("run error = %v, want the unserved workload API to be reported", err)
	}
}

// newDiscoveryOnlyAPIServer answers discovery of scheduling.k8s.io/v1beta1,
// listing workloads and podgroups when servesWorkloadAPI, and 404 otherwise.
func newDiscoveryOnlyAPIServer(t *testing.T, servesWorkloadAPI bool) *httptest.Server {
	t.Helper()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/apis/scheduling.k8s.io/v1beta1" && servesWorkloadAPI {
			_ = json.NewEncoder(w).Encode(metav1.APIResourceList{
				TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
				GroupVersion: "scheduling.k8s.io/v1beta1",
				APIResources: []metav1.APIResource{
					{Name: "workloads", Namespaced: true, Kind: "Workload"},
					{Name: "podgroups", Namespaced: true, Kind: "PodGroup"},
				},
			})
			return
		}
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(metav1.Status{
			TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status:   metav1.StatusFailure,
			Reason:   metav1.StatusReasonNotFound,
			Code:     http.StatusNotFound,
		})
	}))
	t.Cleanup(server.Close)
	return server
}

// waitForStatusOK polls url until it answers 200 and returns the body.
func waitForStatusOK(t *testing.T, url string, stopped <-chan error) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var lastProblem string
	for time.Now().Before(deadline) {
		select {
		case err := <-stopped:
			t.Fatalf("run stopped early: %v", err)
		default:
		}
		resp, err := http.Get(url)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return string(body)
			}
			lastProblem = resp.Status + ": " + string(body)
		} else {
			lastProblem = err.Error()
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s never answered 200: %s", url, lastProblem)
	return ""
}

func freePort(t *testing.T) int {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = listener.Close() }()
	return listener.Addr().(*net.TCPAddr).Port
}

// writeSelfSignedCertificate writes tls.crt and tls.key for 127.0.0.1 into a
// fresh directory and returns it.
func writeSelfSignedCertificate(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "copse-operator-test"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	certDER, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, block := range map[string]*pem.Block{
		"tls.crt": {Type: "CERTIFICATE", Bytes: certDER},
		"tls.key": {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
