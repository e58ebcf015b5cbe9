package blueprint

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/testfixtures"
)

func TestIdentityOf(t *testing.T) {
	without := func(pclq *copsev1alpha1.PodClique, key string) *copsev1alpha1.PodClique {
		delete(pclq.Labels, key)
		return pclq
	}
	with := func(pclq *copsev1alpha1.PodClique, key, value string) *copsev1alpha1.PodClique {
		pclq.Labels[key] = value
		return pclq
	}
	cases := []struct {
		name    string
		pclq    *copsev1alpha1.PodClique
		want    CliqueIdentity
		wantErr string
	}{
		{
			name: "standalone clique",
			pclq: testfixtures.StandaloneClique(1),
			want: CliqueIdentity{PodCliqueSet: "llm", Replica: 1, Gang: "llm-1", Clique: "leader"},
		},
		{
			name: "grouped clique",
			pclq: testfixtures.GroupedClique(1),
			want: CliqueIdentity{PodCliqueSet: "llm", Replica: 1, Gang: "llm-1-decode-2", Clique: "worker",
				ScalingGroup: "llm-1-decode", ScalingGroupReplica: 2},
		},
		{
			name: "the attempt label is read",
			pclq: with(testfixtures.StandaloneClique(1), labels.AttemptKey, "3"),
			want: CliqueIdentity{PodCliqueSet: "llm", Replica: 1, Attempt: 3, Gang: "llm-1", Clique: "leader"},
		},
		{
			name: "no gang label: the gang is a decorator's concern",
			pclq: without(testfixtures.StandaloneClique(1), labels.PodGangKey),
			want: CliqueIdentity{PodCliqueSet: "llm", Replica: 1, Clique: "leader"},
		},
		{name: "no PodCliqueSet label", pclq: without(testfixtures.StandaloneClique(1), labels.PartOfKey), wantErr: labels.PartOfKey},
		{name: "no replica label", pclq: without(testfixtures.StandaloneClique(1), labels.ReplicaKey), wantErr: labels.ReplicaKey},
		{name: "grouped without group replica", pclq: without(testfixtures.GroupedClique(1), labels.ScalingGroupReplicaKey), wantErr: labels.ScalingGroupReplicaKey},
		{name: "grouped without template clique", pclq: without(testfixtures.GroupedClique(1), labels.CliqueTemplateKey), wantErr: labels.CliqueTemplateKey},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := IdentityOf(c.pclq)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one naming %s", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
