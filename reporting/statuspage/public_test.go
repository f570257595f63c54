package statuspage

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// TestPublicPage: the public page shows the listed checks only, by their
// public names, with a customer's state words, uptime and a bar of daily
// uptime, and nothing of targets, regions, URLs, error texts or the
// unlisted checks; it serves no other page of the status page; a reload
// (conf) changes what it shows at once.
func TestPublicPage(t *testing.T) {
	st, err := store.Open(t.TempDir(), store.Options{Now: func() time.Time { return t0 }, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	secret := func(v reporting.Verdict) reporting.Verdict {
		v.URL = "https://origin-fra-7.internal.example/admin"
		if !v.OK {
			v.Err = "connection refused by 10.9.8.7:443"
		}
		return v
	}
	var vs []reporting.Verdict
	vs = append(vs, runs("web", "origin-fra-7", "region-zz", 2*24*time.Hour, 10, 5)...) // 2 days ago: 5 of 10 failed
	vs = append(vs, runs("web", "origin-fra-7", "region-zz", time.Hour, 1999, 1)...)
	vs = append(vs, verdict("web", "origin-fra-7", "region-zz", reporting.StateHealthy, "", time.Second))
	vs = append(vs, verdict("web", "origin-aaa-1", "region-zz", reporting.StateHealthy, "", time.Second))
	vs = append(vs, verdict("web", "origin-ams-2", "region-yy", reporting.StateDegraded, "ttfb", time.Second))
	vs = append(vs, runs("api", "origin-fra-7", "region-zz", time.Hour, 4, 4)...)
	vs = append(vs, verdict("api", "origin-fra-7", "region-zz", reporting.StateUnhealthy, "status", time.Second))
	vs = append(vs, verdict("internal-db", "origin-fra-7", "region-zz", reporting.StateHealthy, "", time.Second))
	for i := range vs {
		vs[i] = secret(vs[i])
	}
	if err := st.Publish(context.Background(), vs); err != nil {
		t.Fatal(err)
	}
	p, err := New(Options{Verdicts: st, Now: func() time.Time { return t0 }, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var conf atomic.Value
	conf.Store(PublicConfig{Title: "Acme", Checks: []PublicCheck{{Check: "web", Name: "Web shop"}, {Check: "api"}}})
	srv := httptest.NewServer(p.PublicHandler(func() PublicConfig { return conf.Load().(PublicConfig) }))
	defer srv.Close()

	code, _, body := get(t, srv, "/")
	if code != 200 {
		t.Fatalf("GET /: %d\n%s", code, body)
	}
	for _, leak := range []string{"origin-fra-7", "origin-ams-2", "origin-aaa-1", "region-zz", "region-yy", "internal.example", "10.9.8.7",
		"connection refused", "internal-db", "ttfb", "/check/", "/artifacts/", "refresh.js"} {
		if strings.Contains(body, leak) {
			t.Errorf("the public page shows %q", leak)
		}
	}
	row := func(name string) string {
		m := regexp.MustCompile(`(?s)<tr data-public-check="` + regexp.QuoteMeta(name) + `" data-state="([a-z]+)">.*?</tr>`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no row %q in\n%s", name, body)
		}
		return m[0]
	}
	for _, c := range []struct{ name, state, label string }{
		{"Web shop", "degraded", "Degraded performance"}, // worst over targets and regions
		{"api", "unhealthy", "Outage"},
	} {
		r := row(c.name)
		if !strings.Contains(r, `data-state="`+c.state+`"`) || !strings.Contains(r, c.label) {
			t.Errorf("row %s: want state %s (%s):\n%s", c.name, c.state, c.label, r)
		}
	}
	if !strings.Contains(body, `data-overall="unhealthy">Partial outage<`) {
		t.Errorf("want the headline Partial outage:\n%s", body)
	}
	if i, j := strings.Index(body, "Web shop"), strings.Index(body, `data-public-check="api"`); i < 0 || j < i {
		t.Errorf("rows not in the configured order")
	}
	web := row("Web shop")
	// 24 h: 1 of 2,002 failed; 7 d: 6 of 2,012.
	for _, want := range []string{
		`data-window="24h" data-total="2002" data-failed="1" data-uptime="0.999500"`,
		`data-window="7d" data-total="2012" data-failed="6"`,
		// The daily bar: 30 days, 2 days ago half failed, today 2,002 runs.
		`data-day="2026-11-28" data-total="10" data-failed="5"`,
		`data-day="2026-11-30" data-total="2002" data-failed="1"`,
		`data-day="2026-11-01" data-total="0"`,
		`<title>2026-11-28: 50.000% uptime</title>`,
	} {
		if !strings.Contains(web, want) {
			t.Errorf("row Web shop lacks %s:\n%s", want, web)
		}
	}
	if n := strings.Count(web, "<rect "); n != publicDays {
		t.Errorf("%d day cells, want %d", n, publicDays)
	}

	for _, path := range []string{"/check/web", "/api/v1/slos", "/api/v1/verdicts", "/artifacts/x.png", "/static/refresh.js", "/metrics", "/fault"} {
		if code, _, _ := get(t, srv, path); code != 404 {
			t.Errorf("GET %s on the public page: %d, want 404", path, code)
		}
	}
	if code, _, _ := get(t, srv, "/static/style.css"); code != 200 {
		t.Errorf("GET /static/style.css: %d", code)
	}
	for _, c := range []struct {
		path, title string
		code        int
	}{
		{"/badge/web.svg", "Web shop: degraded performance", 200},
		{"/badge/api.svg", "api: outage", 200},
		{"/badge/web.svg?uptime=24h", "Web shop 24h: 99.95%", 200},
		{"/badge/web.svg?target=origin-fra-7", "Web shop: no ?target here", 400},
		{"/badge/internal-db.svg", "internal-db: no such check", 404},
	} {
		if got := getBadge(t, srv.URL+c.path); got.code != c.code || got.title != c.title {
			t.Errorf("GET %s: %d %q, want %d %q", c.path, got.code, got.title, c.code, c.title)
		}
	}

	// A reload: the list changes at once.
	conf.Store(PublicConfig{Title: "Acme", Checks: []PublicCheck{{Check: "web", Name: "Shop"}}})
	_, _, body = get(t, srv, "/")
	if strings.Contains(body, `data-public-check="api"`) || !strings.Contains(body, `data-public-check="Shop"`) ||
		!strings.Contains(body, `data-overall="degraded">Degraded performance<`) {
		t.Errorf("after the reload:\n%s", body)
	}

	// The store failing: 503, and the error (which may name the store) is
	// not shown.
	st.Close()
	code, _, body = get(t, srv, "/")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "Status temporarily unavailable") || strings.Contains(strings.ToLower(body), "closed") {
		t.Errorf("store closed: %d\n%s", code, body)
	}
}

// TestPublicStates: a check's public state. One origin of several down
// while the others serve is degraded service, not an outage; every origin
// down is; a target's state is its worst over the regions; stale verdicts
// are unknown and do not count, also beside a fresh one of the same target.
func TestPublicStates(t *testing.T) {
	h, d, u := reporting.StateHealthy, reporting.StateDegraded, reporting.StateUnhealthy
	v := func(check, target, region string, st reporting.State, age time.Duration) reporting.Verdict {
		return verdict(check, target, region, st, "", age)
	}
	vs := []reporting.Verdict{
		v("one-down", "a", "eu", u, time.Second), v("one-down", "b", "eu", h, time.Second), v("one-down", "c", "eu", h, time.Second),
		v("all-down", "a", "eu", u, time.Second), v("all-down", "b", "us", u, time.Second),
		v("all-up", "a", "eu", h, time.Second), v("all-up", "b", "eu", h, time.Second),
		// A target down from one region only: that target is down.
		v("region", "a", "eu", h, time.Second), v("region", "a", "us", u, time.Second),
		v("slow", "a", "eu", d, time.Second), v("slow", "b", "eu", d, time.Second),
		// Stale: unknown, not counted; the fresh target decides.
		v("stale", "a", "eu", u, time.Hour), v("stale", "b", "eu", h, time.Second),
		v("gone", "a", "eu", h, time.Hour),
		// One region's canary stopped: the other region's fresh verdicts decide.
		v("region-gone", "a", "eu", h, time.Second), v("region-gone", "a", "us", u, time.Hour),
		v("region-gone", "b", "eu", h, time.Second), v("region-gone", "b", "us", h, time.Hour),
	}
	got := publicStatesOf(vs, t0)
	for check, want := range map[string]reporting.State{
		"one-down": d, "all-down": u, "all-up": h, "region": u, "slow": d, "stale": h, "gone": reporting.StateUnknown, "region-gone": h,
	} {
		if got[check] != want {
			t.Errorf("%s: %s, want %s", check, got[check], want)
		}
	}
}

// TestPublicOverall: the headline over the listed checks' states.
func TestPublicOverall(t *testing.T) {
	h, d, u, k := reporting.StateHealthy, reporting.StateDegraded, reporting.StateUnhealthy, reporting.StateUnknown
	for _, c := range []struct {
		states []reporting.State
		want   string
	}{
		{[]reporting.State{h, h, k}, "All systems operational"},
		{[]reporting.State{h, d}, "Degraded performance"},
		{[]reporting.State{h, u, d}, "Partial outage"},
		{[]reporting.State{u, u, k}, "Major outage"},
		{[]reporting.State{k, k}, "No data yet"},
		{nil, "No data yet"},
	} {
		var rows []publicRow
		for _, s := range c.states {
			rows = append(rows, publicRow{State: s})
		}
		if got, _ := overall(rows); got != c.want {
			t.Errorf("overall(%v) = %q, want %q", c.states, got, c.want)
		}
	}
}

// TestPublicConfig: status_page.public's errors name the key.
func TestPublicConfig(t *testing.T) {
	for _, c := range []struct {
		conf PublicConfig
		want []string
	}{
		{PublicConfig{Listen: "0.0.0.0:8080", Checks: []PublicCheck{{Check: "web"}}}, nil},
		{PublicConfig{}, nil},
		{PublicConfig{Checks: []PublicCheck{{Check: "web"}}}, []string{"public.listen: required with public.checks"}},
		{PublicConfig{Listen: "8080", Checks: []PublicCheck{{Check: "web"}}}, []string{`public.listen: "8080": want host:port`}},
		{PublicConfig{Listen: ":8080"}, []string{"public.checks: required with public.listen"}},
		{PublicConfig{Listen: ":8080", Checks: []PublicCheck{{Check: "web"}, {Name: "x"}, {Check: "web"}}},
			[]string{"public.checks[1].check: required", `public.checks[2]: "web" is listed twice (also status_page.public.checks[0])`}},
		{PublicConfig{Listen: ":8080", Checks: []PublicCheck{{Check: "web", Name: strings.Repeat("x", 101)}}}, []string{"public.checks[0].name: 101 characters: at most 100"}},
		{PublicConfig{Listen: ":8080", Checks: []PublicCheck{{Check: "web", Name: "a\nb"}}}, []string{"public.checks[0].name: \"a\\nb\": control characters"}},
	} {
		err := c.conf.validate("vigil")
		if len(c.want) == 0 {
			if err != nil {
				t.Errorf("%+v: %v", c.conf, err)
			}
			continue
		}
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: error %v, want %q", c.conf, err, w)
			}
		}
	}
}
