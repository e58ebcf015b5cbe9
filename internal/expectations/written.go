package expectations

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// WrittenVersions remembers, per object, the resourceVersion of the last
// status this controller wrote, so that a reconcile can tell a cache that has
// not caught up with its own write and wait for it rather than compute from
// stale data and lose the optimistic-lock race. It is an optimization only:
// the optimistic lock on every status write keeps stale decisions out
// either way, and forgetting (an operator restart) costs at most a conflict.
type WrittenVersions struct {
	m sync.Map // key -> written
}

type written struct {
	uid             types.UID
	resourceVersion string
}

// Wrote records the object as a successful status write returned it.
func (w *WrittenVersions) Wrote(key string, obj metav1.Object) {
	w.m.Store(key, written{uid: obj.GetUID(), resourceVersion: obj.GetResourceVersion()})
}

// Behind reports whether cached, the object as the cache shows it, is older
// than the last version written. An object of another UID (deleted and
// created again under the same name) and versions that cannot be compared
// are not behind.
func (w *WrittenVersions) Behind(key string, cached metav1.Object) bool {
	v, ok := w.m.Load(key)
	if !ok {
		return false
	}
	last := v.(written)
	if last.uid != cached.GetUID() {
		return false
	}
	cmp, err := resourceversion.CompareResourceVersion(cached.GetResourceVersion(), last.resourceVersion)
	return err == nil && cmp < 0
}

// Forget drops the record of a deleted object.
func (w *WrittenVersions) Forget(key string) {
	w.m.Delete(key)
}
