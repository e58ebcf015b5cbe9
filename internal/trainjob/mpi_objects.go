package trainjob

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"

	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
)

// BuildMPIHostfile is the launcher's hostfile: one line per training pod
// (the node job's, and the launcher's when it also trains) with its slots.
// Endpoints must be set by the backend's network step first.
func BuildMPIHostfile(p *Plan) *corev1.ConfigMap {
	slots := ptr.Deref(p.MLPolicy.MPI.NumProcPerNode, 1)
	var hostfile strings.Builder
	for _, podSet := range p.PodSets {
		if podSet.Name != NodeName && (!p.runLauncherAsNode() || podSet.Name != LauncherName) {
			continue
		}
		for _, endpoint := range podSet.Endpoints {
			fmt.Fprintf(&hostfile, "%s slots=%d\n", endpoint, slots)
		}
	}
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: OwnedMeta(p.TrainJob, p.TrainJob.Name+MPIHostfileConfigMapSuffix),
		Data:       map[string]string{mpiHostfileKey: hostfile.String()},
	}
}

// BuildMPISSHSecret is a fresh SSH identity for the TrainJob's pods: an ECDSA
// P-521 key, immutable. It is created once; a TrainJob keeps its key.
func BuildMPISSHSecret(trainJob *trainerv1alpha1.TrainJob) (*corev1.Secret, error) {
	key, err := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate the MPI SSH key: %w", err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode the MPI SSH key: %w", err)
	}
	public, err := ssh.NewPublicKey(&key.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("encode the MPI SSH public key: %w", err)
	}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: OwnedMeta(trainJob, trainJob.Name+MPISSHAuthSecretSuffix),
		Type:       corev1.SecretTypeSSHAuth,
		Immutable:  ptr.To(true),
		Data: map[string][]byte{
			corev1.SSHAuthPrivateKey: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}),
			MPISSHPublicKeyKey:       ssh.MarshalAuthorizedKey(public),
		},
	}, nil
}

// OwnedMeta names a ConfigMap or Secret of a TrainJob: in its namespace,
// controlled by it, and labelled as copse's (the operator caches only the
// ConfigMaps and Secrets it manages).
func OwnedMeta(trainJob *trainerv1alpha1.TrainJob, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       trainJob.Namespace,
		Labels:          ownedLabels(trainJob),
		OwnerReferences: []metav1.OwnerReference{ControllerReference(trainJob)},
	}
}

// ownedLabels mark an object copse made for a TrainJob: managed by copse
// (the operator's cache holds only those) and naming its TrainJob.
func ownedLabels(trainJob *trainerv1alpha1.TrainJob) map[string]string {
	return map[string]string{labels.ManagedByKey: labels.ManagedByValue, TrainJobNameLabel: trainJob.Name}
}
