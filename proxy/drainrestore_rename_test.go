package proxy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDrainRestoredAfterPoolRename: a drain is by origin name, and a
// reload that renames the origin's pool keeps it; a restart on a config
// whose pool was renamed used to drop it ("dropped a saved drain: the
// origin is no longer in the config", though the origin was there with
// the same URL) and delete it from the drains file. It is restored now,
// by name, as a reload does, also when the origin's URL changed, and the
// file then holds it under its new pool. An origin of the same name in a
// pool not renamed (drained by the same admin call) is restored from its
// own saved drain, and logged once.
func TestDrainRestoredAfterPoolRename(t *testing.T) {
	a, b, c := newBackend(t, "a"), newBackend(t, "b"), newBackend(t, "c")
	dir := t.TempDir()
	withOther := func(cfg Config) Config {
		cfg.AdminToken = "s3cret"
		cfg.Pools = append(cfg.Pools, PoolConfig{Name: "other", Hosts: []string{"internal.example.com"},
			Origins: []OriginConfig{{Target: "o0", URL: a.srv.URL}}})
		return cfg
	}
	cfg := withOther(pool1(PolicyRoundRobin, urls(a, b)...))
	first := runStateful(t, cfg, dir)
	if code := first.post(t, "/api/v1/origins/o0/drain?why=disk+swap&by=alice"); code != 200 {
		t.Fatalf("drain: %d", code)
	}
	first.stop()

	check := func(rp *statefulProxy, step, pool, url string) {
		t.Helper()
		st := rp.p.Origins()
		if !st[0].Drained || st[0].Pool != pool || st[0].Why["drained"] != "disk swap" || st[0].DrainedBy != "alice" || st[1].Drained || !st[2].Drained {
			t.Fatalf("%s: %+v, want o0 drained by alice for \"disk swap\", o1 not", step, st)
		}
		for i := 0; i < 4; i++ {
			if body := rp.get(t); body != "ok b" {
				t.Fatalf("%s: request %d reached %q, want only b (o0 is drained)", step, i, body)
			}
		}
		l := rp.log.String()
		if strings.Contains(l, "dropped a saved drain") || !strings.Contains(l, "restored a drain saved before the restart (the origin's pool, URL or name changed)") ||
			!strings.Contains(l, "pool="+pool) || !strings.Contains(l, "was_pool=web") {
			t.Fatalf("%s: want a log line restoring o0's drain under pool %s, was web:\n%s", step, pool, l)
		}
		if n := strings.Count(l, "restored a drain saved before the restart"); n != 2 {
			t.Fatalf("%s: %d lines restoring a drain, want 2 (o0 in %s and in other):\n%s", step, n, pool, l)
		}
		raw, err := os.ReadFile(filepath.Join(dir, drainsFile))
		if err != nil {
			t.Fatal(err)
		}
		var doc drainsDoc
		if err := json.Unmarshal(raw, &doc); err != nil || len(doc.Drains) != 2 || doc.Drains[0].Pool != pool || doc.Drains[0].Origin != "o0" || doc.Drains[0].URL != url || doc.Drains[1].Pool != "other" {
			t.Fatalf("%s: drains file %s (%v), want o0 under pool %s at %s", step, raw, err, pool, url)
		}
	}

	renamed := withOther(pool1(PolicyRoundRobin, urls(a, b)...))
	renamed.Pools[0].Name = "web3"
	second := runStateful(t, renamed, dir)
	check(second, "pool renamed", "web3", a.srv.URL)
	second.stop()

	// Pool renamed back and o0 moved to another URL while stopped.
	moved := withOther(pool1(PolicyRoundRobin, urls(c, b)...))
	moved.Pools[0].Name = "web4"
	third := runStateful(t, moved, dir)
	st := third.p.Origins()
	if !st[0].Drained || st[0].URL != c.srv.URL {
		t.Fatalf("o0 at a new URL in a renamed pool: %+v, want drained", st[0])
	}
	if l := third.log.String(); !strings.Contains(l, "was_url="+a.srv.URL) || !strings.Contains(l, "was_pool=web3") {
		t.Fatalf("no log line naming the old pool and URL:\n%s", l)
	}
}
