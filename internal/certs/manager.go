package certs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copselabels "github.com/copse-dev/copse/internal/labels"
)

// The Secret is namespaced: the chart grants these verbs with a Role in the
// Secret's namespace (webhookServer.certificates.secretNamespace), never
// cluster-wide. list and watch are for the field-selected watch of that one
// Secret (see WatchObjects).
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update

// The webhook configurations are cluster-scoped; the operator patches only
// the two named webhookServer.certificates.webhookConfigurationName.
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations;validatingwebhookconfigurations,verbs=get;list;watch;patch;update

// DefaultCheckInterval is how often, at most, a replica re-checks the Secret,
// its files and the webhook configurations when nothing told it to sooner.
const DefaultCheckInterval = 10 * time.Minute

// Timing of the checks.
const (
	// jitterFactor spreads the periodic checks of the replicas apart.
	jitterFactor = 0.1
	// maxRetryDelay caps the exponential backoff after a failed check.
	maxRetryDelay = 5 * time.Minute
	// maxWriteAttempts bounds the re-reads after conflicting writes of the
	// Secret (another replica wrote it first).
	maxWriteAttempts = 5
)

// Options say where the certificate lives and what it must be.
type Options struct {
	// SecretNamespace and SecretName name the Secret holding the CA and the
	// serving certificate.
	SecretNamespace, SecretName string
	// WebhookConfigurationName names the MutatingWebhookConfiguration and the
	// ValidatingWebhookConfiguration that get the CA as caBundle.
	WebhookConfigurationName string
	// CertDir is the webhook server's certificate directory.
	CertDir string
	// Policy is what the serving certificate must satisfy.
	Policy Policy
	// CheckInterval is the time between periodic checks. Zero means
	// DefaultCheckInterval; it is shortened to a third of
	// Policy.RotateBefore if that is shorter, so that a certificate is
	// renewed well before it expires.
	CheckInterval time.Duration
}

// WatchFunc runs until ctx ends and calls notify whenever an object the
// Manager looks after may have changed.
type WatchFunc func(ctx context.Context, notify func())

// Manager provisions the webhook serving certificate in the Secret, copies
// it into CertDir and injects the CA into the webhook configurations. Call
// Bootstrap before the webhook server starts; then, as a manager Runnable
// (on every replica, not only the leader), it re-checks after every change
// Watch reports and at least every CheckInterval.
type Manager struct {
	// Client reads and writes directly to the API server: an uncached client,
	// so that every decision rests on the stored Secret.
	Client  client.Client
	Options Options
	Log     logr.Logger
	// Clock is the real clock when nil.
	Clock clock.WithTicker
	// Watch, when set, makes changes of the Secret and of the webhook
	// configurations trigger a check at once (see WatchObjects).
	Watch WatchFunc

	// retrySoon is set by Bootstrap when it left work undone, so that the
	// first periodic check comes early.
	retrySoon bool
}

// SyncResult is what one check found and did.
type SyncResult struct {
	// Secret is the Secret as stored after the check.
	Secret *corev1.Secret
	// FilesWritten is true if tls.crt or tls.key in CertDir was replaced.
	FilesWritten bool
	// MissingConfigurations names the webhook configurations that do not
	// exist (yet), e.g. "ValidatingWebhookConfiguration copse".
	MissingConfigurations []string
}

// NeedLeaderElection is false: every replica serves webhooks, so every
// replica keeps its certificate files current.
func (m *Manager) NeedLeaderElection() bool { return false }

// Bootstrap makes sure the Secret holds a valid certificate and CertDir holds
// its tls.crt and tls.key, retrying transient API errors for about half a
// minute; an error means the webhook server cannot start. It then tries to
// inject the CA into the webhook configurations: a failure there, or a
// configuration that does not exist yet, is logged and left to the periodic
// checks.
func (m *Manager) Bootstrap(ctx context.Context) error {
	log := m.logger()
	var secret *corev1.Secret
	var lastErr error
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Jitter: jitterFactor, Steps: 6, Cap: 30 * time.Second}
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		secret, lastErr = m.EnsureSecret(ctx)
		if lastErr == nil {
			_, lastErr = m.WriteFiles(secret.Data)
		}
		switch {
		case lastErr == nil:
			return true, nil
		case permanent(lastErr):
			return false, lastErr
		}
		log.Error(lastErr, "provisioning the webhook serving certificate failed; retrying")
		return false, nil
	})
	if err != nil {
		if lastErr != nil {
			// A permanent error, or the last of the retries.
			return lastErr
		}
		return err
	}
	recordExpiry(secret.Data)

	missing, err := m.InjectCABundle(ctx, secret.Data[CACertKey])
	switch {
	case err != nil:
		m.retrySoon = true
		log.Error(err, "injecting the CA into the webhook configurations failed; will retry")
	case len(missing) > 0:
		m.retrySoon = true
		log.Info("webhook configuration not found; the CA will be injected once it exists", "missing", missing)
	}
	return nil
}

// Start re-checks until ctx ends: after each change reported by Watch, every
// CheckInterval (jittered), and after a failure with exponential backoff. It
// never fails: errors are logged and retried.
func (m *Manager) Start(ctx context.Context) error {
	log := m.logger()
	trigger := make(chan struct{}, 1)
	if m.Watch != nil {
		go m.Watch(ctx, func() {
			select {
			case trigger <- struct{}{}:
			default:
			}
		})
	}
	clk := m.clock()
	failures := 0
	delay := wait.Jitter(m.checkInterval(), jitterFactor)
	if m.retrySoon {
		failures, delay = 1, retryDelay(1)
	}
	for {
		timer := clk.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C():
		case <-trigger:
			timer.Stop()
		}

		result, err := m.Sync(ctx)
		if ctx.Err() != nil {
			return nil
		}
		switch {
		case err != nil:
			failures++
			delay = retryDelay(failures)
			log.Error(err, "checking the webhook serving certificate failed", "retryIn", delay.Round(time.Second).String())
		case len(result.MissingConfigurations) > 0:
			failures++
			delay = retryDelay(failures)
			log.Info("webhook configuration not found; the CA will be injected once it exists",
				"missing", result.MissingConfigurations, "retryIn", delay.Round(time.Second).String())
		default:
			failures = 0
			delay = wait.Jitter(m.checkInterval(), jitterFactor)
		}
	}
}

// Sync is one check: the Secret, then the files, then the webhook
// configurations.
func (m *Manager) Sync(ctx context.Context) (SyncResult, error) {
	secret, err := m.EnsureSecret(ctx)
	if err != nil {
		return SyncResult{}, err
	}
	result := SyncResult{Secret: secret}
	if result.FilesWritten, err = m.WriteFiles(secret.Data); err != nil {
		return result, err
	}
	recordExpiry(secret.Data)
	result.MissingConfigurations, err = m.InjectCABundle(ctx, secret.Data[CACertKey])
	return result, err
}

// EnsureSecret returns the Secret once it holds a certificate Decide keeps:
// it creates the Secret if there is none, and renews what Decide says with
// an update that carries the resourceVersion it read. When another replica
// wins a race (AlreadyExists, Conflict) it reads the Secret again and
// decides again, so that a certificate another replica just wrote is used,
// not replaced.
func (m *Manager) EnsureSecret(ctx context.Context) (*corev1.Secret, error) {
	log := m.logger()
	key := client.ObjectKey{Namespace: m.Options.SecretNamespace, Name: m.Options.SecretName}
	for attempt := 1; attempt <= maxWriteAttempts; attempt++ {
		now := m.clock().Now()
		secret := &corev1.Secret{}
		err := m.Client.Get(ctx, key, secret)
		if apierrors.IsNotFound(err) {
			data, err := Renew(nil, Decision{Action: RenewAll}, now, m.Options.Policy)
			if err != nil {
				return nil, err
			}
			secret = &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{
					Namespace: key.Namespace,
					Name:      key.Name,
					Labels:    map[string]string{copselabels.ManagedByKey: copselabels.ManagedByValue},
				},
				Type: corev1.SecretTypeTLS,
				Data: data,
			}
			err = m.Client.Create(ctx, secret)
			if apierrors.IsAlreadyExists(err) {
				log.V(1).Info("another replica created the webhook certificate Secret first; reading it")
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("creating Secret %s: %w", key, err)
			}
			log.Info("created the webhook serving certificate and its CA", certificateLogValues(data)...)
			return secret, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading Secret %s: %w", key, err)
		}

		decision := Decide(secret.Data, now, m.Options.Policy)
		if decision.Action == Keep {
			return secret, nil
		}
		data, err := Renew(secret.Data, decision, now, m.Options.Policy)
		if err != nil {
			return nil, err
		}
		secret.Data = data
		if secret.Labels == nil {
			secret.Labels = map[string]string{}
		}
		secret.Labels[copselabels.ManagedByKey] = copselabels.ManagedByValue
		err = m.Client.Update(ctx, secret)
		if apierrors.IsConflict(err) {
			log.V(1).Info("the webhook certificate Secret changed while renewing it; reading it again")
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("updating Secret %s: %w", key, err)
		}
		log.Info("renewed the webhook serving certificate",
			append([]any{"renewedCA", decision.Action == RenewAll, "reason", decision.Reason}, certificateLogValues(data)...)...)
		return secret, nil
	}
	return nil, fmt.Errorf("Secret %s: gave up after %d attempts that conflicted with other writers", key, maxWriteAttempts)
}

// Layout of CertDir, as the kubelet lays out a Secret volume: tls.crt and
// tls.key are symlinks into dataLink, a symlink to the current generation
// directory. Swapping dataLink replaces both files in one atomic rename, so
// the webhook server never reads a certificate with the other one's key.
const (
	dataLink         = "..data"
	generationPrefix = "..certs-"
)

// WriteFiles makes CertDir's tls.crt and tls.key hold data's, unless they
// already do, and reports whether it replaced them. Both are replaced at
// once: they are written into a new generation directory, which then
// replaces the previous one with an atomic rename of a symlink.
//
// controller-runtime's webhook server (certwatcher) reloads the pair when it
// sees the files change (the previous generation's files are removed) and on
// its own 10-second poll.
func (m *Manager) WriteFiles(data map[string][]byte) (bool, error) {
	dir := m.Options.CertDir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, fmt.Errorf("creating the webhook certificate directory: %w", err)
	}
	current := true
	for _, name := range []string{CertKey, KeyKey} {
		content, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, fmt.Errorf("reading %s: %w", filepath.Join(dir, name), err)
		}
		current = current && err == nil && bytes.Equal(content, data[name])
	}
	if current {
		return false, nil
	}

	generation, err := os.MkdirTemp(dir, generationPrefix)
	if err != nil {
		return false, fmt.Errorf("writing the webhook serving certificate: %w", err)
	}
	for _, name := range []string{CertKey, KeyKey} {
		if err := writeFileSynced(filepath.Join(generation, name), data[name]); err != nil {
			_ = os.RemoveAll(generation)
			return false, err
		}
	}
	if err := replaceSymlink(filepath.Join(dir, dataLink), filepath.Base(generation)); err != nil {
		_ = os.RemoveAll(generation)
		return false, err
	}
	for _, name := range []string{CertKey, KeyKey} {
		path, target := filepath.Join(dir, name), filepath.Join(dataLink, name)
		if existing, err := os.Readlink(path); err == nil && existing == target {
			continue
		}
		// The first write, or files someone else wrote: from now on they
		// follow dataLink.
		if err := replaceSymlink(path, target); err != nil {
			return true, err
		}
	}
	// The previous generation, and any a crash left behind.
	entries, err := os.ReadDir(dir)
	if err != nil {
		return true, fmt.Errorf("reading %s: %w", dir, err)
	}
	for _, entry := range entries {
		if strings.HasPrefix(entry.Name(), generationPrefix) && entry.Name() != filepath.Base(generation) {
			if err := os.RemoveAll(filepath.Join(dir, entry.Name())); err != nil {
				return true, fmt.Errorf("removing the previous webhook serving certificate: %w", err)
			}
		}
	}
	m.logger().Info("wrote the webhook serving certificate", "certDir", dir)
	return true, nil
}

// writeFileSynced writes a new file and flushes it to disk.
func writeFileSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// replaceSymlink atomically makes path a symlink to target, replacing
// whatever path was.
func replaceSymlink(path, target string) error {
	tmp := path + ".tmp"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("replacing %s: %w", path, err)
	}
	if err := os.Symlink(target, tmp); err != nil {
		return fmt.Errorf("replacing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("replacing %s: %w", path, err)
	}
	return nil
}

// webhookConfigurationKind is one of the two configurations the CA goes into.
type webhookConfigurationKind struct {
	name string
	new  func() client.Object
	// caBundles returns a pointer to the caBundle of each webhook of obj.
	caBundles func(obj client.Object) []*[]byte
}

var webhookConfigurationKinds = []webhookConfigurationKind{
	{
		name: "MutatingWebhookConfiguration",
		new:  func() client.Object { return &admissionregistrationv1.MutatingWebhookConfiguration{} },
		caBundles: func(obj client.Object) []*[]byte {
			webhooks := obj.(*admissionregistrationv1.MutatingWebhookConfiguration).Webhooks
			bundles := make([]*[]byte, len(webhooks))
			for i := range webhooks {
				bundles[i] = &webhooks[i].ClientConfig.CABundle
			}
			return bundles
		},
	},
	{
		name: "ValidatingWebhookConfiguration",
		new:  func() client.Object { return &admissionregistrationv1.ValidatingWebhookConfiguration{} },
		caBundles: func(obj client.Object) []*[]byte {
			webhooks := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration).Webhooks
			bundles := make([]*[]byte, len(webhooks))
			for i := range webhooks {
				bundles[i] = &webhooks[i].ClientConfig.CABundle
			}
			return bundles
		},
	},
}

// InjectCABundle sets caBundle on every webhook of the mutating and the
// validating configuration named WebhookConfigurationName, with a patch
// only when some webhook's differs. The patch carries the resourceVersion
// it was computed from (a conflict is retried), so that it cannot undo a
// concurrent change such as a Helm upgrade. Configurations that do not exist
// are returned, not reported as errors.
func (m *Manager) InjectCABundle(ctx context.Context, caBundle []byte) (missing []string, err error) {
	if len(caBundle) == 0 {
		return nil, errors.New("the Secret has no CA bundle to inject")
	}
	var errs []error
	for _, kind := range webhookConfigurationKinds {
		found, err := m.injectInto(ctx, kind, caBundle)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !found {
			missing = append(missing, kind.name+" "+m.Options.WebhookConfigurationName)
		}
	}
	return missing, errors.Join(errs...)
}

func (m *Manager) injectInto(ctx context.Context, kind webhookConfigurationKind, caBundle []byte) (found bool, err error) {
	key := client.ObjectKey{Name: m.Options.WebhookConfigurationName}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj := kind.new()
		if err := m.Client.Get(ctx, key, obj); err != nil {
			if apierrors.IsNotFound(err) {
				found = false
				return nil
			}
			return err
		}
		found = true
		original := obj.DeepCopyObject().(client.Object)
		var changed []string
		for i, bundle := range kind.caBundles(obj) {
			if !bytes.Equal(*bundle, caBundle) {
				*bundle = bytes.Clone(caBundle)
				changed = append(changed, fmt.Sprint(i))
			}
		}
		if len(changed) == 0 {
			return nil
		}
		if err := m.Client.Patch(ctx, obj, client.StrategicMergeFrom(original, client.MergeFromWithOptimisticLock{})); err != nil {
			return err
		}
		m.logger().Info("injected the CA into the webhook configuration", "kind", kind.name, "name", key.Name,
			"webhooks", len(changed))
		return nil
	})
	if err != nil {
		return found, fmt.Errorf("injecting the CA into %s %s: %w", kind.name, key.Name, err)
	}
	return found, nil
}

func (m *Manager) checkInterval() time.Duration {
	interval := m.Options.CheckInterval
	if interval <= 0 {
		interval = DefaultCheckInterval
	}
	if third := m.Options.Policy.RotateBefore / 3; third > 0 && third < interval {
		interval = third
	}
	return interval
}

func (m *Manager) clock() clock.WithTicker {
	if m.Clock == nil {
		return clock.RealClock{}
	}
	return m.Clock
}

func (m *Manager) logger() logr.Logger {
	return m.Log.WithValues("secret", m.Options.SecretNamespace+"/"+m.Options.SecretName)
}

// retryDelay is the wait after the given number of consecutive failed
// checks: 1s, 2s, 4s, ... up to maxRetryDelay, jittered.
func retryDelay(failures int) time.Duration {
	delay := time.Second
	for i := 1; i < failures && delay < maxRetryDelay; i++ {
		delay *= 2
	}
	return wait.Jitter(min(delay, maxRetryDelay), jitterFactor)
}

// permanent reports errors that retrying at start-up will not cure: missing
// permissions, a Secret the API server refuses, an unwritable directory.
func permanent(err error) bool {
	var pathErr *fs.PathError
	var linkErr *os.LinkError
	return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) || apierrors.IsInvalid(err) ||
		apierrors.IsBadRequest(err) || errors.As(err, &pathErr) || errors.As(err, &linkErr)
}

func certificateLogValues(data map[string][]byte) []any {
	s := Summarize(data)
	return []any{
		"serial", s.ServingSerial,
		"notAfter", timestamp(s.ServingNotAfter),
		"caNotAfter", timestamp(s.CANotAfter),
	}
}
