package expectations

import (
	"sync"

	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// WrittenVersions remembers, per object, the resourceVersion of the last
// status this controller wrote, so that a reconcile can tell a cache that has
// not caught up with its own write and wait for it rather than compute from
// stale data and lose the optimistic-lock race. It is an optimization only:
// the optimistic lock on every status write keeps stale decisions out
// either way, and forgetting (an operator restart) costs at most a conflict.
type WrittenVersions struct {
	m sync.Map
}

// Wrote records the resourceVersion a successful status write returned.
func (w *WrittenVersions) Wrote(key, resourceVersion string) {
	w.m.Store(key, resourceVersion)
}

// Behind reports whether cached, the resourceVersion the cache shows, is
// older than the last one written. Versions that cannot be compared are not
// behind.
func (w *WrittenVersions) Behind(key, cached string) bool {
	written, ok := w.m.Load(key)
	if !ok {
		return false
	}
	cmp, err := resourceversion.CompareResourceVersion(cached, written.(string))
	return err == nil && cmp < 0
}

// Forget drops the record of a deleted object.
func (w *WrittenVersions) Forget(key string) {
	w.m.Delete(key)
}
