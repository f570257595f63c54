package alerting

import (
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// TestAlertTierLabel: an alert carries its check's tier, for routing
// shallow and deep checks apart: as the label tier in Alertmanager (a real
// one) and the webhook's labels, and as the webhook alert's tier. The
// fingerprint does not change with it (an alert stays the same alert when
// its check's tier changes, or across the upgrade that added the label).
func TestAlertTierLabel(t *testing.T) {
	base := startAlertmanager(t)
	cfg := Config{Down: DownRule{For: time.Second}, DeadMan: DeadManRule{Disabled: true},
		Receivers: []Receiver{{Name: "am", Alertmanager: &AlertmanagerConfig{URL: base}}}}
	// Alertmanager judges endsAt against its own clock: real time here.
	h := newHarness(t, time.Now(), cfg, nil)
	tick := func() {
		now := h.clock.Add(h.interval)
		v := verdict("asset", "origin-a", "eu", now.Add(-time.Second), reporting.StateUnhealthy, h.interval)
		v.Tier = reporting.TierDeep
		h.store.add(v)
		h.eval()
	}
	tick()
	tick()
	got := h.hook.webhooks(t)
	if len(got) != 1 || got[0].Alerts[0].Tier != "deep" || got[0].Alerts[0].Labels["tier"] != "deep" {
		t.Fatalf("webhook: %+v, want the alert with tier deep and label tier=deep", got)
	}
	untiered := Alert{Rule: RuleDown, Severity: SeverityPage, Check: "asset", Target: "origin-a"}
	untiered.finish()
	if got[0].Alerts[0].Fingerprint != untiered.Fingerprint {
		t.Fatalf("fingerprint %s, want %s (tier is not identity)", got[0].Alerts[0].Fingerprint, untiered.Fingerprint)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		as := getAlerts(t, base)
		if len(as) == 1 && as[0].Labels["tier"] == "deep" && as[0].Labels["check"] == "asset" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Alertmanager alerts: %+v, want one with tier=deep", as)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
