package main

import (
	"strings"
	"testing"
)

// TestValidateReceiverRoutes: a receivers[].checks entry that matches no
// check of the file is a warning at its line (the file may route checks
// other agents run), one that matches is not; a bad glob is an error
// naming the key.
func TestValidateReceiverRoutes(t *testing.T) {
	cfg := writeConfig(t, `targets: [{name: o, url: "http://127.0.0.1:1"}]
checks:
  - {name: checkout-api, targets: [o], http: {path: /}}
  - {name: legacy-db, targets: [o], http: {path: /}}
alerting:
  receivers:
    - {name: checkout, checks: ["checkout-*"], webhook: {url: "http://127.0.0.1:9/x"}}
    - name: team-low
      checks: ["legacy-*", "gone"]
      tiers: [shallow]
      webhook: {url: "http://127.0.0.1:9/y"}
`)
	out, code := runCLI(t, "validate", "-c", cfg)
	want := "ok\nwarning: " + cfg + `:9:28: alerting.receivers[1].checks[1]: "gone" matches no check of this file: the receiver gets alerts of such a check only if other agents' verdicts name it`
	if code != 0 || strings.TrimSpace(out) != want {
		t.Errorf("exit %d:\n%s\nwant exit 0 and:\n%s", code, out, want)
	}

	bad := writeConfig(t, `targets: [{name: o, url: "http://127.0.0.1:1"}]
checks: [{name: a, targets: [o], http: {path: /}}]
alerting:
  receivers:
    - {name: ok, webhook: {url: "http://127.0.0.1:9/x"}}
    - {name: bad, checks: ["["], tiers: [browser], webhook: {url: "http://127.0.0.1:9/x"}}
`)
	out, code = runCLI(t, "validate", "-c", bad)
	for _, w := range []string{`alerting.receivers[1].checks[0]: "[": bad glob: syntax error in pattern`,
		`alerting.receivers[1].tiers[0]: "browser": unknown tier (want shallow, deep or synthetic)`} {
		if code != 2 || !strings.Contains(out, w) {
			t.Errorf("exit %d:\n%s\nwant exit 2 and %q", code, out, w)
		}
	}
}
