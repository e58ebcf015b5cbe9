package cluster_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/kubernetes"

	"github.com/copse-dev/copse/e2e/cluster"
)

var (
	testCluster *cluster.Cluster
	client      kubernetes.Interface
)

func TestCluster(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Local cluster")
}

var _ = BeforeSuite(func(ctx context.Context) {
	var err error
	testCluster, err = cluster.Start(ctx, cluster.Options{Out: GinkgoWriter})
	Expect(err).NotTo(HaveOccurred())
	client = testCluster.Client()
	GinkgoWriter.Printf("cluster in %s, kubeconfig %s\n", testCluster.Dir(), testCluster.Kubeconfig())
}, NodeTimeout(20*time.Minute)) // a cold binary cache means building Kubernetes

var _ = AfterSuite(func() {
	if testCluster != nil {
		Expect(testCluster.Stop()).To(Succeed())
	}
})

// Every spec must leave all components running; a crash is reported with
// the component's last log lines rather than surfacing as a later timeout.
var _ = AfterEach(func() {
	if testCluster != nil {
		Expect(testCluster.CheckHealthy()).To(Succeed())
	}
})
