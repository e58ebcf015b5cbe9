package framework

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CreateNamespace creates a namespace with a generated name, so specs never
// see each other's objects.
func CreateNamespace(ctx context.Context, c client.Client, prefix string) (string, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := c.Create(ctx, ns); err != nil {
		return "", fmt.Errorf("create namespace %s-*: %w", prefix, err)
	}
	return ns.Name, nil
}

// NewNamespace creates a namespace with a generated name (CreateNamespace)
// and returns its name, failing the spec when it cannot.
func (e *Env) NewNamespace(ctx context.Context, prefix string) string {
	ginkgo.GinkgoHelper()
	ns, err := CreateNamespace(ctx, e.Client, prefix)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return ns
}
