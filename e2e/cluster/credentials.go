package cluster

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"os"
	"strings"
)

// identity is a static-token user of the apiserver.
type identity struct {
	user   string
	token  string
	groups []string
}

// newIdentities creates one token per client so that the apiserver's logs
// and RBAC decisions tell the components apart. The scheduler runs as the
// user its bootstrap RBAC role is bound to; the controller-manager gets its
// per-controller service-account credentials from that same user, as under
// kubeadm; kwok and the admin need everything.
func newIdentities(realNodes []realNodeState) (map[string]identity, error) {
	ids := map[string]identity{
		"admin":                   {user: "copse-admin", groups: []string{"system:masters"}},
		"kube-controller-manager": {user: "system:kube-controller-manager"},
		"kube-scheduler":          {user: "system:kube-scheduler"},
		"kwok":                    {user: "copse-kwok", groups: []string{"system:masters"}},
		// The simulated driver installs a CRD and a DeviceClass, and
		// publishes ResourceSlices: cluster-admin work, as the real driver's
		// Helm chart grants.
		NVIDIADRASim: {user: "copse-nvidia-dra-sim", groups: []string{"system:masters"}},
	}
	for _, n := range realNodes {
		ids[realNodeIdentityKey(n.Name)] = realNodeIdentity(n.Name)
	}
	for name, id := range ids {
		token, err := randomToken()
		if err != nil {
			return nil, err
		}
		id.token = token
		ids[name] = id
	}
	return ids, nil
}

// writeTokenFile writes the apiserver's --token-auth-file: token,user,uid,"groups".
func writeTokenFile(path string, ids map[string]identity) error {
	var b strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, "%s,%s,%s,\"%s\"\n", id.token, id.user, id.user, strings.Join(id.groups, ","))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("write token file: %w", err)
	}
	return nil
}

func randomToken() (string, error) {
	buf := make([]byte, 24)
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("generate token: %w", err)
	}
	return hex.EncodeToString(buf), nil
}

// writeServiceAccountKeys generates the key pair the apiserver signs
// service-account tokens with and the controller-manager mints them with.
// Generated here so that no openssl is needed.
func writeServiceAccountKeys(keyPath, pubPath string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("generate service-account key: %w", err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return fmt.Errorf("encode service-account public key: %w", err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	if err := os.WriteFile(keyPath, keyPEM, 0o600); err != nil {
		return fmt.Errorf("write service-account key: %w", err)
	}
	if err := os.WriteFile(pubPath, pubPEM, 0o644); err != nil {
		return fmt.Errorf("write service-account public key: %w", err)
	}
	return nil
}

// servingCA picks the CA certificates out of the bundle kube-apiserver
// writes for its self-generated serving certificate (leaf first, then CA).
// Consumers of a "root CA" file, like the controller-manager's
// ClusterTrustBundle publisher, reject a bundle that starts with a leaf.
func servingCA(bundle []byte) ([]byte, error) {
	var out []byte
	for rest := bundle; ; {
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
			return nil, fmt.Errorf("parse kube-apiserver certificate: %w", err)
		}
		if cert.IsCA {
			out = append(out, pem.EncodeToMemory(block)...)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("kube-apiserver certificate bundle holds no CA certificate")
	}
	return out, nil
}
