package podclique

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
)

func TestIdentityOf(t *testing.T) {
	without := func(pclq *copsev1alpha1.PodClique, key string) *copsev1alpha1.PodClique {
		delete(pclq.Labels, key)
		return pclq
	}
	cases := []struct {
		name    string
		pclq    *copsev1alpha1.PodClique
		gang    bool
		want    cliqueIdentity
		wantErr string
	}{
		{
			name: "standalone clique",
			pclq: testStandaloneClique(1),
			gang: true,
			want: cliqueIdentity{podCliqueSet: "llm", replica: 1, gang: "llm-1", clique: "leader"},
		},
		{
			name: "grouped clique",
			pclq: testGroupedClique(1),
			gang: true,
			want: cliqueIdentity{podCliqueSet: "llm", replica: 1, gang: "llm-1-decode-2", clique: "worker",
				scalingGroup: "llm-1-decode", scalingGroupReplica: 2},
		},
		{
			name: "no gang label is fine without gang scheduling",
			pclq: without(testStandaloneClique(1), labels.PodGangKey),
			want: cliqueIdentity{podCliqueSet: "llm", replica: 1, clique: "leader"},
		},
		{name: "no gang label with gang scheduling", pclq: without(testStandaloneClique(1), labels.PodGangKey), gang: true, wantErr: labels.PodGangKey},
		{name: "no PodCliqueSet label", pclq: without(testStandaloneClique(1), labels.PartOfKey), wantErr: labels.PartOfKey},
		{name: "no replica label", pclq: without(testStandaloneClique(1), labels.ReplicaKey), wantErr: labels.ReplicaKey},
		{name: "grouped without group replica", pclq: without(testGroupedClique(1), labels.ScalingGroupReplicaKey), wantErr: labels.ScalingGroupReplicaKey},
		{name: "grouped without template clique", pclq: without(testGroupedClique(1), labels.CliqueTemplateKey), wantErr: labels.CliqueTemplateKey},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := identityOf(c.pclq, c.gang)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one naming %s", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got, cmp.AllowUnexported(cliqueIdentity{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
