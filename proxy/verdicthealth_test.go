package proxy

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// A proxy whose canary stops answering says so in VerdictHealth until reads
// succeed again.
func TestVerdictHealthTracksUnreadableSource(t *testing.T) {
	a := newBackend(t, "a")
	var down atomic.Bool
	canary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "gone", http.StatusBadGateway)
			return
		}
		json.NewEncoder(w).Encode([]reporting.Verdict{})
	}))
	defer canary.Close()
	cfg := pool1(PolicyRoundRobin, urls(a)...)
	cfg.VerdictPoll = 20 * time.Millisecond
	src := HTTPSource(canary.URL, &http.Client{Timeout: time.Second})
	h := start(t, cfg, src, true)
	time.Sleep(60 * time.Millisecond)
	if err := h.p.VerdictHealth(); err != nil {
		t.Fatalf("readable source: VerdictHealth = %v", err)
	}
	down.Store(true)
	var first string
	eventually(t, "VerdictHealth reports the failing source", func() bool {
		if err := h.p.VerdictHealth(); err != nil {
			first = err.Error()
			return true
		}
		return false
	})
	want := "from " + canary.URL + "/api/v1/verdicts: "
	if !strings.HasPrefix(first, "verdicts unreadable since ") || !strings.Contains(first, want) || !strings.Contains(first, "status 502") {
		t.Fatalf("VerdictHealth = %q, want \"verdicts unreadable since T %s… status 502\"", first, want)
	}
	time.Sleep(60 * time.Millisecond) // more failed reads: "since" stays put
	if got := h.p.VerdictHealth(); got == nil || got.Error() != first {
		t.Fatalf("after more failures VerdictHealth = %v, want unchanged %q", got, first)
	}
	down.Store(false)
	eventually(t, "VerdictHealth clears when reads succeed", func() bool { return h.p.VerdictHealth() == nil })
}

// A canary that is gone altogether (connection refused) is reported too.
func TestVerdictHealthSourceGone(t *testing.T) {
	a := newBackend(t, "a")
	canary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode([]reporting.Verdict{})
	}))
	cfg := pool1(PolicyRoundRobin, urls(a)...)
	cfg.VerdictPoll = 20 * time.Millisecond
	h := start(t, cfg, HTTPSource(canary.URL, &http.Client{Timeout: time.Second}), true)
	canary.Close()
	eventually(t, "VerdictHealth reports the stopped canary", func() bool {
		err := h.p.VerdictHealth()
		return err != nil && strings.Contains(err.Error(), "from "+canary.URL+"/api/v1/verdicts: ")
	})
}

// Canary answers, set by a test.
const (
	canaryOK   = iota // the verdicts
	canary503         // 503
	canaryHang        // never answers (until the test ends)
)

// verdictCanary is a canary's GET /api/v1/verdicts on a real socket. verdicts
// builds each answer (nil: an empty list); lastAt is the newest At served.
type verdictCanary struct {
	srv      *httptest.Server
	url      string // the verdicts URL as the proxy names it
	mode     atomic.Int32
	verdicts func() []reporting.Verdict
	lastAt   atomic.Int64 // Unix nanoseconds
	done     chan struct{}
}

func newVerdictCanary(t *testing.T, verdicts func() []reporting.Verdict) *verdictCanary {
	t.Helper()
	c := &verdictCanary{verdicts: verdicts, done: make(chan struct{})}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch c.mode.Load() {
		case canary503:
			http.Error(w, "canary broken", http.StatusServiceUnavailable)
			return
		case canaryHang:
			select {
			case <-r.Context().Done():
			case <-c.done:
			}
			return
		}
		vs := []reporting.Verdict{}
		if c.verdicts != nil {
			vs = c.verdicts()
		}
		for _, v := range vs {
			if n := v.At.UnixNano(); n > c.lastAt.Load() {
				c.lastAt.Store(n)
			}
		}
		json.NewEncoder(w).Encode(vs)
	}))
	c.url = c.srv.URL + "/api/v1/verdicts"
	t.Cleanup(func() { close(c.done); c.srv.Close() })
	return c
}

// source is the canary as the proxy reads it (vigil proxy --verdicts-from).
func (c *verdictCanary) source() reporting.Source {
	return HTTPSource(c.srv.URL, &http.Client{Timeout: 300 * time.Millisecond})
}

// TestVerdictSourcesOneDead: with two canaries, one that refuses, answers
// 5xx or times out is listed as a warning ("failing since T, last error E")
// while VerdictHealth stays nil and the proxy serves; its
// vigil_proxy_verdict_source_up is 0 and its last-success time stops. When
// the second canary dies too, VerdictHealth names both.
func TestVerdictSourcesOneDead(t *testing.T) {
	for _, tc := range []struct {
		name  string
		kill  func(c *verdictCanary)
		error string // in the warning's last error
	}{
		{"refused", func(c *verdictCanary) { c.srv.Close() }, "connection refused"},
		{"status 503", func(c *verdictCanary) { c.mode.Store(canary503) }, "status 503"},
		{"timeout", func(c *verdictCanary) { c.mode.Store(canaryHang) }, "Client.Timeout exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newBackend(t, "a")
			eu, us := newVerdictCanary(t, nil), newVerdictCanary(t, nil)
			cfg := pool1(PolicyRoundRobin, urls(a)...)
			cfg.VerdictPoll = 20 * time.Millisecond
			h := start(t, cfg, Sources{eu.source(), us.source()}, true)
			up := func(c *verdictCanary) float64 {
				v, ok := h.metric("vigil_proxy_verdict_source_up", map[string]string{"source": c.url})
				if !ok {
					t.Fatalf("no vigil_proxy_verdict_source_up{source=%q}", c.url)
				}
				return v
			}
			lastOK := func(c *verdictCanary) float64 {
				v, ok := h.metric("vigil_proxy_verdict_source_last_success_timestamp_seconds", map[string]string{"source": c.url})
				if !ok {
					t.Fatalf("no vigil_proxy_verdict_source_last_success_timestamp_seconds{source=%q}", c.url)
				}
				return v
			}
			eventually(t, "both sources up", func() bool { return up(eu) == 1 && up(us) == 1 })
			if ts := lastOK(us); time.Since(time.Unix(int64(ts), 0)) > time.Minute {
				t.Fatalf("last success of a readable source = %v, want about now", ts)
			}

			tc.kill(us)
			var warns []string
			eventually(t, "a warning for the dead canary", func() bool {
				warns, _ = h.p.VerdictReport()
				return len(warns) > 0
			})
			if len(warns) != 1 {
				t.Fatalf("warnings = %q, want one, for %s", warns, us.url)
			}
			w := warns[0]
			prefix := "verdict source " + us.url + " failing since "
			if !strings.HasPrefix(w, prefix) || !strings.Contains(w, ", last error: ") || !strings.Contains(w, tc.error) ||
				!strings.HasSuffix(w, "(1 of 2 verdict sources answer)") {
				t.Fatalf("warning = %q, want %q T, last error: …%s… (1 of 2 verdict sources answer)", w, prefix, tc.error)
			}
			since, _, _ := strings.Cut(strings.TrimPrefix(w, prefix), ",")
			if ts, err := time.Parse(time.RFC3339, since); err != nil || time.Since(ts) > time.Minute {
				t.Fatalf("warning's since = %q (%v), want an RFC 3339 time about now", since, err)
			}
			if err := h.p.VerdictHealth(); err != nil {
				t.Fatalf("one canary of two dead: VerdictHealth = %v, want nil (a warning)", err)
			}
			if up(us) != 0 || up(eu) != 1 {
				t.Fatalf("vigil_proxy_verdict_source_up: dead %v, alive %v; want 0 and 1", up(us), up(eu))
			}
			deadOK, aliveOK := lastOK(us), lastOK(eu)
			eventually(t, "the live canary's last success moves on", func() bool { return lastOK(eu) > aliveOK })
			if got := lastOK(us); got != deadOK {
				t.Fatalf("the dead canary's last success moved from %v to %v", deadOK, got)
			}
			if warns, _ := h.p.VerdictReport(); len(warns) != 1 || !strings.HasPrefix(warns[0], prefix+since+",") {
				t.Fatalf("after more failed reads warnings = %q, want since unchanged (%s)", warns, since)
			}
			if code, body, _ := h.do("GET", "/", ""); code != 200 || body != "ok a" {
				t.Fatalf("GET / with one canary dead = %d %q, want 200 \"ok a\"", code, body)
			}

			eu.srv.Close()
			var err error
			eventually(t, "VerdictHealth once both canaries are dead", func() bool {
				err = h.p.VerdictHealth()
				return err != nil
			})
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != 2 {
				t.Fatalf("VerdictHealth = %q, want one line per source", err)
			}
			for i, c := range []*verdictCanary{eu, us} {
				if !strings.HasPrefix(lines[i], "verdicts unreadable since ") || !strings.Contains(lines[i], " from "+c.url+": ") {
					t.Errorf("VerdictHealth line %d = %q, want \"verdicts unreadable since T from %s: …\"", i, lines[i], c.url)
				}
			}
			if warns, _ := h.p.VerdictReport(); len(warns) != 0 {
				t.Errorf("all sources dead: warnings = %q, want none (VerdictHealth reports them)", warns)
			}
		})
	}
}

// TestVerdictsOfDeadCanaryAgeOut: an origin ejected only by the verdicts of
// a canary that then dies stays out while those verdicts are fresh and comes
// back once they are older than max_age, though the canary never answers
// again and the other canary keeps answering.
func TestVerdictsOfDeadCanaryAgeOut(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	// Long enough that the checks while the dead canary's verdict is fresh
	// run well inside max_age on a loaded machine; short enough that its
	// return fits eventually's 10s.
	const maxAge = 4 * time.Second
	verdict := func(region string, state reporting.State) func() []reporting.Verdict {
		return func() []reporting.Verdict {
			now := time.Now()
			return []reporting.Verdict{{Check: "home", Target: "o0", Region: region, State: state,
				OK: state == reporting.StateHealthy, At: now, Expires: now.Add(time.Hour)}}
		}
	}
	eu := newVerdictCanary(t, verdict("eu", reporting.StateHealthy))
	us := newVerdictCanary(t, verdict("us", reporting.StateUnhealthy))
	cfg := pool1(PolicyRoundRobin, urls(a, b)...)
	cfg.VerdictPoll = 20 * time.Millisecond
	cfg.Pools[0].Verdicts.MaxAge = maxAge
	h := start(t, cfg, Sources{eu.source(), us.source()}, true)
	available := func() float64 {
		v, ok := h.metric("vigil_proxy_origin_available", map[string]string{"pool": "web", "origin": "o0"})
		if !ok {
			t.Fatal("no vigil_proxy_origin_available{origin=o0}")
		}
		return v
	}
	eventually(t, "o0 out by the us canary's verdict", func() bool { return available() == 0 })

	us.srv.Close()
	killed := time.Now()
	lastAt := time.Unix(0, us.lastAt.Load())
	eventually(t, "the dead canary reported", func() bool { warns, _ := h.p.VerdictReport(); return len(warns) == 1 })
	if since := time.Since(killed); since >= maxAge/2 {
		t.Fatalf("the dead canary was reported only %v after it died (max_age %v): too late to check that o0 stays out while its verdict is fresh", since, maxAge)
	}
	if available() != 0 {
		t.Fatalf("o0 back %v after the canary died, before its verdict (max_age %v) went stale", time.Since(killed), maxAge)
	}
	for i := 0; i < 4; i++ {
		if code, body, _ := h.do("GET", "/", ""); code != 200 || body != "ok b" {
			t.Fatalf("GET / with o0 out = %d %q, want 200 \"ok b\"", code, body)
		}
	}

	eventually(t, "o0 back once the dead canary's verdict is older than max_age", func() bool { return available() == 1 })
	back := time.Now()
	// The wire form may round At down by under a millisecond.
	if stale := lastAt.Add(maxAge - time.Millisecond); back.Before(stale) {
		t.Fatalf("o0 back at %v, before the dead canary's last verdict (at %v) passed max_age %v",
			back.Format(time.RFC3339Nano), lastAt.Format(time.RFC3339Nano), maxAge)
	}
	eventually(t, "GET / reaches o0 again", func() bool {
		code, body, _ := h.do("GET", "/", "")
		return code == 200 && body == "ok a"
	})
	if err := h.p.VerdictHealth(); err != nil {
		t.Fatalf("VerdictHealth = %v, want nil (the eu canary answers)", err)
	}
}
