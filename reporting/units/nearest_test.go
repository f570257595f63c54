package units

import "testing"

func TestNearestName(t *testing.T) {
	names := []string{"api", "home", "origin-a", "web1", "web2"}
	for _, c := range []struct{ name, want string }{
		{"homee", "home"}, // one letter too many
		{"hmoe", "home"},  // two letters swapped
		{"apj", "api"},    // short: one edit
		{"web7", ""},      // another number: another name, not a typo
		{"wbe1", "web1"},  // a typo of a numbered name
		{"origin-z", "origin-a"},
		{"checkout", ""}, // nothing near
	} {
		if got := NearestName(c.name, names); got != c.want {
			t.Errorf("NearestName(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}
