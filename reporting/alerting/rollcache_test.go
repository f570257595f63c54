package alerting

import (
	"context"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

func TestRollupCacheMatchesStore(t *testing.T) {
	clock := &fakeClock{t: t0}
	mem := &memStore{clock: clock.Now}
	var vs []reporting.Verdict
	for m := t0.Add(-7 * time.Hour); m.Before(t0.Add(2 * time.Hour)); m = m.Add(20 * time.Second) {
		for i, r := range []string{"eu", "us"} {
			st := H
			if (m.Minute()+i)%7 == 0 {
				st = U
			}
			vs = append(vs, verdict("asset", "origin-a", r, m, st, 20*time.Second))
		}
	}
	mem.add(vs...)
	rc := rollupCaches{}
	ctx := context.Background()
	for now := t0; now.Before(t0.Add(2 * time.Hour)); now = now.Add(15 * time.Second) {
		clock.Set(now)
		got, err := rc.fetch(ctx, mem, "asset", "origin-a", now.Add(-6*time.Hour), now)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := mem.Rollups(ctx, reporting.HistoryQuery{Check: "asset", Target: "origin-a", From: now.Add(-6 * time.Hour), To: now})
		sortRollups(want)
		if !sameRollups(got, want) {
			t.Fatalf("at %s: cached %d rollups, store %d", now.Format(time.TimeOnly), len(got), len(want))
		}
	}

	// A verdict that arrives 10 minutes late is seen at the next full refresh.
	count := func(now time.Time) int {
		clock.Set(now)
		got, err := rc.fetch(ctx, mem, "asset", "origin-a", now.Add(-6*time.Hour), now)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range got {
			if r.Region == "ap" {
				n++
			}
		}
		return n
	}
	clear(rc)
	now := clock.Add(15 * time.Second)
	count(now) // full read
	mem.add(verdict("asset", "origin-a", "ap", now.Add(-10*time.Minute), U, 20*time.Second))
	if n := count(now.Add(15 * time.Second)); n != 0 {
		t.Fatalf("late verdict seen before the refresh: %d (cache not used?)", n)
	}
	if n := count(now.Add(rollupRefresh)); n != 1 {
		t.Fatalf("late verdict after a full refresh: %d ap rollups, want 1", n)
	}
}

func sameRollups(a, b []reporting.Rollup) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if !x.Minute.Equal(y.Minute) {
			return false
		}
		x.Minute, y.Minute = time.Time{}, time.Time{}
		if x != y {
			return false
		}
	}
	return true
}
