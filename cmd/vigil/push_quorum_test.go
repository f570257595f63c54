package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting/alerting"
)

// A push check with push.region, in a real `vigil run` whose alerting.quorum
// is 2: its job stops pinging and its down alert fires from that one region
// (the only one that judges it). Was: it never fired, as no second region
// could agree.
func TestPushRegionAlertsUnderQuorum(t *testing.T) {
	const token = "push-quorum-token-0123456789"
	dir := t.TempDir()
	path := filepath.Join(dir, "vigil.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(`
agent: {region: eu, data_dir: %s}
checks:
  - {name: backup, interval: 200ms, rise: 1, fall: 1, push: {period: 1s, grace: 500ms, token: %s, region: eu}}
alerting: {quorum: 2, evaluation_interval: 1s, down: {for: 0s}, dead_man: {disabled: true}}
`, dir, token)), 0o600); err != nil {
		t.Fatal(err)
	}
	a, stop := startApp(t, path, roles{canary: true, alerter: true})
	defer stop()
	firing := func() *alerting.Alert {
		for _, al := range a.alr.Active() {
			if al.Rule == alerting.RuleDown && al.Check == "backup" {
				return &al
			}
		}
		return nil
	}
	waitFor(t, 15*time.Second, "the push check's down alert", func() bool { return firing() != nil })
	if al := firing(); len(al.Regions) != 1 || al.Regions[0] != "eu" || al.Cause != "push_missing" {
		t.Fatalf("alert: regions %v cause %q: %s", al.Regions, al.Cause, al.Summary)
	}
}
