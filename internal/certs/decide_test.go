package certs

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"maps"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const (
	day      = 24 * time.Hour
	validity = 365 * day
	rotate   = 30 * day
)

// t0 is the fake clock's time when a test's certificates are made.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

var testSANs = SANs{
	DNSNames:    []string{"copse-webhook.copse-system.svc", "copse-webhook.copse-system.svc.cluster.local"},
	IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
}

func testPolicy() Policy {
	return Policy{Validity: validity, RotateBefore: rotate, SANs: testSANs}
}

// fresh returns the data of a Secret created at t0.
func fresh(t *testing.T) map[string][]byte {
	t.Helper()
	data, err := Renew(nil, Decision{Action: RenewAll}, t0, testPolicy())
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// caOf returns the signing CA of data at now.
func caOf(t *testing.T, data map[string][]byte, now time.Time) *issuer {
	t.Helper()
	ca, problem := signingCA(data, now)
	if ca == nil {
		t.Fatalf("no signing CA: %s", problem)
	}
	return ca
}

// withServing returns data with a serving certificate issued by ca at
// issued, valid for lifetime, for sans.
func withServing(t *testing.T, data map[string][]byte, ca *issuer, issued time.Time, lifetime time.Duration, sans SANs) map[string][]byte {
	t.Helper()
	certPEM, keyPEM, err := issueServing(issued, lifetime, ca, sans)
	if err != nil {
		t.Fatal(err)
	}
	out := maps.Clone(data)
	out[CertKey], out[KeyKey] = certPEM, keyPEM
	return out
}

// withCA returns data whose CA (ca.crt, ca.key) is ca, serving certificate
// left as it is.
func withCA(t *testing.T, data map[string][]byte, ca *issuer) map[string][]byte {
	t.Helper()
	keyPEM, err := encodeKey(ca.key)
	if err != nil {
		t.Fatal(err)
	}
	out := maps.Clone(data)
	out[CACertKey], out[CAKeyKey] = encodeCertificate(ca.cert.Raw), keyPEM
	return out
}

func without(data map[string][]byte, keys ...string) map[string][]byte {
	out := maps.Clone(data)
	for _, k := range keys {
		delete(out, k)
	}
	return out
}

func mustCA(t *testing.T, at time.Time, lifetime time.Duration) *issuer {
	t.Helper()
	ca, err := newCA(at, lifetime)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func TestNeedsRenewal(t *testing.T) {
	ca := mustCA(t, t0, 10*validity)
	certPEM, _, err := issueServing(t0, validity, ca, testSANs)
	if err != nil {
		t.Fatal(err)
	}
	certs, err := parseCertificates(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	cert := certs[0]
	notAfter := t0.Add(validity)

	tests := []struct {
		name       string
		now        time.Time
		want       SANs
		wantRenew  bool
		wantReason string
	}{
		{name: "just issued", now: t0, want: testSANs},
		{name: "issued an hour ago by a clock that runs ahead", now: t0.Add(-59 * time.Minute), want: testSANs},
		{name: "a minute before the rotation window", now: notAfter.Add(-rotate - time.Minute), want: testSANs},
		{
			name: "inside the rotation window", now: notAfter.Add(-rotate + time.Minute), want: testSANs, wantRenew: true,
			wantReason: "the serving certificate expires at 2027-03-01T12:00:00Z, in less than rotateBefore (720h0m0s)",
		},
		{
			name: "expired", now: notAfter, want: testSANs, wantRenew: true,
			wantReason: "the serving certificate expired at 2027-03-01T12:00:00Z",
		},
		{
			name: "not valid yet", now: t0.Add(-2 * time.Hour), want: testSANs, wantRenew: true,
			wantReason: "the serving certificate is not valid before 2026-03-01T11:00:00Z",
		},
		{
			name: "a subset of its SANs is covered", now: t0,
			want: SANs{DNSNames: testSANs.DNSNames[:1]},
		},
		{
			name: "DNS names compare without case", now: t0,
			want: SANs{DNSNames: []string{"Copse-Webhook.Copse-System.svc"}},
		},
		{
			name: "IPv4 in IPv6 form is the same address", now: t0,
			want: SANs{IPAddresses: []net.IP{net.ParseIP("::ffff:127.0.0.1")}},
		},
		{
			name: "a new DNS name and IP address are not covered", now: t0, wantRenew: true,
			want: SANs{
				DNSNames:    append([]string{"copse-webhook.other.svc"}, testSANs.DNSNames...),
				IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.7")},
			},
			wantReason: "the serving certificate does not cover DNS name copse-webhook.other.svc, IP address 10.0.0.7",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			renew, reason := needsRenewal(cert, tc.now, rotate, tc.want)
			if renew != tc.wantRenew || reason != tc.wantReason {
				t.Errorf("needsRenewal = (%v, %q), want (%v, %q)", renew, reason, tc.wantRenew, tc.wantReason)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	base := fresh(t)
	ca := caOf(t, base, t0)
	otherCA := mustCA(t, t0, 10*validity)
	servingEnd := t0.Add(validity)

	// A key pair in SEC 1 form, as other tools (and the e2e framework) write it.
	sec1 := func(data map[string][]byte) map[string][]byte {
		key, err := parsePrivateKey(data[KeyKey])
		if err != nil {
			t.Fatal(err)
		}
		der, err := x509.MarshalECPrivateKey(key.(*ecdsa.PrivateKey))
		if err != nil {
			t.Fatal(err)
		}
		out := maps.Clone(data)
		out[KeyKey] = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
		return out
	}
	clientOnly := func() map[string][]byte {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		template := &x509.Certificate{
			SerialNumber: mustSerial(t), Subject: pkix.Name{CommonName: "client"},
			DNSNames: testSANs.DNSNames, IPAddresses: testSANs.IPAddresses,
			NotBefore: t0.Add(-time.Hour), NotAfter: t0.Add(validity),
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
		der, err := x509.CreateCertificate(rand.Reader, template, ca.cert, key.Public(), ca.key)
		if err != nil {
			t.Fatal(err)
		}
		keyPEM, _ := encodeKey(key)
		out := maps.Clone(base)
		out[CertKey], out[KeyKey] = encodeCertificate(der), keyPEM
		return out
	}

	tests := []struct {
		name   string
		data   map[string][]byte
		now    time.Time
		policy func(*Policy)
		want   Action
		// reason must contain every fragment.
		reason []string
	}{
		{name: "fresh Secret is kept", data: base, now: t0, want: Keep},
		{name: "kept until the rotation window", data: base, now: servingEnd.Add(-rotate - time.Second), want: Keep},
		{
			name: "serving certificate in the rotation window is renewed with the same CA",
			data: base, now: servingEnd.Add(-rotate + time.Second), want: RenewServing,
			reason: []string{"in less than rotateBefore (720h0m0s)"},
		},
		{
			name: "expired serving certificate is renewed with the same CA", data: base, now: servingEnd.Add(time.Hour),
			want: RenewServing, reason: []string{"expired at 2027-03-01T12:00:00Z"},
		},
		{
			name: "a SAN added to the configuration renews the serving certificate", data: base, now: t0,
			policy: func(p *Policy) { p.SANs.DNSNames = append(p.SANs.DNSNames, "copse.example.com") },
			want:   RenewServing, reason: []string{"does not cover DNS name copse.example.com"},
		},
		{
			name: "a longer validity alone changes nothing", data: base, now: t0,
			policy: func(p *Policy) { p.Validity = 2 * validity }, want: Keep,
		},
		{
			name: "empty Secret gets everything", data: map[string][]byte{}, now: t0, want: RenewAll,
			reason: []string{"no serving certificate (tls.crt and tls.key)", "no CA to sign with (ca.crt and ca.key)"},
		},
		{
			name: "serving key of another certificate", now: t0, want: RenewServing,
			data:   func() map[string][]byte { d := maps.Clone(base); d[KeyKey] = fresh(t)[KeyKey]; return d }(),
			reason: []string{"tls.crt and tls.key are not a valid key pair"},
		},
		{
			name: "unparsable serving certificate", now: t0, want: RenewServing,
			data:   func() map[string][]byte { d := maps.Clone(base); d[CertKey] = []byte("garbage"); return d }(),
			reason: []string{"tls.crt and tls.key are not a valid key pair"},
		},
		{
			name: "serving certificate signed by another CA", now: t0, want: RenewServing,
			data:   withServing(t, base, otherCA, t0, validity, testSANs),
			reason: []string{"tls.crt is not signed by a CA of ca.crt"},
		},
		{
			name: "serving certificate for clients only", now: t0, want: RenewServing, data: clientOnly(),
			reason: []string{"not a TLS server certificate"},
		},
		{name: "SEC 1 serving key is accepted", data: sec1(base), now: t0, want: Keep},
		{
			name: "without ca.key a valid serving certificate is still kept (never rewritten)",
			data: without(base, CAKeyKey), now: t0, want: Keep,
		},
		{
			name: "without ca.key a due renewal renews the CA too",
			data: without(base, CAKeyKey), now: servingEnd, want: RenewAll,
			reason: []string{"expired at", "no CA to sign with"},
		},
		{
			name: "without ca.crt nothing can be injected, so everything is renewed",
			data: without(base, CACertKey), now: t0, want: RenewAll,
			reason: []string{"no ca.crt to inject", "no CA to sign with"},
		},
		{
			name: "ca.key of another CA", now: servingEnd, want: RenewAll,
			data: func() map[string][]byte {
				d := maps.Clone(base)
				d[CAKeyKey] = withCA(t, base, otherCA)[CAKeyKey]
				return d
			}(),
			reason: []string{"ca.key does not belong to a certificate of ca.crt"},
		},
		{
			name: "a CA that would expire before the next serving certificate is renewed with it",
			// The CA has 200 days left when the serving certificate is due;
			// a new serving certificate would live 365.
			data: func() map[string][]byte {
				shortCA := mustCA(t, t0, validity+200*day)
				return withServing(t, withCA(t, base, shortCA), shortCA, t0, validity, testSANs)
			}(),
			now: servingEnd.Add(-rotate + time.Second), want: RenewAll,
			reason: []string{"in less than rotateBefore", "the CA expires at 2027-09-17T12:00:00Z, before a new serving certificate would (2028-01-30T12:00:01Z)"},
		},
		{
			name: "a serving certificate that outlives its CA is renewed when the CA nears its end",
			data: func() map[string][]byte {
				shortCA := mustCA(t, t0, 60*day)
				return withServing(t, withCA(t, base, shortCA), shortCA, t0, validity, testSANs)
			}(),
			now: t0.Add(31 * day), want: RenewAll,
			reason: []string{"the CA that signed tls.crt expires at 2026-04-30T12:00:00Z, in less than rotateBefore"},
		},
		{
			name: "expired CA", now: t0.Add(70 * day), want: RenewAll,
			data: func() map[string][]byte {
				shortCA := mustCA(t, t0, 60*day)
				return withServing(t, withCA(t, base, shortCA), shortCA, t0, validity, testSANs)
			}(),
			reason: []string{"the CA expired at 2026-04-30T12:00:00Z"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			policy := testPolicy()
			if tc.policy != nil {
				tc.policy(&policy)
			}
			got := Decide(tc.data, tc.now, policy)
			if got.Action != tc.want {
				t.Fatalf("Decide = %s (%s), want %s", got.Action, got.Reason, tc.want)
			}
			if tc.want == Keep && got.Reason != "" {
				t.Errorf("Keep with reason %q", got.Reason)
			}
			for _, fragment := range tc.reason {
				if !strings.Contains(got.Reason, fragment) {
					t.Errorf("reason %q does not contain %q", got.Reason, fragment)
				}
			}
		})
	}
}

func mustSerial(t *testing.T) *big.Int {
	t.Helper()
	s, err := newSerial()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRenewServingKeepsTheCA(t *testing.T) {
	base := fresh(t)
	base["extra"] = []byte("kept")
	now := t0.Add(validity - rotate + day)
	renewed, err := Renew(base, Decision{Action: RenewServing}, now, testPolicy())
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{CACertKey, CAKeyKey, "extra"} {
		if !bytes.Equal(renewed[key], base[key]) {
			t.Errorf("%s changed", key)
		}
	}
	if bytes.Equal(renewed[CertKey], base[CertKey]) || bytes.Equal(renewed[KeyKey], base[KeyKey]) {
		t.Fatal("the serving certificate and key were not replaced")
	}
	s := Summarize(renewed)
	if !s.ServingNotAfter.Equal(now.Add(validity)) || s.ServingSerial == Summarize(base).ServingSerial {
		t.Errorf("renewed serving certificate: %+v", s)
	}
	if d := Decide(renewed, now, testPolicy()); d.Action != Keep {
		t.Errorf("a renewed Secret is not kept: %+v", d)
	}
	if base[CertKey] == nil || Decide(base, t0, testPolicy()).Action != Keep {
		t.Error("Renew changed its input")
	}
}

func TestRenewAllKeepsThePreviousCATrusted(t *testing.T) {
	base := fresh(t)
	oldCA := caOf(t, base, t0)
	now := t0.Add(100 * day)
	renewed, err := Renew(base, Decision{Action: RenewAll}, now, testPolicy())
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := parseCertificates(renewed[CACertKey])
	if err != nil {
		t.Fatal(err)
	}
	if len(bundle) != 2 || !bundle[1].Equal(oldCA.cert) {
		t.Fatalf("ca.crt holds %d certificates, want the new CA then the previous one", len(bundle))
	}
	newCA := caOf(t, renewed, now)
	if !newCA.cert.Equal(bundle[0]) || newCA.cert.Equal(oldCA.cert) {
		t.Error("ca.key does not belong to the new CA, first in ca.crt")
	}
	if want := now.Add(CALifetimeFactor * validity); !newCA.cert.NotAfter.Equal(want) {
		t.Errorf("CA NotAfter = %s, want %s", newCA.cert.NotAfter, want)
	}
	if d := Decide(renewed, now, testPolicy()); d.Action != Keep {
		t.Errorf("a renewed Secret is not kept: %+v", d)
	}

	// Once the previous CA has expired, the next CA renewal drops it.
	later := t0.Add(CALifetimeFactor*validity + day)
	again, err := Renew(renewed, Decision{Action: RenewAll}, later, testPolicy())
	if err != nil {
		t.Fatal(err)
	}
	if bundle, _ := parseCertificates(again[CACertKey]); len(bundle) != 2 || !bundle[1].Equal(newCA.cert) {
		t.Errorf("ca.crt after a second CA renewal holds %d certificates, want the newest CA and its predecessor", len(bundle))
	}
}

func TestRenewServingNeedsAUsableCA(t *testing.T) {
	_, err := Renew(without(fresh(t), CAKeyKey), Decision{Action: RenewServing}, t0, testPolicy())
	if err == nil || !strings.Contains(err.Error(), "no CA to sign with") {
		t.Errorf("Renew = %v, want an error naming the missing CA", err)
	}
}

// The issued pair must satisfy a TLS client that trusts only ca.crt, as the
// API server does with caBundle, for every SAN.
func TestIssuedCertificateServesTLSForEverySAN(t *testing.T) {
	data, err := Renew(nil, Decision{Action: RenewAll}, time.Now(), testPolicy())
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(data[CertKey], data[KeyKey])
	if err != nil {
		t.Fatal(err)
	}
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	server.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	server.StartTLS()
	defer server.Close()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data[CACertKey]) {
		t.Fatal("ca.crt is not PEM")
	}
	for _, serverName := range append([]string{""}, testSANs.DNSNames...) {
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: serverName}}}
		resp, err := client.Get(server.URL) // https://127.0.0.1:port
		if err != nil {
			t.Errorf("TLS with server name %q: %v", serverName, err)
			continue
		}
		_ = resp.Body.Close()
		client.CloseIdleConnections()
	}
}
