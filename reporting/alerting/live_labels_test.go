package alerting

import (
	"testing"
	"time"
)

// TestLiveErrorsPoolOriginLabels: a live_errors alert carries the
// generated Prometheus and Grafana rules' pool and origin labels beside
// check and target (which silences and routes name), and its fingerprint
// is the one it had without them, so an alert firing across the change
// stays the same alert in the state, the history and the receivers.
func TestLiveErrorsPoolOriginLabels(t *testing.T) {
	a := Alert{Rule: RuleLiveErrors, Severity: SeverityPage, Check: "web", Target: "sg-b", Regions: []string{"eu"},
		Summary: "pool web origin sg-b: …", Since: time.Now()}
	a.finish()
	want := map[string]string{"alertname": "VigilLiveTrafficFailing", "rule": "live_errors", "severity": "page", "source": "vigil",
		"check": "web", "target": "sg-b", "pool": "web", "origin": "sg-b"}
	if len(a.Labels) != len(want) {
		t.Errorf("labels %v, want %v", a.Labels, want)
	}
	for k, v := range want {
		if a.Labels[k] != v {
			t.Errorf("label %s: %q, want %q (all: %v)", k, a.Labels[k], v, a.Labels)
		}
	}
	// FNV-1a of alertname, check, rule, severity, source and target, as
	// before pool and origin were added.
	if a.Fingerprint != "14e02e1f9cbd1be6" {
		t.Errorf("fingerprint %s, want 14e02e1f9cbd1be6 (pool and origin must not change it)", a.Fingerprint)
	}
	// Other rules have neither.
	d := Alert{Rule: RuleDown, Severity: SeverityPage, Check: "healthz", Target: "sg-b"}
	d.finish()
	if _, ok := d.Labels["pool"]; ok {
		t.Errorf("a down alert has a pool label: %v", d.Labels)
	}
}
