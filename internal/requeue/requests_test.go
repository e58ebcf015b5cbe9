package requeue

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestRequestsForListNamesEveryObjectListed(t *testing.T) {
	pod := func(namespace, name, app string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{"app": app}}}
	}
	c := fake.NewClientBuilder().WithObjects(pod("a", "one", "x"), pod("a", "two", "x"), pod("a", "other", "y"), pod("b", "three", "x")).Build()
	got := RequestsForList(context.Background(), c, &corev1.PodList{}, pod("a", "cause", "x"), client.InNamespace("a"), client.MatchingLabels{"app": "x"})
	want := map[reconcile.Request]bool{
		{NamespacedName: client.ObjectKey{Namespace: "a", Name: "one"}}: true,
		{NamespacedName: client.ObjectKey{Namespace: "a", Name: "two"}}: true,
	}
	if len(got) != len(want) {
		t.Fatalf("RequestsForList = %v, want the requests of %v", got, want)
	}
	for _, r := range got {
		if !want[r] {
			t.Errorf("RequestsForList returned %v, which the list options exclude", r)
		}
	}
}
