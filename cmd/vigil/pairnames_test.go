package main

import (
	"reflect"
	"sort"
	"testing"
)

// TestPairNamesForAlerter: the alerter is told every check × target pair of
// the file (a check's url is its own target, named host:port; disabled
// checks run nothing and are left out), so alerts of pairs a reload
// removed resolve.
func TestPairNamesForAlerter(t *testing.T) {
	f, err := parseConfig("vigil.yaml", []byte(`
targets:
  - {name: a, url: "http://127.0.0.1:9201"}
  - {name: b, url: "http://127.0.0.1:9202"}
checks:
  - {name: home, targets: [a, b], interval: 30s}
  - {name: direct, url: "http://127.0.0.1:9203/healthz", interval: 30s}
  - {name: off, targets: [a], interval: 30s, disabled: true}
`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	got := f.pairNames()
	for _, ts := range got {
		sort.Strings(ts)
	}
	want := map[string][]string{"home": {"a", "b"}, "direct": {"127.0.0.1:9203"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pairs %v, want %v", got, want)
	}
	noChecks, err := parseConfig("vigil.yaml", []byte("alerting: {receivers: [{name: w, webhook: {url: \"http://127.0.0.1:9/\"}}]}\n"),
		func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if noChecks.pairNames() != nil {
		t.Errorf("a file without checks judges every pair in the store: pairs %v, want nil", noChecks.pairNames())
	}
}
