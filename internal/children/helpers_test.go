package children

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	owner types.UID = "owner"
	other types.UID = "other"
)

// cm is a ConfigMap named name controlled by controller ("" for none),
// holding value under key "v"; being deleted when deleting.
func cm(name string, controller types.UID, value string, deleting bool) *corev1.ConfigMap {
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Data: map[string]string{"v": value}}
	if controller != "" {
		yes := true
		obj.OwnerReferences = []metav1.OwnerReference{{Kind: "Owner", Name: "o", UID: controller, Controller: &yes}}
	}
	if deleting {
		now := metav1.Now()
		obj.DeletionTimestamp = &now
	}
	return obj
}

// desired is a ConfigMap as a builder makes it: no owner yet.
func desired(name, value string) *corev1.ConfigMap { return cm(name, "", value, false) }

// refreshValue brings an existing ConfigMap's value to the desired one's.
func refreshValue(existing, desired client.Object) bool {
	e, d := existing.(*corev1.ConfigMap), desired.(*corev1.ConfigMap)
	if e.Data["v"] == d.Data["v"] {
		return false
	}
	e.Data["v"] = d.Data["v"]
	return true
}

func objs(in ...client.Object) []client.Object { return in }
