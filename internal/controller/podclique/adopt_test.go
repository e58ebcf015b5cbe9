package podclique

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/podstate"
)

func TestAdoptionOf(t *testing.T) {
	pclq := &copsev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{UID: "new-pclq"}}
	pclq.Spec.Replicas = 3
	moved := func(name string, index int) podstate.Summary {
		return podstate.Summary{Name: name, Index: index, HasIndex: true, Attempt: 1, Phase: corev1.PodRunning}
	}
	tests := []struct {
		name                 string
		inPlace              bool
		owned, strays        []podstate.Summary
		adopt, discard, rest []string
	}{
		{"not in place: strays stay strays", false, nil, []podstate.Summary{moved("a", 0)}, nil, nil, []string{"a"}},
		{"moved pods are adopted at their index", true, nil, []podstate.Summary{moved("a", 0), moved("b", 2)}, []string{"a", "b"}, nil, nil},
		{"a pod still controlled by the old PodClique is not adopted yet", true, nil,
			[]podstate.Summary{func() podstate.Summary { p := moved("a", 0); p.ControllerUID = "old-pclq"; return p }()}, nil, nil, []string{"a"}},
		{"a pod of the old attempt (not moved) is not adopted", true, nil,
			[]podstate.Summary{func() podstate.Summary { p := moved("a", 0); p.Attempt = 0; return p }()}, nil, nil, []string{"a"}},
		// Its containers ended in the previous attempt's run, after the
		// move: neither outcome is this run's, so it goes (chaos w58 left
		// such pods orphaned beside their replacements).
		{"a moved pod that failed before adoption is discarded", true, nil,
			[]podstate.Summary{func() podstate.Summary { p := moved("a", 0); p.Phase = corev1.PodFailed; return p }()}, nil, []string{"a"}, nil},
		{"a moved pod that exited 0 before adoption is discarded", true, nil,
			[]podstate.Summary{func() podstate.Summary { p := moved("a", 0); p.Phase = corev1.PodSucceeded; return p }()}, nil, []string{"a"}, nil},
		{"an ended pod of the old attempt stays a stray", true, nil,
			[]podstate.Summary{func() podstate.Summary { p := moved("a", 0); p.Attempt = 0; p.Phase = corev1.PodFailed; return p }()}, nil, nil, []string{"a"}},
		{"an index out of range is discarded", true, nil, []podstate.Summary{moved("a", 3)}, nil, []string{"a"}, nil},
		{"an index its own pod holds is discarded", true, []podstate.Summary{{Name: "own", Index: 1, HasIndex: true, Phase: corev1.PodPending}},
			[]podstate.Summary{moved("a", 1)}, nil, []string{"a"}, nil},
		{"two moved pods of one index: the first is adopted", true, nil, []podstate.Summary{moved("a", 1), moved("b", 1)}, []string{"a"}, []string{"b"}, nil},
	}
	names := func(pods []podstate.Summary) []string {
		var out []string
		for _, p := range pods {
			out = append(out, p.Name)
		}
		return out
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			adopt, discard, rest := adoptionOf(pclq, 1, tt.inPlace, tt.owned, tt.strays)
			if got := names(adopt); !slices.Equal(got, tt.adopt) {
				t.Errorf("adopt %v, want %v", got, tt.adopt)
			}
			if got := names(discard); !slices.Equal(got, tt.discard) {
				t.Errorf("discard %v, want %v", got, tt.discard)
			}
			if got := names(rest); !slices.Equal(got, tt.rest) {
				t.Errorf("rest %v, want %v", got, tt.rest)
			}
			for _, p := range adopt {
				if p.ControllerUID != types.UID("new-pclq") {
					t.Errorf("adopted %s summarised with controller %q, want the new PodClique", p.Name, p.ControllerUID)
				}
			}
		})
	}
}
