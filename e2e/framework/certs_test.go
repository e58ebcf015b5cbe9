package framework

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
)

// The serving certificate must satisfy the API server: a TLS handshake with
// https://127.0.0.1 trusting only the returned CA.
func TestServingCertificateIsTrustedFor127001(t *testing.T) {
	dir := t.TempDir()
	caPEM, err := WriteServingCertificate(dir, "copse-operator-webhook")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		t.Fatalf("the operator could not load tls.crt and tls.key: %v", err)
	}
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	server.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	server.StartTLS()
	defer server.Close()

	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("the returned CA is not PEM")
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := client.Get(server.URL) // https://127.0.0.1:<port>
	if err != nil {
		t.Fatalf("TLS to %s with the returned CA: %v", server.URL, err)
	}
	_ = resp.Body.Close()
}
