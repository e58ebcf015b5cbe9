package kueue

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// copse holds each Workload it creates with Kueue's own finalizer,
// kueue.x-k8s.io/resource-in-use, as Kueue's job integrations do: a Workload
// being deleted keeps its quota, and the admission the PodCliqueSet's
// templates are restored from, until the PodCliqueSet is stopped, its pods
// are gone and its templates restored. Decide releases it then, when the
// Workload is finished, and when the PodCliqueSet is being deleted or gone.
// A Workload created before copse set the finalizer is handled without it.

// holdsFinalizer: wl carries Kueue's finalizer.
func holdsFinalizer(wl *kueue.Workload) bool {
	return slices.Contains(wl.Finalizers, kueue.ResourceInUseFinalizerName)
}

// withoutFinalizer is wl without Kueue's finalizer, to update with the
// resourceVersion it was read at.
func withoutFinalizer(wl *kueue.Workload) *kueue.Workload {
	out := wl.DeepCopy()
	out.Finalizers = slices.DeleteFunc(out.Finalizers, func(f string) bool { return f == kueue.ResourceInUseFinalizerName })
	return out
}

// Orphaned reports whether wl is controlled by a PodCliqueSet named pcsName
// that is gone: pcs, the PodCliqueSet of that name as read (nil when there
// is none), is not the one wl names (another UID: a PodCliqueSet created
// again under the same name).
func Orphaned(wl *kueue.Workload, pcsName string, pcs *copsev1alpha1.PodCliqueSet) bool {
	ref := metav1.GetControllerOf(wl)
	if ref == nil || ref.Kind != "PodCliqueSet" || ref.Name != pcsName {
		return false
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != copsev1alpha1.SchemeGroupVersion.Group {
		return false
	}
	return pcs == nil || pcs.UID != ref.UID
}
