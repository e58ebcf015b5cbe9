package children

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRefreshAs(t *testing.T) {
	copyData := RefreshAs(func(existing, desired *corev1.ConfigMap) bool {
		if existing.Data["k"] == desired.Data["k"] {
			return false
		}
		existing.Data = desired.Data
		return true
	})
	existing := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"k": "old"}}
	desired := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"k": "new"}}
	if !copyData(existing, desired) || existing.Data["k"] != "new" {
		t.Errorf("the rule of the kind was not applied: changed data %v", existing.Data)
	}
	if copyData(existing, desired) {
		t.Error("an object already as desired is reported changed")
	}
	if copyData(&corev1.Secret{}, desired) || copyData(existing, &corev1.Secret{}) {
		t.Error("an object of another kind is refreshed")
	}
}
