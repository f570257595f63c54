package alerting

import (
	"testing"

	"github.com/vigil-synthetics/vigil/reporting"
)

// A check only one region judges (a push check with push.region) alerts
// from that region alone under alerting.quorum 2; another check failing in
// one region still does not. Was: its down alert could never fire.
func TestOneRegionCheckNeedsOneRegion(t *testing.T) {
	for _, c := range []struct {
		name      string
		oneRegion []string
		want      int
	}{
		{"one-region check", []string{"asset"}, 1},
		{"other check", []string{"backup"}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, t0, Config{Quorum: 2, StatusPageURL: "http://127.0.0.1:9470"}, nil)
			h.a.SetOneRegion(c.oneRegion)
			for range 10 {
				h.tick(map[string]reporting.State{"eu": H})
			}
			for range 8 { // 2 minutes: past down.for (1m)
				h.tick(map[string]reporting.State{"eu": U})
			}
			got := h.hook.webhooks(t)
			if len(got) != c.want {
				t.Fatalf("eu alone unhealthy for 2m, quorum 2: %d notifications, want %d: %+v", len(got), c.want, got)
			}
			if c.want == 1 && (got[0].Rule != RuleDown || got[0].Status != StatusFiring || got[0].Check != "asset") {
				t.Fatalf("notification: %+v", got[0])
			}
			if c.want == 1 {
				t.Logf("summary: %s", got[0].Alerts[0].Summary)
			}
		})
	}
}
