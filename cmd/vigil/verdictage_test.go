package main

import (
	"strings"
	"testing"
)

// TestMaxAgeShorterThanCheckGapWarned: a pool whose verdicts.max_age is
// shorter than the longest gap between two verdicts of a check it counts
// (interval + jitter + timeout + verdict_poll) is warned about by vigil
// validate (exit 0), naming the key, the check, the least max_age and the
// other way out: between runs the origin would drift back into service.
// Checks the pool does not count, checks of other targets, cron checks and
// a long enough max_age say nothing.
func TestMaxAgeShorterThanCheckGapWarned(t *testing.T) {
	const base = `targets: [{name: a, url: "http://127.0.0.1:9"}, {name: b, url: "http://127.0.0.1:10"}]
checks:
  - {name: asset, targets: [a], interval: 60s, timeout: 5s, http: {}}
  - {name: other, targets: [b], interval: 5m, http: {}}
  - {name: nightly, targets: [a], cron: "0 3 * * *", http: {}}
  - {name: slow, targets: [a], interval: 10m, tier: synthetic, http: {}}
`
	cfg := writeConfig(t, base+"proxy: {pools: [{name: web, origins: [{target: a}], verdicts: {checks: [asset, nightly]}}]}\n")
	out, code := runCLI(t, "validate", "-c", cfg)
	want := "ok\nwarning: " + cfg + `:7:53: proxy.pools[0].verdicts.max_age: 1m0s is shorter than the longest gap between two verdicts of check "asset" (interval 1m0s + jitter 6s + timeout 5s + verdict_poll 2s = 1m13s): between its runs the verdict is stale and an origin it fails returns to service until the next run; set max_age to at least 1m14s, or leave the check out of the pool's verdicts.checks/tiers (a long max_age also keeps a stopped canary's verdicts counting that long)`
	if code != 0 || strings.TrimSpace(out) != want {
		t.Errorf("exit %d:\n%s\nwant exit 0:\n%s", code, out, want)
	}
	// Every check counts when the pool names none: "slow" (10m) too.
	cfg = writeConfig(t, base+"proxy: {pools: [{name: web, origins: [{target: a}], verdicts: {max_age: 2m}}]}\n")
	if out, code := runCLI(t, "validate", "-c", cfg); code != 0 || !strings.Contains(out, `check "slow"`) || strings.Contains(out, `check "asset"`) || strings.Contains(out, `check "other"`) {
		t.Errorf("pool counting every check, max_age 2m: exit %d: %s; want only slow warned about", code, out)
	}
	for _, ok := range []string{
		`proxy: {pools: [{name: web, origins: [{target: a}], verdicts: {checks: [asset], max_age: 80s}}]}`,
		`proxy: {pools: [{name: web, origins: [{target: a}], verdicts: {tiers: [deep], max_age: 80s}}]}`,
	} {
		if out, code := runCLI(t, "validate", "-c", writeConfig(t, base+ok+"\n")); code != 0 || strings.TrimSpace(out) != "ok" {
			t.Errorf("%s: exit %d: %s", ok, code, out)
		}
	}
	// A counted check of another target: no max_age warning (it is warned
	// about as running on none of the pool's origins, see
	// TestPoolCheckOnOtherTargetsWarned).
	other := `proxy: {pools: [{name: web, origins: [{target: b}], verdicts: {checks: [asset]}}]}`
	if out, code := runCLI(t, "validate", "-c", writeConfig(t, base+other+"\n")); code != 0 || strings.Contains(out, "max_age") {
		t.Errorf("%s: exit %d: %s", other, code, out)
	}
}
