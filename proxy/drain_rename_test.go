package proxy

import (
	"log/slog"
	"testing"
)

// TestDrainKeptAcrossPoolRenameAndURLChange: a drain is by origin name (the
// admin API drains a name in every pool), so a reload that renames the
// origin's pool or changes its URL keeps it drained (it used to end the
// drain silently); a reload removing the origin drops the drain with a
// warning naming it.
func TestDrainKeptAcrossPoolRenameAndURLChange(t *testing.T) {
	a, b, c := newBackend(t, "a"), newBackend(t, "b"), newBackend(t, "c")
	logs := &tryLogs{}
	h := startLog(t, pool1(PolicyRoundRobin, urls(a, b)...), nil, false, testEngine(), slog.New(slog.NewTextHandler(logs, nil)))
	if !h.p.Drain("o0", "disk swap") {
		t.Fatal("drain o0 failed")
	}
	served := func(step string) {
		t.Helper()
		a.hits.Store(0)
		c.hits.Store(0)
		for i := 0; i < 6; i++ {
			if code, body, _ := h.do("GET", "/", ""); code != 200 {
				t.Fatalf("%s: %d %s", step, code, body)
			}
		}
		if n := a.hits.Load() + c.hits.Load(); n != 0 {
			t.Errorf("%s: the drained origin o0 served %d of 6 requests", step, n)
		}
		st := h.p.Origins()
		if !st[0].Drained || st[0].Why["drained"] != "disk swap" {
			t.Errorf("%s: o0 drained=%v why=%q, want drained with its reason", step, st[0].Drained, st[0].Why["drained"])
		}
	}
	renamed := pool1(PolicyRoundRobin, urls(a, b)...)
	renamed.Pools[0].Name = "web2"
	if err := h.p.Reload(renamed); err != nil {
		t.Fatal(err)
	}
	served("pool renamed")
	moved := pool1(PolicyRoundRobin, urls(c, b)...)
	moved.Pools[0].Name = "web2"
	if err := h.p.Reload(moved); err != nil {
		t.Fatal(err)
	}
	served("o0's URL changed")
	if len(logs.lines("drain kept across the reload", "origin=o0")) != 2 {
		t.Errorf("want one log line per reload that kept the drain:\n%s", logs.String())
	}
	gone := pool1(PolicyRoundRobin, b.srv.URL)
	gone.Pools[0].Origins[0].Target = "o1"
	if err := h.p.Reload(gone); err != nil {
		t.Fatal(err)
	}
	if len(logs.lines("dropped a drain: the origin is no longer in the config", "origin=o0", `why="disk swap"`)) != 1 {
		t.Errorf("no warning for the drain the reload dropped:\n%s", logs.String())
	}
}
