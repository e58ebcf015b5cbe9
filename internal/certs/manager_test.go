package certs

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

const (
	testNamespace = "copse-system"
	testSecret    = "copse-webhook-serving-cert"
	testConfig    = "copse"
)

var secretKey = client.ObjectKey{Namespace: testNamespace, Name: testSecret}

// calls counts the writes a test's fake API server received.
type calls struct{ creates, updates, patches atomic.Int32 }

type fixture struct {
	m     *Manager
	c     client.Client
	clock *clocktesting.FakeClock
	calls *calls
}

// newFixture returns a Manager on a fake API server holding objs. funcs, when
// given, intercept its calls; the writes are counted either way.
func newFixture(t *testing.T, funcs interceptor.Funcs, objs ...client.Object) *fixture {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	counts := &calls{}
	counting := funcs
	counting.Create = func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		counts.creates.Add(1)
		if funcs.Create != nil {
			return funcs.Create(ctx, c, obj, opts...)
		}
		return c.Create(ctx, obj, opts...)
	}
	counting.Update = func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
		counts.updates.Add(1)
		if funcs.Update != nil {
			return funcs.Update(ctx, c, obj, opts...)
		}
		return c.Update(ctx, obj, opts...)
	}
	counting.Patch = func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
		counts.patches.Add(1)
		if funcs.Patch != nil {
			return funcs.Patch(ctx, c, obj, patch, opts...)
		}
		return c.Patch(ctx, obj, patch, opts...)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithInterceptorFuncs(counting).Build()
	clock := clocktesting.NewFakeClock(t0)
	return &fixture{
		m: &Manager{
			Client: c,
			Options: Options{
				SecretNamespace:          testNamespace,
				SecretName:               testSecret,
				WebhookConfigurationName: testConfig,
				CertDir:                  filepath.Join(t.TempDir(), "certs"),
				Policy:                   testPolicy(),
			},
			Log:   testr.New(t),
			Clock: clock,
		},
		c:     c,
		clock: clock,
		calls: counts,
	}
}

func (f *fixture) secret(t *testing.T) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	if err := f.c.Get(context.Background(), secretKey, s); err != nil {
		t.Fatal(err)
	}
	return s
}

func storedSecret(data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: testSecret},
		Type:       corev1.SecretTypeTLS,
		Data:       data,
	}
}

// webhookConfigurations returns the two configurations, each with one webhook
// per given caBundle.
func webhookConfigurations(bundles ...[]byte) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: testConfig}}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: testConfig}}
	for i, bundle := range bundles {
		name := string(rune('a'+i)) + ".copse.dev"
		cc := admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:9443/" + name), CABundle: bundle}
		mutating.Webhooks = append(mutating.Webhooks, admissionregistrationv1.MutatingWebhook{
			Name: name, ClientConfig: cc, SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		})
		validating.Webhooks = append(validating.Webhooks, admissionregistrationv1.ValidatingWebhook{
			Name: name, ClientConfig: cc, SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		})
	}
	return mutating, validating
}

// caBundles returns the caBundle of every webhook of both configurations.
func (f *fixture) caBundles(t *testing.T) [][]byte {
	t.Helper()
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := f.c.Get(context.Background(), client.ObjectKey{Name: testConfig}, mutating); err != nil {
		t.Fatal(err)
	}
	if err := f.c.Get(context.Background(), client.ObjectKey{Name: testConfig}, validating); err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, w := range mutating.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	for _, w := range validating.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	return out
}

func TestEnsureSecretCreatesItOnceAndNeverRewritesIt(t *testing.T) {
	f := newFixture(t, interceptor.Funcs{})
	ctx := context.Background()
	created, err := f.m.EnsureSecret(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stored := f.secret(t)
	if stored.Type != corev1.SecretTypeTLS || stored.Labels["app.kubernetes.io/managed-by"] != "copse-operator" {
		t.Errorf("Secret type %q, labels %v", stored.Type, stored.Labels)
	}
	for _, key := range []string{CertKey, KeyKey, CACertKey, CAKeyKey} {
		if len(stored.Data[key]) == 0 {
			t.Errorf("Secret has no %s", key)
		}
	}
	if !bytes.Equal(created.Data[CertKey], stored.Data[CertKey]) {
		t.Error("EnsureSecret returned another certificate than it stored")
	}

	// Later, but before the rotation window: nothing is written.
	f.clock.Step(validity - rotate - time.Hour)
	again, err := f.m.EnsureSecret(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again.ResourceVersion != stored.ResourceVersion || f.calls.creates.Load() != 1 || f.calls.updates.Load() != 0 {
		t.Errorf("a valid Secret was written again: resourceVersion %s -> %s, %d creates, %d updates",
			stored.ResourceVersion, again.ResourceVersion, f.calls.creates.Load(), f.calls.updates.Load())
	}
}

func TestEnsureSecretRenewsTheServingCertificateWhenDue(t *testing.T) {
	f := newFixture(t, interceptor.Funcs{}, storedSecret(fresh(t)))
	before := f.secret(t)
	f.clock.Step(validity - rotate + time.Hour)

	renewed, err := f.m.EnsureSecret(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if f.calls.updates.Load() != 1 {
		t.Fatalf("%d updates, want 1", f.calls.updates.Load())
	}
	if !bytes.Equal(renewed.Data[CACertKey], before.Data[CACertKey]) || !bytes.Equal(renewed.Data[CAKeyKey], before.Data[CAKeyKey]) {
		t.Error("the CA changed although it is valid for years")
	}
	if Summarize(renewed.Data).ServingSerial == Summarize(before.Data).ServingSerial {
		t.Error("the serving certificate was not replaced")
	}
	if renewed.Labels["app.kubernetes.io/managed-by"] != "copse-operator" {
		t.Errorf("labels %v", renewed.Labels)
	}
}

func TestEnsureSecretRepairsAnInvalidSecret(t *testing.T) {
	broken := storedSecret(map[string][]byte{CertKey: []byte("not a certificate"), KeyKey: []byte("nor a key")})
	f := newFixture(t, interceptor.Funcs{}, broken)
	repaired, err := f.m.EnsureSecret(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d := Decide(repaired.Data, t0, testPolicy()); d.Action != Keep {
		t.Errorf("repaired Secret: %+v", d)
	}
}

// Two replicas start at once: the one that loses the create uses the winner's
// certificate.
func TestEnsureSecretUsesTheSecretAnotherReplicaCreated(t *testing.T) {
	winner := fresh(t)
	f := newFixture(t, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := c.Create(ctx, storedSecret(winner)); err != nil {
				return err
			}
			return apierrors.NewAlreadyExists(schema.GroupResource{Resource: "secrets"}, obj.GetName())
		},
	})
	got, err := f.m.EnsureSecret(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Data[CertKey], winner[CertKey]) || f.calls.updates.Load() != 0 {
		t.Errorf("the winner's certificate was not used as it is (%d updates)", f.calls.updates.Load())
	}
}

// Two replicas renew at once: the one whose update conflicts reads the
// other's renewal and keeps it.
func TestEnsureSecretRereadsAfterAConflict(t *testing.T) {
	f := newFixture(t, interceptor.Funcs{}, storedSecret(fresh(t)))
	now := t0.Add(validity - rotate + time.Hour)
	f.clock.SetTime(now)
	otherRenewal, err := Renew(f.secret(t).Data, Decision{Action: RenewServing}, now, testPolicy())
	if err != nil {
		t.Fatal(err)
	}
	var conflicts atomic.Int32
	f.m.Client = interceptor.NewClient(f.c.(client.WithWatch), interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if conflicts.Add(1) > 1 {
				t.Error("the Secret was updated again after the other replica's renewal")
				return c.Update(ctx, obj, opts...)
			}
			other := storedSecret(otherRenewal)
			other.ResourceVersion = obj.GetResourceVersion()
			if err := c.Update(ctx, other); err != nil {
				return err
			}
			return apierrors.NewConflict(schema.GroupResource{Resource: "secrets"}, obj.GetName(), errors.New("modified"))
		},
	})
	got, err := f.m.EnsureSecret(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Data[CertKey], otherRenewal[CertKey]) {
		t.Error("the other replica's renewal was not used")
	}
}

func TestInjectCABundlePatchesOnlyWhatDiffers(t *testing.T) {
	data := fresh(t)
	caPEM := data[CACertKey]
	mutating, validating := webhookConfigurations(nil, caPEM, []byte("stale"))
	f := newFixture(t, interceptor.Funcs{}, mutating, validating)
	ctx := context.Background()

	missing, err := f.m.InjectCABundle(ctx, caPEM)
	if err != nil || len(missing) != 0 {
		t.Fatalf("InjectCABundle = %v, %v", missing, err)
	}
	for i, bundle := range f.caBundles(t) {
		if !bytes.Equal(bundle, caPEM) {
			t.Errorf("webhook %d has caBundle %q", i, bundle)
		}
	}
	if f.calls.patches.Load() != 2 {
		t.Errorf("%d patches, want one per configuration", f.calls.patches.Load())
	}
	stored := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	_ = f.c.Get(ctx, client.ObjectKey{Name: testConfig}, stored)
	if len(stored.Webhooks) != 3 || stored.Webhooks[2].Name != "c.copse.dev" || *stored.Webhooks[2].ClientConfig.URL != "https://127.0.0.1:9443/c.copse.dev" {
		t.Errorf("the patch changed more than caBundle: %+v", stored.Webhooks)
	}

	if _, err := f.m.InjectCABundle(ctx, caPEM); err != nil {
		t.Fatal(err)
	}
	if f.calls.patches.Load() != 2 {
		t.Errorf("patched again although every caBundle was current")
	}
}

func TestInjectCABundleReportsMissingConfigurations(t *testing.T) {
	mutating, _ := webhookConfigurations(nil)
	f := newFixture(t, interceptor.Funcs{}, mutating)
	missing, err := f.m.InjectCABundle(context.Background(), fresh(t)[CACertKey])
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) != 1 || missing[0] != "ValidatingWebhookConfiguration copse" {
		t.Errorf("missing = %q", missing)
	}
}

func TestWriteFilesReplacesBothFilesAtOnceAndOnlyWhenChanged(t *testing.T) {
	f := newFixture(t, interceptor.Funcs{})
	data := fresh(t)
	dir := f.m.Options.CertDir
	// Files someone else left there are taken over.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{CertKey, KeyKey} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("stale"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	expectFiles := func(want map[string][]byte) {
		t.Helper()
		for _, name := range []string{CertKey, KeyKey} {
			content, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil || !bytes.Equal(content, want[name]) {
				t.Errorf("%s does not hold the expected content (%v)", name, err)
			}
			if target, err := os.Readlink(filepath.Join(dir, name)); err != nil || target != filepath.Join("..data", name) {
				t.Errorf("%s is not a symlink into ..data: %q, %v", name, target, err)
			}
		}
		entries, _ := os.ReadDir(dir)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if len(entries) != 4 {
			t.Errorf("certificate directory holds %q, want tls.crt, tls.key, ..data and one generation", names)
		}
	}

	written, err := f.m.WriteFiles(data)
	if err != nil || !written {
		t.Fatalf("WriteFiles = %v, %v", written, err)
	}
	expectFiles(data)
	generation, _ := os.Readlink(filepath.Join(dir, "..data"))
	if info, err := os.Stat(filepath.Join(dir, CertKey)); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("tls.crt: %v, %v", info, err)
	}

	if written, err := f.m.WriteFiles(data); err != nil || written {
		t.Errorf("unchanged content: WriteFiles = %v, %v", written, err)
	}
	if again, _ := os.Readlink(filepath.Join(dir, "..data")); again != generation {
		t.Error("unchanged files were replaced")
	}

	renewed, err := Renew(data, Decision{Action: RenewServing}, t0, testPolicy())
	if err != nil {
		t.Fatal(err)
	}
	if written, err := f.m.WriteFiles(renewed); err != nil || !written {
		t.Fatalf("changed content: WriteFiles = %v, %v", written, err)
	}
	expectFiles(renewed)
	if _, err := os.Stat(filepath.Join(dir, generation)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the previous generation %s was not removed: %v", generation, err)
	}
}

func TestBootstrapFailsAtOnceWithoutPermission(t *testing.T) {
	f := newFixture(t, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, key.Name, errors.New("RBAC"))
		},
	})
	start := time.Now()
	err := f.m.Bootstrap(context.Background())
	if err == nil || !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "reading Secret copse-system/copse-webhook-serving-cert") {
		t.Fatalf("Bootstrap = %v, want the forbidden read reported", err)
	}
	if time.Since(start) > 500*time.Millisecond {
		t.Errorf("a permission error was retried")
	}
}

func TestBootstrapWritesFilesEvenWithoutWebhookConfigurations(t *testing.T) {
	f := newFixture(t, interceptor.Funcs{})
	if err := f.m.Bootstrap(context.Background()); err != nil {
		t.Fatal(err)
	}
	stored := f.secret(t)
	for _, name := range []string{CertKey, KeyKey} {
		if content, _ := os.ReadFile(filepath.Join(f.m.Options.CertDir, name)); !bytes.Equal(content, stored.Data[name]) {
			t.Errorf("%s is not the Secret's", name)
		}
	}
	if !f.m.retrySoon {
		t.Error("missing webhook configurations did not ask for an early retry")
	}
}

// The Runnable re-injects a caBundle someone reset as soon as the watch
// reports it, rewrites the files when another replica rotated the Secret,
// and renews the certificate on its periodic check once it is due.
func TestStartReactsToChangesAndRenewsOnSchedule(t *testing.T) {
	mutating, validating := webhookConfigurations(nil, nil)
	f := newFixture(t, interceptor.Funcs{}, mutating, validating)
	f.m.Options.CheckInterval = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	if err := f.m.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	notifications := make(chan func(), 1)
	f.m.Watch = func(ctx context.Context, notify func()) { notifications <- notify; <-ctx.Done() }
	stopped := make(chan error)
	go func() { stopped <- f.m.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("Start = %v", err)
		}
	}()
	notify := <-notifications
	caPEM := f.secret(t).Data[CACertKey]

	eventually := func(what string, condition func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !condition(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting: %s", what)
			}
		}
	}

	// A Helm upgrade resets a caBundle.
	reset := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	_ = f.c.Get(ctx, client.ObjectKey{Name: testConfig}, reset)
	reset.Webhooks[1].ClientConfig.CABundle = nil
	if err := f.c.Update(ctx, reset); err != nil {
		t.Fatal(err)
	}
	notify()
	eventually("the reset caBundle is injected again", func() bool {
		for _, bundle := range f.caBundles(t) {
			if !bytes.Equal(bundle, caPEM) {
				return false
			}
		}
		return true
	})

	// Another replica rotates the Secret.
	rotated := f.secret(t)
	rotated.Data, _ = Renew(rotated.Data, Decision{Action: RenewServing}, t0, testPolicy())
	if err := f.c.Update(ctx, rotated); err != nil {
		t.Fatal(err)
	}
	notify()
	eventually("the other replica's certificate is written", func() bool {
		content, _ := os.ReadFile(filepath.Join(f.m.Options.CertDir, CertKey))
		return bytes.Equal(content, rotated.Data[CertKey])
	})

	// Time passes into the rotation window; the periodic check renews.
	eventually("the periodic timer is set", f.clock.HasWaiters)
	f.clock.Step(validity - rotate + time.Hour)
	eventually("the certificate is renewed", func() bool {
		return Summarize(f.secret(t).Data).ServingNotAfter.After(t0.Add(validity))
	})
	eventually("the renewed certificate is written", func() bool {
		content, _ := os.ReadFile(filepath.Join(f.m.Options.CertDir, CertKey))
		return bytes.Equal(content, f.secret(t).Data[CertKey])
	})
}

func TestCheckInterval(t *testing.T) {
	for _, tc := range []struct {
		configured, rotateBefore, want time.Duration
	}{
		{0, 720 * time.Hour, DefaultCheckInterval},
		{time.Minute, 720 * time.Hour, time.Minute},
		{0, 15 * time.Minute, 5 * time.Minute},
	} {
		m := &Manager{Options: Options{CheckInterval: tc.configured, Policy: Policy{RotateBefore: tc.rotateBefore}}}
		if got := m.checkInterval(); got != tc.want {
			t.Errorf("checkInterval(%s, rotateBefore %s) = %s, want %s", tc.configured, tc.rotateBefore, got, tc.want)
		}
	}
	if d := retryDelay(1); d < time.Second || d > 1100*time.Millisecond {
		t.Errorf("first retry after %s", d)
	}
	if d := retryDelay(30); d < maxRetryDelay || d > maxRetryDelay*11/10 {
		t.Errorf("retry after many failures after %s, want about %s", d, maxRetryDelay)
	}
}
