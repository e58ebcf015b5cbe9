package certificates_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/copse-dev/copse/e2e/framework"
)

// How long the operator may take to react to a change of the Secret or of a
// webhook configuration (it watches both), and the webhook server to reload
// its files (certwatcher polls every 10 seconds besides watching them).
const (
	reactionTimeout = 30 * time.Second
	pollInterval    = 250 * time.Millisecond
)

var _ = Describe("Self-managed webhook certificates", Ordered, Label("webhook"), func() {
	var (
		namespace string
		secretKey client.ObjectKey
		configKey client.ObjectKey
		certDir   string
		served    string // host:port of the webhook server
		validity  time.Duration
	)

	BeforeAll(func(ctx context.Context) {
		cfg := env.Operator.Configuration()
		certificates := cfg.WebhookServer.Certificates
		secretKey = client.ObjectKey{Namespace: certificates.SecretNamespace, Name: certificates.SecretName}
		configKey = client.ObjectKey{Name: certificates.WebhookConfigurationName}
		certDir = cfg.WebhookServer.CertDir
		served = net.JoinHostPort(cfg.WebhookServer.Host, strconv.Itoa(int(cfg.WebhookServer.Port)))
		validity = certificates.Validity.Duration
		namespace = env.NewNamespace(ctx, "certificates")
	})

	getSecret := func(ctx context.Context) *corev1.Secret {
		GinkgoHelper()
		secret := &corev1.Secret{}
		Expect(env.Client.Get(ctx, secretKey, secret)).To(Succeed())
		return secret
	}

	// caBundles returns the caBundle of every webhook of both configurations.
	caBundles := func(ctx context.Context, g Gomega) [][]byte {
		mutating := &admissionregistrationv1.MutatingWebhookConfiguration{}
		validating := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		g.Expect(env.Client.Get(ctx, configKey, mutating)).To(Succeed())
		g.Expect(env.Client.Get(ctx, configKey, validating)).To(Succeed())
		var bundles [][]byte
		for _, w := range mutating.Webhooks {
			bundles = append(bundles, w.ClientConfig.CABundle)
		}
		for _, w := range validating.Webhooks {
			bundles = append(bundles, w.ClientConfig.CABundle)
		}
		g.Expect(bundles).NotTo(BeEmpty())
		return bundles
	}

	// expectCABundleInjected waits until every webhook carries the Secret's
	// ca.crt.
	expectCABundleInjected := func(ctx context.Context) {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			caPEM := getSecret(ctx).Data["ca.crt"]
			for i, bundle := range caBundles(ctx, g) {
				g.Expect(bundle).To(Equal(caPEM), "caBundle of webhook %d", i)
			}
		}).WithContext(ctx).WithTimeout(reactionTimeout).WithPolling(pollInterval).Should(Succeed())
	}

	// servedCertificate is the certificate the webhook server presents now.
	servedCertificate := func() (*x509.Certificate, error) {
		conn, err := tls.Dial("tcp", served, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // reads what is served
		if err != nil {
			return nil, err
		}
		defer func() { _ = conn.Close() }()
		return conn.ConnectionState().PeerCertificates[0], nil
	}

	// expectServing waits until the webhook server presents the Secret's
	// tls.crt, which certDir holds too, and a client trusting only the
	// injected caBundle accepts it for 127.0.0.1.
	expectServing := func(ctx context.Context) {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			secret := getSecret(ctx)
			want := leaf(g, secret.Data["tls.crt"])
			got, err := servedCertificate()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.SerialNumber).To(Equal(want.SerialNumber), "the served certificate is not the Secret's")
			onDisk, err := os.ReadFile(filepath.Join(certDir, "tls.crt"))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(onDisk).To(Equal(secret.Data["tls.crt"]))

			roots := x509.NewCertPool()
			g.Expect(roots.AppendCertsFromPEM(caBundles(ctx, g)[0])).To(BeTrue())
			_, err = got.Verify(x509.VerifyOptions{Roots: roots, DNSName: "127.0.0.1"})
			g.Expect(err).NotTo(HaveOccurred(), "the served certificate is not trusted through the caBundle")
		}).WithContext(ctx).WithTimeout(reactionTimeout).WithPolling(pollInterval).Should(Succeed())
	}

	// expectAdmission creates a PodCliqueSet through the API server and
	// checks that the defaulting webhook handled it. Right after a
	// configuration changed the API server may still call with the previous
	// one, hence the retries, each with a new name.
	admissions := 0
	expectAdmission := func(ctx context.Context) {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			admissions++
			name := fmt.Sprintf("admitted-%d", admissions)
			pcs := framework.NewPodCliqueSet(namespace, name, 1, framework.CliqueTemplate("main", 1, framework.PodSpec(0)))
			g.Expect(env.Client.Create(ctx, pcs)).To(Succeed())
			g.Expect(pcs.Spec.Template.TerminationDelay).To(Equal(&metav1.Duration{Duration: 4 * time.Hour}),
				"the defaulting webhook did not handle the PodCliqueSet")
		}).WithContext(ctx).WithTimeout(reactionTimeout).WithPolling(time.Second).Should(Succeed())
	}

	// replaceInSecret stores data's entries in the Secret, as someone editing
	// it by hand would.
	replaceInSecret := func(ctx context.Context, data map[string][]byte) {
		GinkgoHelper()
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			secret := getSecret(ctx)
			for k, v := range data {
				secret.Data[k] = v
			}
			return env.Client.Update(ctx, secret)
		})).To(Succeed())
	}

	It("provisions the Secret, injects the CA and serves admission with the certificate", func(ctx context.Context) {
		secret := getSecret(ctx)
		Expect(secret.Type).To(Equal(corev1.SecretTypeTLS))
		Expect(secret.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "copse-operator"))
		Expect(secret.Data).To(SatisfyAll(HaveKey("tls.crt"), HaveKey("tls.key"), HaveKey("ca.crt"), HaveKey("ca.key")))

		cert := leaf(Default, secret.Data["tls.crt"])
		Expect(slices.ContainsFunc(cert.IPAddresses, net.ParseIP("127.0.0.1").Equal)).To(BeTrue(), "IP SANs %v", cert.IPAddresses)
		Expect(cert.DNSNames).To(ContainElement("localhost"))
		Expect(cert.NotAfter).To(BeTemporally("~", time.Now().Add(validity), 5*time.Minute))
		ca := leaf(Default, secret.Data["ca.crt"])
		Expect(ca.IsCA).To(BeTrue())
		Expect(ca.NotAfter).To(BeTemporally("~", time.Now().Add(10*validity), 5*time.Minute))

		expectCABundleInjected(ctx)
		expectServing(ctx)
		expectAdmission(ctx)

		By("exporting the expiry as a metric")
		metrics := scrape(env.Operator.MetricsURL())
		Expect(metrics).To(HaveKeyWithValue(`copse_webhook_certificate_expiry_timestamp_seconds{certificate="serving"}`, float64(cert.NotAfter.Unix())))
		Expect(metrics).To(HaveKeyWithValue(`copse_webhook_certificate_expiry_timestamp_seconds{certificate="ca"}`, float64(ca.NotAfter.Unix())))
	}, SpecTimeout(2*time.Minute))

	It("keeps the same certificate across a restart", func(ctx context.Context) {
		before := getSecret(ctx)
		servedBefore, err := servedCertificate()
		Expect(err).NotTo(HaveOccurred())

		Expect(env.Operator.Restart(ctx)).To(Succeed())

		after := getSecret(ctx)
		Expect(after.ResourceVersion).To(Equal(before.ResourceVersion), "the Secret was written again")
		Expect(after.Data).To(Equal(before.Data))
		servedAfter, err := servedCertificate()
		Expect(err).NotTo(HaveOccurred())
		Expect(servedAfter.SerialNumber).To(Equal(servedBefore.SerialNumber))
		expectAdmission(ctx)
	}, SpecTimeout(2*time.Minute))

	It("injects the CA again when a webhook configuration is reset or re-created without it", func(ctx context.Context) {
		By("clearing the caBundle of the mutating configuration, as a Helm upgrade re-applying it would")
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			mutating := &admissionregistrationv1.MutatingWebhookConfiguration{}
			if err := env.Client.Get(ctx, configKey, mutating); err != nil {
				return err
			}
			for i := range mutating.Webhooks {
				mutating.Webhooks[i].ClientConfig.CABundle = nil
			}
			return env.Client.Update(ctx, mutating)
		})).To(Succeed())

		By("re-creating the validating configuration without caBundle")
		validating := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		Expect(env.Client.Get(ctx, configKey, validating)).To(Succeed())
		Expect(env.Client.Delete(ctx, validating)).To(Succeed())
		recreated := &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: validating.Name},
			Webhooks:   validating.Webhooks,
		}
		for i := range recreated.Webhooks {
			recreated.Webhooks[i].ClientConfig.CABundle = nil
		}
		Expect(env.Client.Create(ctx, recreated)).To(Succeed())

		expectCABundleInjected(ctx)
		expectAdmission(ctx)
	}, SpecTimeout(2*time.Minute))

	It("renews a serving certificate that is near its expiry, with the same CA", func(ctx context.Context) {
		before := getSecret(ctx)
		nearExpiry := issue(before.Data["ca.crt"], before.Data["ca.key"], time.Now().Add(time.Hour))
		planted := leaf(Default, nearExpiry["tls.crt"]).SerialNumber
		replaceInSecret(ctx, nearExpiry)

		Eventually(func(g Gomega) {
			secret := getSecret(ctx)
			renewed := leaf(g, secret.Data["tls.crt"])
			g.Expect(renewed.SerialNumber).NotTo(Equal(planted), "the near-expiry certificate is still in the Secret")
			g.Expect(renewed.NotAfter).To(BeTemporally("~", time.Now().Add(validity), 5*time.Minute))
			g.Expect(secret.Data["ca.crt"]).To(Equal(before.Data["ca.crt"]), "a valid CA was replaced")
			g.Expect(secret.Data["ca.key"]).To(Equal(before.Data["ca.key"]), "a valid CA was replaced")
		}).WithContext(ctx).WithTimeout(reactionTimeout).WithPolling(pollInterval).Should(Succeed())

		expectServing(ctx)
		expectCABundleInjected(ctx)
		expectAdmission(ctx)
	}, SpecTimeout(2*time.Minute))

	It("renews the CA with the certificate when the CA would not outlive a new certificate", func(ctx context.Context) {
		shortCA, shortCAKey := newCA(time.Now().Add(48 * time.Hour))
		planted := issue(shortCA, shortCAKey, time.Now().Add(24*time.Hour))
		planted["ca.crt"], planted["ca.key"] = shortCA, shortCAKey
		replaceInSecret(ctx, planted)

		Eventually(func(g Gomega) {
			secret := getSecret(ctx)
			bundle := certificates(g, secret.Data["ca.crt"])
			g.Expect(bundle).To(HaveLen(2), "ca.crt holds the new CA and, while it is valid, the previous one")
			g.Expect(bundle[0].Raw).NotTo(Equal(leaf(g, shortCA).Raw), "the CA was not renewed")
			g.Expect(bundle[1].Raw).To(Equal(leaf(g, shortCA).Raw))
			g.Expect(bundle[0].NotAfter).To(BeTemporally("~", time.Now().Add(10*validity), 5*time.Minute))
			g.Expect(leaf(g, secret.Data["tls.crt"]).CheckSignatureFrom(bundle[0])).To(Succeed())
		}).WithContext(ctx).WithTimeout(reactionTimeout).WithPolling(pollInterval).Should(Succeed())

		expectCABundleInjected(ctx)
		expectServing(ctx)
		expectAdmission(ctx)
	}, SpecTimeout(2*time.Minute))
})

// leaf parses the first certificate of pemData.
func leaf(g Gomega, pemData []byte) *x509.Certificate {
	return certificates(g, pemData)[0]
}

func certificates(g Gomega, pemData []byte) []*x509.Certificate {
	var certs []*x509.Certificate
	for rest := pemData; ; {
		block, next := pem.Decode(rest)
		if block == nil {
			break
		}
		rest = next
		cert, err := x509.ParseCertificate(block.Bytes)
		g.Expect(err).NotTo(HaveOccurred())
		certs = append(certs, cert)
	}
	g.Expect(certs).NotTo(BeEmpty(), "no certificate in %q", pemData)
	return certs
}

// newCA returns a CA valid until notAfter, in PEM.
func newCA(notAfter time.Time) (certPEM, keyPEM []byte) {
	GinkgoHelper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	template := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "e2e-short-lived-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
	Expect(err).NotTo(HaveOccurred())
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), encodeKey(key)
}

// issue returns tls.crt and tls.key of a serving certificate for 127.0.0.1
// and localhost, valid until notAfter, signed by the CA first in caPEM.
func issue(caPEM, caKeyPEM []byte, notAfter time.Time) map[string][]byte {
	GinkgoHelper()
	ca := leaf(Default, caPEM)
	caPair, err := tls.X509KeyPair(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}), caKeyPEM)
	Expect(err).NotTo(HaveOccurred(), "ca.key does not belong to the first certificate of ca.crt")
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	template := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "e2e-planted"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, ca, key.Public(), caPair.PrivateKey.(crypto.Signer))
	Expect(err).NotTo(HaveOccurred())
	return map[string][]byte{
		"tls.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"tls.key": encodeKey(key),
	}
}

func encodeKey(key crypto.Signer) []byte {
	GinkgoHelper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	Expect(err).NotTo(HaveOccurred())
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// scrape returns the samples of a Prometheus text endpoint by series.
func scrape(url string) map[string]float64 {
	GinkgoHelper()
	resp, err := http.Get(url) //nolint:gosec // the operator's loopback metrics endpoint
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	samples := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if value, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			samples[line[:i]] = value
		}
	}
	return samples
}
