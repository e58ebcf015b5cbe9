package framework

import (
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// ExpectAdmissionInvalid asserts that err is a 422 Invalid from the API
// server, refused by the named webhook ("" for the CRD's own validation,
// where no webhook is named), whose message has every fragment.
func ExpectAdmissionInvalid(err error, webhook string, fragments ...string) {
	ginkgo.GinkgoHelper()
	gomega.Expect(err).To(gomega.HaveOccurred(), "the request was admitted")
	gomega.Expect(apierrors.IsInvalid(err)).To(gomega.BeTrue(), "want an Invalid (422) error, got %v", err)
	if webhook != "" {
		gomega.Expect(err.Error()).To(gomega.ContainSubstring(`admission webhook "` + webhook + `" denied the request`))
	} else {
		gomega.Expect(err.Error()).NotTo(gomega.ContainSubstring("admission webhook"))
	}
	for _, fragment := range fragments {
		gomega.Expect(err.Error()).To(gomega.ContainSubstring(fragment))
	}
}
