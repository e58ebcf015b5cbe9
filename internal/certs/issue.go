package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// Keys of the Secret, and the files of the certificate directory (tls.crt
// and tls.key only).
const (
	// CertKey is the serving certificate (PEM).
	CertKey = "tls.crt"
	// KeyKey is the serving certificate's private key (PEM, PKCS #8).
	KeyKey = "tls.key"
	// CACertKey is the CA bundle the webhook configurations carry as their
	// caBundle: the CA that signs serving certificates, first, and during a
	// CA rotation the previous CA too.
	CACertKey = "ca.crt"
	// CAKeyKey is the signing CA's private key (PEM, PKCS #8), kept so that
	// any replica can issue the next serving certificate with the same CA.
	CAKeyKey = "ca.key"
)

// CALifetimeFactor is how many times longer than a serving certificate the
// CA is valid.
const CALifetimeFactor = 10

// backdate is how long before its issuance a certificate is already valid,
// so that an API server or replica whose clock is a little behind accepts it.
const backdate = time.Hour

// Subject common names. Clients match the subject alternative names only.
const (
	caCommonName      = "copse-webhook-ca"
	servingCommonName = "copse-webhook"
)

// issuer is a CA that can sign serving certificates.
type issuer struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// newCA creates a self-signed CA valid from now-backdate to now+lifetime.
func newCA(now time.Time, lifetime time.Duration) (*issuer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	template := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: caCommonName},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(lifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("creating CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing the new CA certificate: %w", err)
	}
	return &issuer{cert: cert, key: key}, nil
}

// issueServing creates a serving certificate for sans, signed by ca, valid
// from now-backdate to now+validity, and returns it and its key in PEM.
func issueServing(now time.Time, validity time.Duration, ca *issuer, sans SANs) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating serving key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	template := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: servingCommonName},
		DNSNames:     sans.DNSNames,
		IPAddresses:  sans.IPAddresses,
		NotBefore:    now.Add(-backdate),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, ca.cert, key.Public(), ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("creating serving certificate: %w", err)
	}
	keyPEM, err = encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return encodeCertificate(der), keyPEM, nil
}

// newSerial returns a random 128-bit serial number, as RFC 5280 recommends.
func newSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("generating serial number: %w", err)
	}
	return serial, nil
}

func encodeCertificate(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func encodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// parseCertificates parses every CERTIFICATE block of data.
func parseCertificates(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		certs = append(certs, cert)
	}
	if len(certs) == 0 {
		return nil, errors.New("no PEM certificate found")
	}
	return certs, nil
}

// parsePrivateKey parses the first private key of data: PKCS #8, SEC 1 (EC)
// or PKCS #1 (RSA).
func parsePrivateKey(data []byte) (crypto.Signer, error) {
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, errors.New("no PEM private key found")
		}
		var key any
		var err error
		switch block.Type {
		case "PRIVATE KEY":
			key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(block.Bytes)
		case "RSA PRIVATE KEY":
			key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
		default:
			continue
		}
		if err != nil {
			return nil, err
		}
		signer, ok := key.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("unsupported private key type %T", key)
		}
		return signer, nil
	}
}

// publicKeyOf reports whether key is the private key of cert.
func publicKeyOf(key crypto.Signer, cert *x509.Certificate) bool {
	public, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	return ok && public.Equal(cert.PublicKey)
}
