package main

import (
	"strings"
	"testing"
)

// TestMaxAgeShorterThanCheckGapRefused: a pool whose verdicts.max_age is
// shorter than the longest gap between two verdicts of a check it counts
// (interval + jitter + timeout + verdict_poll) is refused naming the key,
// the check and the least max_age: the origin would drift back into service
// between runs. Checks the pool does not count, checks of other targets,
// cron checks and a long enough max_age pass.
func TestMaxAgeShorterThanCheckGapRefused(t *testing.T) {
	const base = `targets: [{name: a, url: "http://127.0.0.1:9"}, {name: b, url: "http://127.0.0.1:10"}]
checks:
  - {name: asset, targets: [a], interval: 60s, timeout: 5s, http: {}}
  - {name: other, targets: [b], interval: 5m, http: {}}
  - {name: nightly, targets: [a], cron: "0 3 * * *", http: {}}
  - {name: slow, targets: [a], interval: 10m, tier: synthetic, http: {}}
`
	_, path, err := loadText(t, base+`proxy: {pools: [{name: web, origins: [{target: a}], verdicts: {checks: [asset, nightly]}}]}
`, nil)
	want := path + `: proxy.pools[0].verdicts.max_age: 1m0s is shorter than the longest gap between two verdicts of check "asset" (interval 1m0s + jitter 6s + timeout 5s + verdict_poll 2s = 1m13s): between its runs the verdict would be stale and an origin it fails would return to service; set max_age to at least 1m14s`
	if err != want {
		t.Errorf("error:\n got %s\nwant %s", err, want)
	}
	// Every check counts when the pool names none: "slow" (10m) too.
	if _, _, err := loadText(t, base+`proxy: {pools: [{name: web, origins: [{target: a}], verdicts: {max_age: 2m}}]}
`, nil); !strings.Contains(err, `check "slow"`) || strings.Contains(err, `check "asset"`) || strings.Contains(err, `check "other"`) {
		t.Errorf("pool counting every check, max_age 2m: %s; want only slow refused", err)
	}
	for _, ok := range []string{
		`proxy: {pools: [{name: web, origins: [{target: a}], verdicts: {checks: [asset], max_age: 80s}}]}`,
		`proxy: {pools: [{name: web, origins: [{target: a}], verdicts: {tiers: [deep], max_age: 80s}}]}`,
		`proxy: {pools: [{name: web, origins: [{target: b}], verdicts: {checks: [asset]}}]}`,
	} {
		if _, _, err := loadText(t, base+ok+"\n", nil); err != "" {
			t.Errorf("%s: %s", ok, err)
		}
	}
}
