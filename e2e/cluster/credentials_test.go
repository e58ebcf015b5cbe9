package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The apiserver's self-generated bundle is leaf first, then CA; only the CA
// may reach --root-ca-file and kubeconfigs.
func TestServingCAKeepsOnlyTheCA(t *testing.T) {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	leafKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "leaf"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour),
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, caTmpl, &leafKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	bundle := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})...)

	got, err := servingCA(bundle)
	if err != nil {
		t.Fatal(err)
	}
	block, rest := pem.Decode(got)
	if block == nil || len(strings.TrimSpace(string(rest))) != 0 {
		t.Fatalf("want exactly one certificate, got %q", got)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil || cert.Subject.CommonName != "ca" {
		t.Errorf("kept %v (%v), want the CA", cert.Subject, err)
	}
	if _, err := servingCA(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER})); err == nil {
		t.Error("a bundle without a CA must be an error")
	}
}

func TestServiceAccountKeys(t *testing.T) {
	dir := t.TempDir()
	key, pub := filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	if err := writeServiceAccountKeys(key, pub); err != nil {
		t.Fatal(err)
	}
	keyPEM, _ := os.ReadFile(key)
	block, _ := pem.Decode(keyPEM)
	priv, err := x509.ParsePKCS1PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	pubPEM, _ := os.ReadFile(pub)
	block, _ = pem.Decode(pubPEM)
	parsed, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !priv.PublicKey.Equal(parsed) {
		t.Error("public key does not belong to the private key")
	}
	if info, _ := os.Stat(key); info.Mode().Perm() != 0o600 {
		t.Errorf("private key mode %v, want 0600", info.Mode().Perm())
	}
}

func TestTokenFile(t *testing.T) {
	ids, err := newIdentities(nil)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tokens.csv")
	if err := writeTokenFile(path, ids); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	line := ids["admin"].token + ",copse-admin,copse-admin,\"system:masters\""
	if !strings.Contains(string(data), line) {
		t.Errorf("token file lacks %q:\n%s", line, data)
	}
	if ids["admin"].token == ids["kwok"].token {
		t.Error("identities share a token")
	}
}
