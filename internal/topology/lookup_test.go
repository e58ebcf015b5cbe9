package topology

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// TestLookupConfirmsAMissingBindingWithTheAPIServer covers a binding created
// just before the PodCliqueSet: the webhook admitted the PodCliqueSet
// against it, but a controller's cache has not seen it yet. Resolving
// without it would leave the packing off the gang's PodGroup for good (its
// constraint is immutable), so a cache miss is read again from the API
// server.
func TestLookupConfirmsAMissingBindingWithTheAPIServer(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := copsev1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	empty := fake.NewClientBuilder().WithScheme(scheme).Build()
	withBinding := fake.NewClientBuilder().WithScheme(scheme).WithObjects(binding()).Build()
	packed := pcs(func(p *copsev1alpha1.PodCliqueSet) { p.Spec.Template.TopologyConstraint = pack("fleet", "rack", "") })

	cases := []struct {
		name         string
		cached, live client.Reader
		wantKey      string
		wantProblems int
	}{
		{name: "in the cache", cached: withBinding, live: empty, wantKey: "example.com/rack"},
		{name: "not yet in the cache, in the API server", cached: empty, live: withBinding, wantKey: "example.com/rack"},
		{name: "in neither: not found", cached: empty, live: empty, wantProblems: 1},
		{name: "no live reader: the cache is trusted", cached: empty, wantProblems: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, problems, err := Lookup(context.Background(), tc.cached, tc.live, packed, true)
			if err != nil {
				t.Fatal(err)
			}
			if got.Replica.RequiredKey != tc.wantKey || len(problems) != tc.wantProblems {
				t.Errorf("Lookup = key %q, problems %v; want key %q, %d problems", got.Replica.RequiredKey, problems, tc.wantKey, tc.wantProblems)
			}
			if tc.wantProblems > 0 && problems[0].Reason != copsev1alpha1.ReasonClusterTopologyNotFound {
				t.Errorf("problem reason %s, want %s", problems[0].Reason, copsev1alpha1.ReasonClusterTopologyNotFound)
			}
		})
	}
}
