package expectations

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestWrittenVersions(t *testing.T) {
	object := func(uid, resourceVersion string) metav1.Object {
		return &metav1.ObjectMeta{UID: types.UID(uid), ResourceVersion: resourceVersion}
	}
	var w WrittenVersions
	if w.Behind("ns/a", object("u1", "5")) {
		t.Error("nothing written: never behind")
	}
	w.Wrote("ns/a", object("u1", "10"))
	cases := []struct {
		uid, cached string
		want        bool
	}{
		{"u1", "9", true},
		{"u1", "10", false},
		{"u1", "11", false},
		{"u1", "not-a-number", false},
		{"u2", "9", false}, // recreated under the same name
	}
	for _, c := range cases {
		if got := w.Behind("ns/a", object(c.uid, c.cached)); got != c.want {
			t.Errorf("Behind(uid %s, %q) = %v, want %v", c.uid, c.cached, got, c.want)
		}
	}
	w.Forget("ns/a")
	if w.Behind("ns/a", object("u1", "9")) {
		t.Error("forgotten: never behind")
	}
}
