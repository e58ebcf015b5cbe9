package children

import (
	"fmt"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// cmRow is a row of ConfigMaps: "s" shared by the owner, "r<replica>" per
// replica, refreshed by value; in is the value to build with.
func cmRow(shared, refresh bool) Row[string] {
	row := Row[string]{Kind: "ConfigMap", Desired: func(in string) []client.Object {
		return objs(desired(in, "1"))
	}}
	if shared {
		row.Shared = func(in string) []client.Object { return objs(desired(in, "1")) }
	}
	if refresh {
		row.Refresh = refreshValue
	}
	return row
}

// describeSets is each set as "kind desired-names / observed-names [refresh]".
func describeSets(sets []Set) []string {
	names := func(list []client.Object) []string {
		var out []string
		for _, o := range list {
			out = append(out, o.GetName())
		}
		return out
	}
	var out []string
	for _, s := range sets {
		out = append(out, fmt.Sprintf("%s %v / %v refresh=%v", s.Kind, names(s.Desired), names(s.Observed), s.Refresh != nil))
	}
	return out
}

func TestPassSets(t *testing.T) {
	inputs := func(replica int) string {
		if replica == NoReplica {
			return "s"
		}
		return fmt.Sprintf("r%d", replica)
	}
	observed := Observed{}
	observed.Add("ConfigMap", NoReplica, cm("s", owner, "1", false))
	observed.Add("ConfigMap", 0, cm("r0", owner, "1", false))
	observed.Add("ConfigMap", 3, cm("r3", owner, "1", false))
	observed.Add("ConfigMap", 2, cm("r2", owner, "1", false))
	cases := []struct {
		name string
		pass Pass[string]
		want []string
	}{
		{
			name: "shared first, then each replica row by row, then the replicas the owner no longer has, in order",
			pass: Pass[string]{Rows: []Row[string]{cmRow(true, true)}, Observed: observed, Replicas: 2, Inputs: inputs},
			want: []string{
				"ConfigMap [s] / [s] refresh=true",
				"ConfigMap [r0] / [r0] refresh=true",
				"ConfigMap [r1] / [] refresh=true",
				"ConfigMap [] / [r2 r3] refresh=false",
			},
		},
		{
			name: "a replica that may not get objects has no set; shared objects and removed replicas are kept all the same",
			pass: Pass[string]{Rows: []Row[string]{cmRow(true, false)}, Observed: observed, Replicas: 2, Inputs: inputs,
				MayCreate: func(replica int) bool { return replica != 0 }},
			want: []string{
				"ConfigMap [s] / [s] refresh=false",
				"ConfigMap [r1] / [] refresh=false",
				"ConfigMap [] / [r2 r3] refresh=false",
			},
		},
		{
			name: "frozen: nothing is refreshed",
			pass: Pass[string]{Rows: []Row[string]{cmRow(false, true)}, Observed: observed, Replicas: 1, Inputs: inputs, Frozen: true},
			want: []string{
				"ConfigMap [r0] / [r0] refresh=false",
				"ConfigMap [] / [r2 r3] refresh=false",
			},
		},
		{
			name: "a row without builders is only observed: its removed replicas' objects go",
			pass: Pass[string]{Rows: []Row[string]{{Kind: "ConfigMap"}}, Observed: observed, Replicas: 3, Inputs: inputs},
			want: []string{"ConfigMap [] / [r3] refresh=false"},
		},
		{
			name: "no replicas: every replica's objects go, not the shared ones",
			pass: Pass[string]{Rows: []Row[string]{{Kind: "ConfigMap"}}, Observed: observed, Replicas: 0, Inputs: inputs},
			want: []string{"ConfigMap [] / [r0 r2 r3] refresh=false"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := describeSets(tc.pass.Sets()); !slices.Equal(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestIndexAndControlledBy(t *testing.T) {
	a, b, c := cm("a", owner, "0", false), cm("b", other, "1", false), cm("c", "", "", false)
	index := Index(map[string][]client.Object{"ConfigMap": objs(a, b, c)}, func(obj client.Object) int {
		if obj.GetName() == "c" {
			return NoReplica
		}
		return 0
	})
	if got := index.Of("ConfigMap", 0); !slices.Equal(got, objs(a, b)) {
		t.Errorf("replica 0: %v", got)
	}
	if got := index.Of("ConfigMap", NoReplica); !slices.Equal(got, objs(c)) {
		t.Errorf("no replica: %v", got)
	}
	if got := index.Of("Secret", 0); got != nil {
		t.Errorf("a kind never observed: %v", got)
	}
	if got := ControlledBy(objs(a, b, c), map[types.UID]bool{owner: true}); !slices.Equal(got, objs(a)) {
		t.Errorf("controlled by the owner: %v", got)
	}
	if got := ControlledBy(objs(a, b, c), map[types.UID]bool{owner: true, other: true}); !slices.Equal(got, objs(a, b)) {
		t.Errorf("controlled by either owner: %v", got)
	}
}
