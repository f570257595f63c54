package proxy

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// pathOrigin is an origin whose /broken answers 500 and every other path
// 200 "ok NAME", counting the requests it served.
type pathOrigin struct {
	srv  *httptest.Server
	hits atomic.Int64
}

func newPathOrigin(t *testing.T, name string) *pathOrigin {
	t.Helper()
	po := &pathOrigin{}
	po.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.Header.Get("User-Agent") != probeUserAgent {
			po.hits.Add(1)
		}
		if r.URL.Path == "/broken" {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		io.WriteString(w, "ok "+name)
	}))
	t.Cleanup(po.srv.Close)
	return po
}

// originsByName reads GET /api/v1/origins from a real admin listener.
func originsByName(t *testing.T, url string) map[string]OriginStatus {
	t.Helper()
	resp, err := http.Get(url + "/api/v1/origins")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st []OriginStatus
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	out := map[string]OriginStatus{}
	for _, s := range st {
		out[s.Name] = s
	}
	return out
}

// TestMaxEjectedVerdictOutranksPassive: POSTs to a URL that answers 5xx
// (anyone can send them) get a healthy origin passively ejected; when the
// verdicts then find another origin down, max_ejected (50% of 3: one
// origin) used to keep that broken origin in service ("not taken out:
// max_ejected 50% reached") and it kept a third of the traffic. A verdict
// ejection now outranks a passive one: the passively ejected origin
// returns early (logged, and named in the verdict-down origin's why), and
// the client's 5xx cannot take the place back. A verdict does not take the
// place of another verdict.
func TestMaxEjectedVerdictOutranksPassive(t *testing.T) {
	po := []*pathOrigin{newPathOrigin(t, "a"), newPathOrigin(t, "b"), newPathOrigin(t, "c")}
	var us []string
	for _, o := range po {
		us = append(us, o.srv.URL)
	}
	cfg := pool1(PolicyRoundRobin, us...)
	cfg.Pools[0].Passive = PassiveConfig{Consecutive5xx: 3, Ejection: time.Minute}
	cfg.Pools[0].Verdicts = VerdictConfig{Checks: []string{"healthz"}, Quorum: 1, MaxAge: time.Minute}
	logs := &tryLogs{}
	h := startLog(t, cfg, nil, false, testEngine(), slog.New(slog.NewTextHandler(logs, nil)))
	admin := httptest.NewServer(h.p.AdminHandler())
	defer admin.Close()
	pl := h.pool("web")

	// Broken POSTs (not retried) until one origin is passively ejected.
	for i := 0; i < 30 && pl.ejectedCount() == 0; i++ {
		h.do("POST", "/broken", "x")
	}
	// More of them: the passive rule is refused on the other two.
	for i := 0; i < 9; i++ {
		h.do("POST", "/broken", "x")
	}
	var victim string
	for name, s := range originsByName(t, admin.URL) {
		if s.PassiveEjected {
			victim = name
		}
	}
	if victim == "" || victim == "o1" {
		// Round robin over three: o0 reaches 3 failures first.
		t.Fatalf("passively ejected: %q, want o0 or o2 (%v)", victim, originsByName(t, admin.URL))
	}

	// The canary finds o1 down.
	now := time.Now()
	down := []reporting.Verdict{verdict("o1", "healthz", "eu", reporting.StateUnhealthy, now)}
	pl.applyVerdicts(down, now)
	st := originsByName(t, admin.URL)
	if !st["o1"].VerdictDown || st["o1"].EjectionRefused != "" {
		t.Fatalf("o1 verdict_down=%v ejection_refused=%q, want taken out by its verdict", st["o1"].VerdictDown, st["o1"].EjectionRefused)
	}
	if st[victim].PassiveEjected || !st[victim].Available {
		t.Fatalf("%s still passively ejected: %+v, want returned for o1's verdict", victim, st[victim])
	}
	wantWhy := "took the max_ejected 50% place of " + victim + ", whose passive ejection (consecutive_5xx) ended early"
	if why := st["o1"].Why["verdict"]; !strings.HasPrefix(why, "unhealthy in 1 region(s), quorum 1: eu: healthz (status)") || !strings.HasSuffix(why, wantWhy) {
		t.Errorf("o1 why.verdict %q, want the verdict, then %q", why, wantWhy)
	}
	if len(logs.lines("passive ejection ended early", "origin="+victim, "passive=consecutive_5xx", "for=o1")) != 1 {
		t.Errorf("want one log line for %s's early return:\n%s", victim, logs.String())
	}
	get := func(step string) {
		t.Helper()
		po[1].hits.Store(0)
		for i := 0; i < 6; i++ {
			if code, body, _ := h.do("GET", "/", ""); code != 200 {
				t.Fatalf("%s: GET %d: %d %s", step, i, code, body)
			}
		}
		if n := po[1].hits.Load(); n != 0 {
			t.Errorf("%s: the verdict-down o1 served %d of 6 GETs", step, n)
		}
	}
	get("after the verdict")

	// More broken POSTs: the passive rule is refused now, o1 stays out.
	for i := 0; i < 12; i++ {
		h.do("POST", "/broken", "x")
	}
	pl.applyVerdicts(down, time.Now())
	st = originsByName(t, admin.URL)
	if !st["o1"].VerdictDown || st["o0"].PassiveEjected || st["o2"].PassiveEjected {
		t.Fatalf("after more broken POSTs: o0 %+v\no1 %+v\no2 %+v", st["o0"], st["o1"], st["o2"])
	}
	if r := st[victim].EjectionRefused + st["o0"].EjectionRefused + st["o2"].EjectionRefused; !strings.Contains(r, "not taken out: max_ejected 50% reached: passive: consecutive_5xx") {
		t.Errorf("ejection_refused %q, want the passive rule refused", r)
	}
	get("after more broken POSTs")
	if r := st["o1"].EjectionRefused; r != "" {
		t.Errorf("o1, out by its verdict, shows ejection_refused %q", r)
	}

	// A second verdict-down origin finds no passive place to take.
	now = time.Now()
	both := append(down, verdict("o2", "healthz", "eu", reporting.StateUnhealthy, now))
	pl.applyVerdicts(both, now)
	st = originsByName(t, admin.URL)
	if !st["o1"].VerdictDown || st["o2"].VerdictDown || !strings.HasPrefix(st["o2"].EjectionRefused, "not taken out: max_ejected 50% reached: verdicts: unhealthy in 1 region(s), quorum 1: eu: healthz") {
		t.Fatalf("second verdict: o1 verdict_down=%v, o2 verdict_down=%v refused %q; want o1 out, o2 kept by max_ejected",
			st["o1"].VerdictDown, st["o2"].VerdictDown, st["o2"].EjectionRefused)
	}
}
