package certs

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// certificateExpiry is exported on the manager's /metrics endpoint.
var certificateExpiry = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "copse_webhook_certificate_expiry_timestamp_seconds",
	Help: "When the webhook serving certificate (certificate=\"serving\") and the CA that signed it " +
		"(certificate=\"ca\") expire, in seconds since the Unix epoch. Set in mode SelfManaged only.",
}, []string{"certificate"})

func init() {
	metrics.Registry.MustRegister(certificateExpiry)
}

// recordExpiry publishes the expiry of data's certificates.
func recordExpiry(data map[string][]byte) {
	s := Summarize(data)
	if !s.ServingNotAfter.IsZero() {
		certificateExpiry.WithLabelValues("serving").Set(float64(s.ServingNotAfter.Unix()))
	}
	if !s.CANotAfter.IsZero() {
		certificateExpiry.WithLabelValues("ca").Set(float64(s.CANotAfter.Unix()))
	}
}
