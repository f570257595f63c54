package proxy

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// getOrigins reads GET /api/v1/origins from the admin API.
func (rp *statefulProxy) getOrigins(t *testing.T) []OriginStatus {
	t.Helper()
	resp, err := http.Get(rp.admin + "/api/v1/origins")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []OriginStatus
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRedrainKeepsSinceAndBy: draining an origin that is already drained
// keeps since (the first drain's time), and replaces why and drained_by only
// with the values given: a re-drain without ?by= keeps who drained it (was:
// dropped it), one without ?why= keeps the reason (was: reset to "drained by
// admin"). The result survives a restart.
func TestRedrainKeepsSinceAndBy(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	dir := t.TempDir()
	cfg := pool1(PolicyRoundRobin, urls(a, b)...)
	cfg.AdminToken = "s3cret"
	rp := runStateful(t, cfg, dir)

	if code := rp.post(t, "/api/v1/origins/o0/drain?why=deploy&by=alice"); code != 200 {
		t.Fatalf("drain: %d", code)
	}
	since := rp.getOrigins(t)[0].Since["drained"]
	time.Sleep(20 * time.Millisecond)
	check := func(step, why, by string, st OriginStatus) {
		t.Helper()
		if !st.Drained || st.Why["drained"] != why || st.DrainedBy != by || !st.Since["drained"].Equal(since) {
			t.Errorf("%s: drained %v, why %q, drained_by %q, since %v; want why %q, drained_by %q, since %v",
				step, st.Drained, st.Why["drained"], st.DrainedBy, st.Since["drained"], why, by, since)
		}
	}
	for _, step := range []struct{ query, why, by string }{
		{"?why=disk+swap", "disk swap", "alice"},
		{"?by=bob", "disk swap", "bob"},
		{"", "disk swap", "bob"},
		{"?why=rack+move&by=carol", "rack move", "carol"},
	} {
		if code := rp.post(t, "/api/v1/origins/o0/drain"+step.query); code != 200 {
			t.Fatalf("re-drain %q: %d", step.query, code)
		}
		check("re-drain "+step.query, step.why, step.by, rp.getOrigins(t)[0])
	}
	if got := rp.log.String(); !strings.Contains(got, `msg="proxy: origin drain reason changed" pool=web origin=o0 why="disk swap" by=alice`) {
		t.Errorf("no log line for the re-drain naming the kept by:\n%s", got)
	}
	rp.stop()

	again := runStateful(t, cfg, dir)
	check("after a restart", "rack move", "carol", again.getOrigins(t)[0])
	// A first drain without ?why= gets the default reason.
	if code := again.post(t, "/api/v1/origins/o1/drain"); code != 200 {
		t.Fatalf("drain o1: %d", code)
	}
	if st := again.getOrigins(t)[1]; st.Why["drained"] != "drained by admin" || st.DrainedBy != "" {
		t.Errorf("drain without why or by: why %q, drained_by %q; want %q and none", st.Why["drained"], st.DrainedBy, "drained by admin")
	}
}
