package podclique

import (
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/copse-dev/copse/internal/children"
)

// creationHistory is this process's memory of pod creations: how each
// clique's last burst went (a slow-start hint) and when each namespace's
// quota or limits last loosened (which ends the refusal back-offs there at
// once). Losing it (an operator restart) costs a slow start and at most one
// back-off period, never correctness: the back-off itself is derived from
// the PodClique's status (refusalRecord).
type creationHistory struct {
	mu sync.Mutex
	// smooth: the clique's last creations went through, so the next burst
	// starts at full width instead of slow-starting again.
	smooth map[string]bool
	// loosened is when a ResourceQuota or LimitRange of the namespace last
	// changed in a way that may let refused pods in.
	loosened map[string]time.Time
}

func newCreationHistory() *creationHistory {
	return &creationHistory{smooth: map[string]bool{}, loosened: map[string]time.Time{}}
}

// startWindow is the slow-start window the next creation burst starts with.
func (h *creationHistory) startWindow(key string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.smooth[key] {
		return children.MaxInFlight
	}
	return 1
}

// burst records how a creation burst went: smooth when every creation went
// through.
func (h *creationHistory) burst(key string, smooth bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if smooth {
		h.smooth[key] = true
	} else {
		delete(h.smooth, key)
	}
}

// forget drops a PodClique's record (it was deleted).
func (h *creationHistory) forget(key string) {
	h.burst(key, false)
}

// loosen records that the quota or limits of a namespace changed at.
func (h *creationHistory) loosen(namespace string, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if at.After(h.loosened[namespace]) {
		h.loosened[namespace] = at
	}
}

// loosenedAfter reports whether the quota or limits of the namespace
// changed after t.
func (h *creationHistory) loosenedAfter(namespace string, t time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.loosened[namespace].After(t)
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
