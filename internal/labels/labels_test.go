package labels

import (
	"maps"
	"testing"

	k8slabels "k8s.io/apimachinery/pkg/labels"
)

func TestForReplica(t *testing.T) {
	tests := []struct {
		name    string
		replica int
		want    map[string]string
	}{
		{"replica 0", 0, map[string]string{ManagedByKey: ManagedByValue, PartOfKey: "llm", ReplicaKey: "0"}},
		{"replica 12", 12, map[string]string{ManagedByKey: ManagedByValue, PartOfKey: "llm", ReplicaKey: "12"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ForReplica("llm", tt.replica); !maps.Equal(got, tt.want) {
				t.Errorf("ForReplica(llm, %d) = %v, want %v", tt.replica, got, tt.want)
			}
		})
	}
	// Each call returns a map of its own: a caller adding to it changes no
	// other object's labels.
	a := ForPodCliqueSet("llm")
	a["extra"] = "x"
	if _, shared := ForPodCliqueSet("llm")["extra"]; shared {
		t.Error("ForPodCliqueSet returned a map shared between calls")
	}
}

// TestSelectPodCliqueSet: the selector matches the objects of the
// PodCliqueSet, of any replica, and nothing else: not another
// PodCliqueSet's, nor an object copse does not manage.
func TestSelectPodCliqueSet(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
		want   bool
	}{
		{"an object of the PodCliqueSet", ForPodCliqueSet("llm"), true},
		{"an object of one of its replicas", Merge(ForReplica("llm", 3), map[string]string{"team": "a"}), true},
		{"another PodCliqueSet's", ForPodCliqueSet("llm-2"), false},
		{"not managed by copse", map[string]string{PartOfKey: "llm"}, false},
		{"managed by someone else", map[string]string{ManagedByKey: "other", PartOfKey: "llm"}, false},
		{"no labels", nil, false},
	}
	selector := SelectPodCliqueSet("llm")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := selector.Matches(k8slabels.Set(tt.labels)); got != tt.want {
				t.Errorf("SelectPodCliqueSet(llm) matches %v: %v, want %v", tt.labels, got, tt.want)
			}
		})
	}
}

func TestMerge(t *testing.T) {
	tests := []struct {
		name string
		maps []map[string]string
		want map[string]string
	}{
		{"none", nil, map[string]string{}},
		{"nil maps", []map[string]string{nil, nil}, map[string]string{}},
		{"disjoint", []map[string]string{{"a": "1"}, {"b": "2"}}, map[string]string{"a": "1", "b": "2"}},
		{
			"a later map wins: copse's labels over the user's",
			[]map[string]string{{PartOfKey: "hijack", "team": "a"}, ForPodCliqueSet("llm")},
			map[string]string{PartOfKey: "llm", ManagedByKey: ManagedByValue, "team": "a"},
		},
		{"three maps, the last wins", []map[string]string{{"a": "1"}, {"a": "2"}, {"a": "3"}}, map[string]string{"a": "3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before []map[string]string
			for _, m := range tt.maps {
				before = append(before, maps.Clone(m))
			}
			got := Merge(tt.maps...)
			if !maps.Equal(got, tt.want) {
				t.Errorf("Merge(%v) = %v, want %v", tt.maps, got, tt.want)
			}
			for i, m := range tt.maps {
				if !maps.Equal(m, before[i]) {
					t.Errorf("Merge changed its input %d: %v, was %v", i, m, before[i])
				}
			}
		})
	}
	// The result is a new map, even for a single input.
	in := map[string]string{"a": "1"}
	Merge(in)["a"] = "changed"
	if in["a"] != "1" {
		t.Error("Merge returned its input map")
	}
}

func TestIndex(t *testing.T) {
	tests := []struct {
		name      string
		labels    map[string]string
		wantIndex int
		wantOK    bool
	}{
		{"absent", map[string]string{}, 0, false},
		{"nil labels", nil, 0, false},
		{"zero", map[string]string{ReplicaKey: "0"}, 0, true},
		{"positive", map[string]string{ReplicaKey: "17"}, 17, true},
		{"leading zeros", map[string]string{ReplicaKey: "007"}, 7, true},
		{"negative", map[string]string{ReplicaKey: "-1"}, 0, false},
		{"not a number", map[string]string{ReplicaKey: "one"}, 0, false},
		{"empty", map[string]string{ReplicaKey: ""}, 0, false},
		{"a number with a suffix", map[string]string{ReplicaKey: "1a"}, 0, false},
		{"another key set", map[string]string{PodIndexKey: "3"}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			index, ok := Index(tt.labels, ReplicaKey)
			if index != tt.wantIndex || ok != tt.wantOK {
				t.Errorf("Index(%v) = %d, %v; want %d, %v", tt.labels, index, ok, tt.wantIndex, tt.wantOK)
			}
		})
	}
}
