package alerting

import (
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// TestDownSummaryListsDifferingCauses: when the regions' causes differ,
// the summary names each with its regions; cause stays the most common.
// A sub-millisecond TTFB reads as such in the text (Slack, PagerDuty) and
// the Alertmanager annotation, not as "0s".
func TestDownSummaryListsDifferingCauses(t *testing.T) {
	am := newRecorder(t)
	h := newHarness(t, t0, Config{Quorum: 2, Down: DownRule{For: time.Second},
		Receivers: []Receiver{{Name: "am", Alertmanager: &AlertmanagerConfig{URL: am.srv.URL}}}}, nil)
	causes := map[string]string{"eu-west": "checksum", "ap-south": "checksum", "us-east": "connect_refused"}
	for range 2 {
		now := h.clock.Add(h.interval)
		for region, cause := range causes {
			v := verdict("asset", "origin-b", region, now.Add(-time.Second), U, h.interval)
			v.Cause = cause
			if cause == "checksum" {
				v.Err, v.TTFB = "body sha256 mismatch", 440*time.Microsecond
			}
			h.store.add(v)
		}
		h.eval()
	}
	got := h.hook.webhooks(t)
	if len(got) != 1 || len(got[0].Alerts) != 1 {
		t.Fatalf("notifications: %+v", got)
	}
	a := got[0].Alerts[0]
	want := "asset × origin-b down in 3 regions (ap-south, eu-west, us-east): " +
		"checksum (ap-south, eu-west), connect_refused (us-east) — body sha256 mismatch"
	if a.Summary != want || a.Cause != "checksum" || a.Error != "body sha256 mismatch" {
		t.Fatalf("summary %q cause %q error %q\nwant summary %q, cause checksum", a.Summary, a.Cause, a.Error, want)
	}
	if a.TTFBMs != 0.44 || !strings.Contains(got[0].Text, "· TTFB 0.4ms") {
		t.Fatalf("ttfb_ms %v, text:\n%s", a.TTFBMs, got[0].Text)
	}
	posts := amPosts(t, am)
	if len(posts) == 0 || posts[0][0].Annotations["ttfb"] != "0.4ms" {
		t.Fatalf("alertmanager: %+v, want ttfb annotation 0.4ms", posts)
	}

	// One cause everywhere: the summary names it once, as before.
	h2 := newHarness(t, t0, Config{Quorum: 2, Down: DownRule{For: time.Second}}, nil)
	for range 2 {
		h2.tick(map[string]reporting.State{"eu": U, "us": U})
	}
	got = h2.hook.webhooks(t)
	if len(got) != 1 || got[0].Alerts[0].Summary != "asset × origin-a down in 2 regions (eu, us): connect_refused "+
		"(dial tcp 10.0.0.1:443: connection refused)" {
		t.Fatalf("one cause: %+v", got)
	}
}

func TestFmtTTFB(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{20 * time.Microsecond, "<0.1ms"},
		{440 * time.Microsecond, "0.4ms"},
		{960 * time.Microsecond, "1ms"},
		{120 * time.Millisecond, "120ms"},
		{1234567 * time.Microsecond, "1.235s"},
	} {
		if got := fmtTTFB(tc.d); got != tc.want {
			t.Errorf("fmtTTFB(%s) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
