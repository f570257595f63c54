package main

import (
	"slices"
	"testing"
)

// TestDisabledCheckNotDeadManSilent: a check with disabled: true (kept in
// the file, not run) is not among the checks the alerter may find silent,
// so disabling a check does not page with a dead-man alert; nor is it among
// the pairs the other rules judge.
func TestDisabledCheckNotDeadManSilent(t *testing.T) {
	f, _, err := loadText(t, `targets: [{name: a, url: "http://127.0.0.1:9"}]
checks:
  - {name: home, targets: [a], interval: 10s, http: {}}
  - {name: login-flow, targets: [a], interval: 10s, disabled: true, http: {}}
alerting: {quorum: 1}
`, nil)
	if err != "" {
		t.Fatal(err)
	}
	if got := f.checkNames(); !slices.Equal(got, []string{"home"}) {
		t.Errorf("checks the dead-man rule judges: %q, want only the enabled [home]", got)
	}
	if _, ok := f.pairNames()["login-flow"]; ok {
		t.Errorf("pairs the alerter judges include the disabled login-flow: %v", f.pairNames())
	}
}
