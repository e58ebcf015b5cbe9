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

// servingCertificateValidity covers the longest e2e run or benchmark with
// room to spare; certificates are made afresh for every process anyway.
const servingCertificateValidity = 7 * 24 * time.Hour

// WriteServingCertificate is the one writer of the certificates that local
// test servers (the operator's webhooks, the JobSet controller's webhooks)
// serve on 127.0.0.1: it creates a CA and a serving certificate for
// 127.0.0.1 and localhost signed by it, named name, writes tls.crt, tls.key
// and ca.crt into dir (a controller-runtime certDir) and returns the CA
// certificate in PEM, e.g. for a webhook configuration's caBundle.
func WriteServingCertificate(dir, name string) (caPEM []byte, err error) {
	notBefore := time.Now().Add(-time.Hour) // tolerate small clock differences
	notAfter := notBefore.Add(servingCertificateValidity)

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate %s CA key: %w", name, err)
	}
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name + "-ca"},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("create %s CA certificate: %w", name, err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("parse %s CA certificate: %w", name, err)
	}

	servingKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate %s serving key: %w", name, err)
	}
	servingTemplate := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: name},
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
		return nil, fmt.Errorf("create %s serving certificate: %w", name, err)
	}
	servingKeyDER, err := x509.MarshalECPrivateKey(servingKey)
	if err != nil {
		return nil, fmt.Errorf("encode %s serving key: %w", name, err)
	}

	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create %s certificate directory: %w", name, err)
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
			return nil, fmt.Errorf("write %s %s: %w", name, f.name, err)
		}
	}
	return pem.EncodeToMemory(files[2].block), nil
}
