// Package certs provisions and rotates the serving certificate of copse's
// admission webhook server (webhookServer.certificates.mode SelfManaged).
//
// The CA and the serving certificate live in one Secret that every replica
// shares. Each replica makes sure the Secret holds a valid certificate,
// copies tls.crt and tls.key into the webhook server's certificate directory
// (controller-runtime's certwatcher reloads them), and injects the CA into
// the operator's webhook configurations.
//
// The package is split into pure decisions and thin I/O:
//
//   - Decide looks at a Secret's data at a given time and says whether to
//     keep it, renew the serving certificate, or renew the CA too, and why;
//     needsRenewal is its check of one serving certificate.
//   - Renew issues what Decide asked for (crypto/x509, ECDSA P-256).
//   - Manager does the I/O: the Secret (with optimistic concurrency, so that
//     replicas never overwrite each other and a valid certificate is never
//     rewritten), the files, the webhook configurations, and the periodic
//     re-check as a controller-runtime Runnable that runs on every replica.
//
// docs/architecture.md ("Webhook certificates") says why this is not
// github.com/open-policy-agent/cert-controller: IP SANs, files written
// before the webhook server starts, a Secret the operator creates, and
// RBAC limited to the objects by name.
package certs
