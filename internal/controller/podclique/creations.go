package podclique

import (
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/copse-dev/copse/internal/podwrite"
)

// Back-off after the API server refused to create a pod: 1s, doubling, at
// most a minute. A refusal (a quota, a LimitRange, an admission webhook)
// does not go away by retrying, so the clique tries one pod per back-off
// until it passes. A change of a ResourceQuota or LimitRange in the
// namespace ends the back-off at once (see SetupWithManager).
const (
	refusalBackoffBase = time.Second
	refusalBackoffCap  = time.Minute
)

// creationHistory remembers, per PodClique, how its last pod creations went.
// It is only a retry timer and a slow-start hint: losing it (an operator
// restart) costs one extra attempt, never correctness.
type creationHistory struct {
	mu      sync.Mutex
	byKey   map[string]*creationRecord
	nowFunc func() time.Time
}

type creationRecord struct {
	namespace string
	// refusals in a row, and when the next attempt may be made.
	refusals    int
	pausedUntil time.Time
	// smooth: the last creations went through, so the next burst starts at
	// full width instead of slow-starting again.
	smooth bool
}

func newCreationHistory(now func() time.Time) *creationHistory {
	return &creationHistory{byKey: map[string]*creationRecord{}, nowFunc: now}
}

func (h *creationHistory) record(key, namespace string) *creationRecord {
	rec := h.byKey[key]
	if rec == nil {
		rec = &creationRecord{namespace: namespace}
		h.byKey[key] = rec
	}
	return rec
}

// pausedUntil is when the clique may try to create pods again after a
// refusal; zero when it may now.
func (h *creationHistory) pausedUntil(key string) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	if rec := h.byKey[key]; rec != nil && h.nowFunc().Before(rec.pausedUntil) {
		return rec.pausedUntil
	}
	return time.Time{}
}

// startWindow is the slow-start window the next creation burst starts with.
func (h *creationHistory) startWindow(key string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if rec := h.byKey[key]; rec != nil && rec.smooth {
		return podwrite.MaxInFlight
	}
	return 1
}

// refused records a refusal and returns when to try again.
func (h *creationHistory) refused(key, namespace string) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	rec := h.record(key, namespace)
	rec.refusals++
	rec.smooth = false
	rec.pausedUntil = h.nowFunc().Add(refusalBackoff(rec.refusals))
	return rec.pausedUntil
}

// failed records a failure that is not a refusal: the next burst starts
// slowly, without a pause.
func (h *creationHistory) failed(key, namespace string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.record(key, namespace).smooth = false
}

// succeeded records creations that all went through.
func (h *creationHistory) succeeded(key, namespace string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	rec := h.record(key, namespace)
	rec.refusals, rec.pausedUntil, rec.smooth = 0, time.Time{}, true
}

// forget drops a PodClique's record (it was deleted).
func (h *creationHistory) forget(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.byKey, key)
}

// resumeNamespace ends every back-off in a namespace, after the quota or
// limit that caused it changed, and returns the keys that were paused.
func (h *creationHistory) resumeNamespace(namespace string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for key, rec := range h.byKey {
		if rec.namespace == namespace && rec.refusals > 0 {
			rec.pausedUntil = time.Time{}
			out = append(out, key)
		}
	}
	return out
}

func refusalBackoff(refusals int) time.Duration {
	d := refusalBackoffBase
	for i := 1; i < refusals; i++ {
		d *= 2
		if d >= refusalBackoffCap {
			return refusalBackoffCap
		}
	}
	return d
}

// isRefusal reports whether the API server refused the request on its
// merits (quota, limits, validation, admission), rather than failing to
// handle it: retrying the same request at once would be refused again.
func isRefusal(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	code := int(status.Status().Code)
	switch code {
	case http.StatusNotFound, http.StatusConflict, http.StatusTooManyRequests:
		return false
	}
	return code >= 400 && code < 500
}

// refusalMessage is the API server's message of the first refusal in err,
// which may join several.
func refusalMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Message
	}
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i > 0 {
		msg = msg[:i]
	}
	return msg
}
