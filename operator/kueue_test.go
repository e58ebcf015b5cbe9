package main

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
)

func TestKueueNeedsKueuesKinds(t *testing.T) {
	without := meta.NewDefaultRESTMapper(nil)
	partial := meta.NewDefaultRESTMapper([]schema.GroupVersion{kueuev1beta2.SchemeGroupVersion})
	partial.Add(kueueKinds[0], meta.RESTScopeNamespace)
	with := meta.NewDefaultRESTMapper([]schema.GroupVersion{kueuev1beta2.SchemeGroupVersion})
	for _, gvk := range kueueKinds {
		with.Add(gvk, meta.RESTScopeNamespace)
	}

	if err := checkKueueServed(without, configv1alpha1.KueueConfiguration{Enabled: false}); err != nil {
		t.Errorf("disabled: %v, want no error whatever the cluster serves", err)
	}
	for name, mapper := range map[string]meta.RESTMapper{"no Kueue": without, "Workloads only": partial} {
		err := checkKueueServed(mapper, configv1alpha1.KueueConfiguration{Enabled: true})
		if err == nil || !strings.Contains(err.Error(), "kueue.x-k8s.io/v1beta2") || !strings.Contains(err.Error(), "kueue.enabled to false") {
			t.Errorf("enabled, %s: error %v, want one naming kueue.x-k8s.io/v1beta2 and the fix", name, err)
		}
	}
	if err := checkKueueServed(with, configv1alpha1.KueueConfiguration{Enabled: true}); err != nil {
		t.Errorf("enabled with Kueue's kinds: %v", err)
	}
}
