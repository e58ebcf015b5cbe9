package indexset

import (
	"testing"
)

func TestRoundTrip(t *testing.T) {
	cases := []struct {
		in, want string
	}{
		{"", ""},
		{"0", "0"},
		{"0-3,7", "0-3,7"},
		{"3,0,1,2", "0-3"},
		{"0-2,3-4,6", "0-4,6"},
		{"5-5", "5"},
		{"9-10,1", "1,9-10"},
	}
	for _, tc := range cases {
		s, err := Parse(tc.in, 100)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.in, err)
		}
		if got := s.String(); got != tc.want {
			t.Errorf("Parse(%q).String() = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestParseRejects(t *testing.T) {
	for _, in := range []string{"a", "-1", "3-1", "1,,2", "1-", "1-x"} {
		if _, err := Parse(in, 100); err == nil {
			t.Errorf("Parse(%q) accepted a malformed set", in)
		}
	}
}

func TestAddAndCount(t *testing.T) {
	s := Set{}
	if !s.Add(4) || s.Add(4) {
		t.Fatal("Add must report only new indices")
	}
	s.Add(1)
	s.Add(9)
	if got := s.CountBelow(5); got != 2 {
		t.Errorf("CountBelow(5) = %d, want 2", got)
	}
	if !s.Has(9) || s.Has(2) {
		t.Errorf("Has is wrong for %v", s)
	}
	if got := s.String(); got != "1,4,9" {
		t.Errorf("String() = %q", got)
	}
}

func TestParseKeepsIndicesBelowTheBound(t *testing.T) {
	s, err := Parse("1,3-4000000000", 6)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.String(); got != "1,3-5" {
		t.Errorf("got %q, want the indices below 6", got)
	}
}
