package podclique

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/copse-dev/copse/internal/resourcesharing"
)

func TestClaimsWaiting(t *testing.T) {
	owners := map[resourcesharing.Level]types.UID{
		resourcesharing.LevelPodCliqueSet: "pcs", resourcesharing.LevelScalingGroup: "pcsg", resourcesharing.LevelPodClique: "pclq",
	}
	refs := []resourcesharing.Ref{
		{Name: "set", Level: resourcesharing.LevelPodCliqueSet},
		{Name: "group", Level: resourcesharing.LevelScalingGroup},
		{Name: "own", Level: resourcesharing.LevelPodClique},
	}
	usable := map[string]claimState{
		"set":   {exists: true, controller: "pcs"},
		"group": {exists: true, controller: "pcsg"},
		"own":   {exists: true, controller: "pclq"},
	}
	with := func(name string, state claimState) map[string]claimState {
		out := map[string]claimState{}
		for k, v := range usable {
			out[k] = v
		}
		out[name] = state
		return out
	}
	cases := []struct {
		name   string
		claims map[string]claimState
		want   []string
	}{
		{"every claim exists, is its level's and stays", usable, nil},
		{"a claim not created yet", with("own", claimState{}), []string{"own"}},
		{"a claim being deleted", with("group", claimState{exists: true, controller: "pcsg", deleting: true}), []string{"group"}},
		{"a claim of another owner (a namesake's, on its way out)", with("set", claimState{exists: true, controller: "old-pcs"}), []string{"set"}},
		{"a claim with no controller", with("own", claimState{exists: true}), []string{"own"}},
		{"a claim the clique owns, named at the group's level, is not the group's", with("group", claimState{exists: true, controller: "pclq"}), []string{"group"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := claimsWaiting(refs, tc.claims, owners); !slices.Equal(got, tc.want) {
				t.Errorf("waiting for %v, want %v", got, tc.want)
			}
		})
	}
}
