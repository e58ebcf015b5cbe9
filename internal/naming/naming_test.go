package naming

import (
	"strings"
	"testing"
)

func TestGeneratedNames(t *testing.T) {
	cases := []struct{ got, want string }{
		{ReplicaService("llm", 1), "llm-1"},
		{StandalonePodClique("llm", 0, "leader"), "llm-0-leader"},
		{ScalingGroup("llm", 1, "decode"), "llm-1-decode"},
		{GroupedPodClique(ScalingGroup("llm", 1, "decode"), 2, "worker"), "llm-1-decode-2-worker"},
		{PodHostname("llm-0-leader", 3), "llm-0-leader-3"},
		{PodGenerateName("llm-0-leader"), "llm-0-leader-"},
		{BaseGang("llm", 0), "llm-0"},
		{ScaledGang("llm-0-decode", 3), "llm-0-decode-3"},
		{HeadlessServiceFQDN("llm-0", "ml"), "llm-0.ml.svc.cluster.local"},
		// GREP-390's examples.
		{SharedClaim("disagg", "res1"), "disagg-all-res1"},
		{ReplicaClaim("disagg", 0, "res2"), "disagg-0-res2"},
		{ReplicaClaim(ScalingGroup("disagg", 1, "sgx"), 0, "gpu-pool"), "disagg-1-sgx-0-gpu-pool"},
		{SharedClaim(StandalonePodClique("disagg", 0, "metrics"), "metrics-gpu"), "disagg-0-metrics-all-metrics-gpu"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestNameBudget(t *testing.T) {
	cases := []struct {
		name       string
		budget     NameBudget
		wantErr    bool
		wantClique string
	}{
		{
			name:   "short names fit",
			budget: NameBudget{PodCliqueSet: "llm", MaxReplicas: 2, Cliques: map[string]string{"leader": "", "worker": "decode"}, MaxGroupReplicas: map[string]int{"decode": 4}},
		},
		{
			name:       "a long standalone clique is named",
			budget:     NameBudget{PodCliqueSet: "pretrain", MaxReplicas: 1, Cliques: map[string]string{strings.Repeat("w", 50): "", "x": ""}},
			wantErr:    true,
			wantClique: strings.Repeat("w", 50),
		},
		{
			name: "a grouped clique pays for the group name and index",
			// llm-0-decodegroup-9-<40 chars>-99999 = 3+2+12+2+40+6 = 65
			budget:     NameBudget{PodCliqueSet: "llm", MaxReplicas: 1, Cliques: map[string]string{strings.Repeat("c", 40): "decodegroup"}, MaxGroupReplicas: map[string]int{"decodegroup": 10}},
			wantErr:    true,
			wantClique: strings.Repeat("c", 40),
		},
		{
			name: "exactly 63 fits",
			// p-0-<c>-99999: 4+len+6 = 63 -> len 53
			budget: NameBudget{PodCliqueSet: "p", MaxReplicas: 1, Cliques: map[string]string{strings.Repeat("c", 53): ""}},
		},
		{
			name:       "64 does not",
			budget:     NameBudget{PodCliqueSet: "p", MaxReplicas: 1, Cliques: map[string]string{strings.Repeat("c", 54): ""}},
			wantErr:    true,
			wantClique: strings.Repeat("c", 54),
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.budget.Check()
			if (err != nil) != c.wantErr {
				t.Fatalf("Check() = %v, want error %v", err, c.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), c.wantClique) {
				t.Errorf("error %q does not name clique %q", err, c.wantClique)
			}
			if h, _ := c.budget.LongestHostname(); !c.wantErr && len(h) > MaxLabelLength {
				t.Errorf("hostname %q over the limit but no error", h)
			}
		})
	}
}
