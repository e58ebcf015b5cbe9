package certs

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"maps"
	"net"
	"strings"
	"time"
)

// SANs are the subject alternative names a serving certificate must cover.
type SANs struct {
	DNSNames    []string
	IPAddresses []net.IP
}

// ParseSANs turns configured names and addresses into SANs.
func ParseSANs(dnsNames, ipAddresses []string) (SANs, error) {
	sans := SANs{DNSNames: dnsNames}
	for _, address := range ipAddresses {
		ip := net.ParseIP(address)
		if ip == nil {
			return SANs{}, fmt.Errorf("%q is not an IP address", address)
		}
		sans.IPAddresses = append(sans.IPAddresses, ip)
	}
	return sans, nil
}

func (s SANs) String() string {
	all := append([]string(nil), s.DNSNames...)
	for _, ip := range s.IPAddresses {
		all = append(all, ip.String())
	}
	return strings.Join(all, ", ")
}

// Policy is what a serving certificate must satisfy, and how new ones are made.
type Policy struct {
	// Validity is the lifetime of a new serving certificate; a new CA lives
	// CALifetimeFactor times as long.
	Validity time.Duration
	// RotateBefore renews a serving certificate when less than this remains.
	RotateBefore time.Duration
	// SANs must all be covered by the serving certificate.
	SANs SANs
}

// Action is what to do with a Secret's certificates.
type Action string

const (
	// Keep the Secret as it is: its serving certificate is valid.
	Keep Action = "Keep"
	// RenewServing issues a new serving certificate with the Secret's CA.
	RenewServing Action = "RenewServing"
	// RenewAll creates a new CA and a serving certificate signed by it.
	RenewAll Action = "RenewAll"
)

// Decision is an Action and the reason for it ("" for Keep).
type Decision struct {
	Action Action
	Reason string
}

// Decide says what to do with a Secret whose data is data, at now. A valid
// serving certificate (key pair, signed by a CA of ca.crt, covering the
// SANs, more than RotateBefore from the end of its own or its CA's validity)
// is kept, whatever else the Secret holds. Otherwise the serving certificate
// is renewed, with the same CA if that CA is usable (ca.crt and ca.key
// match, it is a CA, and it stays valid for longer than a new serving
// certificate would), and with a new CA otherwise.
func Decide(data map[string][]byte, now time.Time, p Policy) Decision {
	servingProblem := servingCertificateProblem(data, now, p)
	if servingProblem == "" {
		return Decision{Action: Keep}
	}
	ca, caProblem := signingCA(data, now)
	if ca != nil {
		// Checked here, not in signingCA: a serving certificate that is
		// still valid is kept even when its CA could not sign the next one.
		if renewedUntil := now.Add(p.Validity); ca.cert.NotAfter.Before(renewedUntil) {
			caProblem = fmt.Sprintf("the CA expires at %s, before a new serving certificate would (%s)",
				timestamp(ca.cert.NotAfter), timestamp(renewedUntil))
		}
	}
	if caProblem == "" {
		return Decision{Action: RenewServing, Reason: servingProblem}
	}
	return Decision{Action: RenewAll, Reason: servingProblem + "; " + caProblem}
}

// needsRenewal reports whether a serving certificate must be replaced at now
// on its own account (its validity period and its SANs), and why.
func needsRenewal(cert *x509.Certificate, now time.Time, rotateBefore time.Duration, want SANs) (bool, string) {
	switch {
	case now.Before(cert.NotBefore):
		return true, fmt.Sprintf("the serving certificate is not valid before %s", timestamp(cert.NotBefore))
	case !now.Before(cert.NotAfter):
		return true, fmt.Sprintf("the serving certificate expired at %s", timestamp(cert.NotAfter))
	case cert.NotAfter.Sub(now) < rotateBefore:
		return true, fmt.Sprintf("the serving certificate expires at %s, in less than rotateBefore (%s)",
			timestamp(cert.NotAfter), rotateBefore)
	}
	if missing := missingSANs(cert, want); len(missing) > 0 {
		return true, fmt.Sprintf("the serving certificate does not cover %s", strings.Join(missing, ", "))
	}
	return false, ""
}

// servingCertificateProblem returns why the serving certificate of data
// cannot be kept at now, or "" if it can.
func servingCertificateProblem(data map[string][]byte, now time.Time, p Policy) string {
	if len(data[CertKey]) == 0 || len(data[KeyKey]) == 0 {
		return fmt.Sprintf("the Secret has no serving certificate (%s and %s)", CertKey, KeyKey)
	}
	pair, err := tls.X509KeyPair(data[CertKey], data[KeyKey])
	if err != nil {
		return fmt.Sprintf("%s and %s are not a valid key pair: %v", CertKey, KeyKey, err)
	}
	leaf := pair.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return fmt.Sprintf("%s cannot be parsed: %v", CertKey, err)
		}
	}
	if renew, reason := needsRenewal(leaf, now, p.RotateBefore, p.SANs); renew {
		return reason
	}
	if !servesTLS(leaf) {
		return fmt.Sprintf("%s is not a TLS server certificate (extended key usage)", CertKey)
	}
	if len(data[CACertKey]) == 0 {
		return fmt.Sprintf("the Secret has no %s to inject as the webhooks' caBundle", CACertKey)
	}
	cas, err := parseCertificates(data[CACertKey])
	if err != nil {
		return fmt.Sprintf("%s cannot be parsed: %v", CACertKey, err)
	}
	var signer *x509.Certificate
	for _, ca := range cas {
		if ca.IsCA && leaf.CheckSignatureFrom(ca) == nil {
			signer = ca
			break
		}
	}
	switch {
	case signer == nil:
		return fmt.Sprintf("%s is not signed by a CA of %s", CertKey, CACertKey)
	case now.Before(signer.NotBefore):
		return fmt.Sprintf("the CA that signed %s is not valid before %s", CertKey, timestamp(signer.NotBefore))
	case signer.NotAfter.Sub(now) < p.RotateBefore:
		return fmt.Sprintf("the CA that signed %s expires at %s, in less than rotateBefore (%s)",
			CertKey, timestamp(signer.NotAfter), p.RotateBefore)
	}
	return ""
}

// signingCA returns the CA of data that can sign serving certificates at
// now, or why there is none.
func signingCA(data map[string][]byte, now time.Time) (*issuer, string) {
	if len(data[CACertKey]) == 0 || len(data[CAKeyKey]) == 0 {
		return nil, fmt.Sprintf("the Secret has no CA to sign with (%s and %s)", CACertKey, CAKeyKey)
	}
	key, err := parsePrivateKey(data[CAKeyKey])
	if err != nil {
		return nil, fmt.Sprintf("%s cannot be parsed: %v", CAKeyKey, err)
	}
	cas, err := parseCertificates(data[CACertKey])
	if err != nil {
		return nil, fmt.Sprintf("%s cannot be parsed: %v", CACertKey, err)
	}
	for _, ca := range cas {
		if !publicKeyOf(key, ca) {
			continue
		}
		switch {
		case !ca.IsCA || ca.KeyUsage&x509.KeyUsageCertSign == 0:
			return nil, fmt.Sprintf("the certificate of %s in %s is not a CA", CAKeyKey, CACertKey)
		case now.Before(ca.NotBefore):
			return nil, fmt.Sprintf("the CA is not valid before %s", timestamp(ca.NotBefore))
		case !now.Before(ca.NotAfter):
			return nil, fmt.Sprintf("the CA expired at %s", timestamp(ca.NotAfter))
		}
		return &issuer{cert: ca, key: key}, ""
	}
	return nil, fmt.Sprintf("%s does not belong to a certificate of %s", CAKeyKey, CACertKey)
}

// Renew carries out decision on data at now and returns the Secret's new
// data. Keys other than the four of this package are kept. RenewAll puts the
// new CA first in ca.crt and keeps the CA that signed the previous serving
// certificate after it while that CA is valid, so that replicas still
// serving the previous certificate stay trusted until they pick up the new
// one.
func Renew(data map[string][]byte, decision Decision, now time.Time, p Policy) (map[string][]byte, error) {
	renewed := maps.Clone(data)
	if renewed == nil {
		renewed = map[string][]byte{}
	}
	var ca *issuer
	switch decision.Action {
	case RenewServing:
		var problem string
		if ca, problem = signingCA(data, now); ca == nil {
			return nil, fmt.Errorf("cannot renew the serving certificate with the Secret's CA: %s", problem)
		}
	case RenewAll:
		var err error
		if ca, err = newCA(now, CALifetimeFactor*p.Validity); err != nil {
			return nil, err
		}
		keyPEM, err := encodeKey(ca.key)
		if err != nil {
			return nil, err
		}
		bundle := encodeCertificate(ca.cert.Raw)
		if previous := previousIssuer(data, now); previous != nil {
			bundle = append(bundle, encodeCertificate(previous.Raw)...)
		}
		renewed[CACertKey], renewed[CAKeyKey] = bundle, keyPEM
	default:
		return nil, fmt.Errorf("nothing to renew for action %q", decision.Action)
	}
	certPEM, keyPEM, err := issueServing(now, p.Validity, ca, p.SANs)
	if err != nil {
		return nil, err
	}
	renewed[CertKey], renewed[KeyKey] = certPEM, keyPEM
	return renewed, nil
}

// previousIssuer returns the CA of data's ca.crt that signed data's serving
// certificate, if both parse and the CA is valid at now.
func previousIssuer(data map[string][]byte, now time.Time) *x509.Certificate {
	leaves, err := parseCertificates(data[CertKey])
	if err != nil {
		return nil
	}
	cas, err := parseCertificates(data[CACertKey])
	if err != nil {
		return nil
	}
	for _, ca := range cas {
		if ca.IsCA && leaves[0].CheckSignatureFrom(ca) == nil && !now.Before(ca.NotBefore) && now.Before(ca.NotAfter) {
			return ca
		}
	}
	return nil
}

// Summary describes the certificates of a Secret's data, for logs and
// metrics.
type Summary struct {
	// ServingSerial is the serving certificate's serial number (hex).
	ServingSerial string
	// ServingNotAfter and CANotAfter end the validity of the serving
	// certificate and of the CA that signed it.
	ServingNotAfter, CANotAfter time.Time
}

// Summarize describes data's serving certificate and its CA, as far as they
// parse.
func Summarize(data map[string][]byte) Summary {
	var s Summary
	leaves, err := parseCertificates(data[CertKey])
	if err != nil {
		return s
	}
	s.ServingSerial, s.ServingNotAfter = leaves[0].SerialNumber.Text(16), leaves[0].NotAfter
	if cas, err := parseCertificates(data[CACertKey]); err == nil {
		for _, ca := range cas {
			if leaves[0].CheckSignatureFrom(ca) == nil {
				s.CANotAfter = ca.NotAfter
				break
			}
		}
	}
	return s
}

// missingSANs lists the wanted names and addresses cert does not carry.
// DNS names compare without regard to case; wildcards must match literally.
func missingSANs(cert *x509.Certificate, want SANs) []string {
	var missing []string
	for _, name := range want.DNSNames {
		found := false
		for _, have := range cert.DNSNames {
			if strings.EqualFold(name, have) {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, "DNS name "+name)
		}
	}
	for _, ip := range want.IPAddresses {
		found := false
		for _, have := range cert.IPAddresses {
			if ip.Equal(have) {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, "IP address "+ip.String())
		}
	}
	return missing
}

// servesTLS reports whether cert may be used by a TLS server: no extended
// key usage at all, or one that allows it.
func servesTLS(cert *x509.Certificate) bool {
	if len(cert.ExtKeyUsage) == 0 && len(cert.UnknownExtKeyUsage) == 0 {
		return true
	}
	for _, usage := range cert.ExtKeyUsage {
		if usage == x509.ExtKeyUsageServerAuth || usage == x509.ExtKeyUsageAny {
			return true
		}
	}
	return false
}

func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
