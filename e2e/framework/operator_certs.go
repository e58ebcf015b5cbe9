package framework

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// servingCertificateValidity covers the longest e2e run with room to spare;
// certificates are made afresh for every operator anyway.
const servingCertificateValidity = 7 * 24 * time.Hour

// writeWebhookServingCertificate creates a CA and a serving certificate for
// 127.0.0.1 signed by it, writes tls.crt and tls.key into dir (the
// operator's webhookServer.certDir) and returns the CA certificate in PEM,
// which the webhook configurations carry as their caBundle.
func writeWebhookServingCertificate(dir string) (caPEM []byte, err error) {
	notBefore := time.Now().Add(-time.Hour) // tolerate small clock differences
	notAfter := notBefore.Add(servingCertificateValidity)

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate webhook CA key: %w", err)
	}
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "copse-e2e-webhook-ca"},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("create webhook CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("parse webhook CA certificate: %w", err)
	}

	servingKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate webhook serving key: %w", err)
	}
	servingTemplate := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "copse-operator-webhook"},
		// The API server matches the URL's host against the SANs only.
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:    []string{"localhost"},
		NotBefore:   notBefore,
		NotAfter:    notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	servingDER, err := x509.CreateCertificate(rand.Reader, servingTemplate, ca, &servingKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("create webhook serving certificate: %w", err)
	}
	servingKeyDER, err := x509.MarshalECPrivateKey(servingKey)
	if err != nil {
		return nil, fmt.Errorf("encode webhook serving key: %w", err)
	}

	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create webhook certificate directory: %w", err)
	}
	files := []struct {
		name  string
		block *pem.Block
	}{
		{"tls.crt", &pem.Block{Type: "CERTIFICATE", Bytes: servingDER}},
		{"tls.key", &pem.Block{Type: "EC PRIVATE KEY", Bytes: servingKeyDER}},
		{"ca.crt", &pem.Block{Type: "CERTIFICATE", Bytes: caDER}},
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), pem.EncodeToMemory(f.block), 0o600); err != nil {
			return nil, fmt.Errorf("write webhook %s: %w", f.name, err)
		}
	}
	return pem.EncodeToMemory(files[2].block), nil
}
