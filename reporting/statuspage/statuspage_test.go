package statuspage

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/vigil-synthetics/vigil/reporting"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func verdict(check, target, region string, state reporting.State, cause string, age time.Duration) reporting.Verdict {
	at := t0.Add(-age)
	return reporting.Verdict{Check: check, Target: target, Tier: reporting.TierDeep, Region: region, Vantage: region + "-1",
		State: state, OK: cause == "", Cause: cause, StatusCode: 200, TTFB: 42 * time.Millisecond,
		Interval: 10 * time.Second, At: at, Expires: at.Add(30 * time.Second)}
}

func serve(t *testing.T, o Options) *httptest.Server {
	t.Helper()
	if o.Now == nil {
		o.Now = func() time.Time { return t0 }
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	p, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	srv := httptest.NewServer(p.Handler())
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, srv *httptest.Server, path string) (int, http.Header, string) {
	t.Helper()
	c := srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Get(srv.URL + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

func TestNewValidates(t *testing.T) {
	src := &memSource{now: func() time.Time { return t0 }}
	set := func(string, string) error { return nil }
	for _, c := range []struct {
		name string
		o    Options
		want error
	}{
		{"no source", Options{}, ErrNoVerdicts},
		{"fault without Set", Options{Verdicts: src, Faults: &FaultControl{Open: true}}, ErrNoFaultSetter},
		{"closed fault without token", Options{Verdicts: src, Faults: &FaultControl{Set: set}}, ErrNoAdminToken},
		{"open fault without token", Options{Verdicts: src, Faults: &FaultControl{Set: set, Open: true}}, nil},
		{"closed fault with token", Options{Verdicts: src, AdminToken: "s3cret", Faults: &FaultControl{Set: set}}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(c.o)
			if !errors.Is(err, c.want) {
				t.Fatalf("New = %v, want %v", err, c.want)
			}
		})
	}
	t.Run("missing artifacts dir", func(t *testing.T) {
		_, err := New(Options{Verdicts: src, ArtifactsDir: filepath.Join(t.TempDir(), "nope")})
		if err == nil || !strings.Contains(err.Error(), "artifacts_dir") {
			t.Fatalf("New = %v, want an artifacts_dir error", err)
		}
	})
}

// cells maps "check|target|region" to the cell element's data attributes.
func cells(t *testing.T, doc *html.Node) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	for _, n := range findAll(doc, "data-region") {
		if _, ok := attr(n, "data-check"); !ok || n.Data != "td" {
			continue
		}
		m := map[string]string{"text": text(n)}
		for _, a := range n.Attr {
			m[a.Key] = a.Val
		}
		k := m["data-check"] + "|" + m["data-target"] + "|" + m["data-region"]
		if _, dup := out[k]; dup {
			t.Errorf("cell %s rendered twice", k)
		}
		out[k] = m
	}
	return out
}

func TestMatrix(t *testing.T) {
	src := &memSource{now: func() time.Time { return t0 }}
	// asset × {a, b} × {eu, us, ap}; healthz × {a, b} × {eu, us} only (ap missing).
	for _, tg := range []string{"a", "b"} {
		for _, r := range []string{"eu", "us", "ap"} {
			v := verdict("asset", tg, r, reporting.StateHealthy, "", 5*time.Second)
			if tg == "b" {
				v = verdict("asset", tg, r, reporting.StateUnhealthy, "checksum", 5*time.Second)
				v.StatusCode, v.Err = 200, "sha256 mismatch"
			}
			src.add(v)
		}
		for _, r := range []string{"eu", "us"} {
			src.add(verdict("healthz", tg, r, reporting.StateHealthy, "", 3*time.Second))
		}
	}
	// An old unhealthy verdict of the same series must not win over the latest.
	src.add(verdict("asset", "a", "eu", reporting.StateUnhealthy, "status", 10*time.Minute))
	// Stale: healthz/b/us was healthy but expired 10s ago.
	src.add(verdict("healthz", "b", "us", reporting.StateHealthy, "", 40*time.Second+time.Nanosecond))
	stale := verdict("healthz", "b", "us", reporting.StateHealthy, "", 40*time.Second)
	stale.Vantage = "us-1"
	src.hist = slices.DeleteFunc(src.hist, func(v reporting.Verdict) bool {
		return v.Check == "healthz" && v.Target == "b" && v.Region == "us" && v.At.After(t0.Add(-10*time.Second))
	})
	src.add(stale)
	// Two vantages in one region: the worse fresh one is shown.
	second := verdict("asset", "a", "us", reporting.StateDegraded, "ttfb", 2*time.Second)
	second.Vantage = "us-2"
	src.add(second)

	// A check removed from the config two days ago is forgotten.
	src.add(verdict("removed", "a", "eu", reporting.StateUnhealthy, "dns", 48*time.Hour))

	srv := serve(t, Options{Verdicts: src})
	code, hdr, body := get(t, srv, "/")
	if code != http.StatusOK {
		t.Fatalf("GET / = %d\n%s", code, body)
	}
	if ct := hdr.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("Content-Type = %q", ct)
	}
	got := cells(t, parseHTML(t, body))
	if len(got) != 4*3 {
		t.Fatalf("matrix has %d cells, want 12 (4 rows × 3 regions): %v", len(got), slices.Collect(mapsKeys(got)))
	}
	for _, c := range []struct {
		key, state, cause, stale, text string
	}{
		{"asset|a|eu", "healthy", "", "false", "✓ healthy"},
		{"asset|a|us", "degraded", "ttfb", "false", "▲ degraded ttfb"},
		{"asset|a|ap", "healthy", "", "false", "TTFB 42 ms · 5s ago"},
		{"asset|b|eu", "unhealthy", "checksum", "false", "✕ unhealthy checksum · 200"},
		{"asset|b|us", "unhealthy", "checksum", "false", "checksum"},
		{"asset|b|ap", "unhealthy", "checksum", "false", "checksum"},
		{"healthz|a|eu", "healthy", "", "false", "healthy"},
		{"healthz|a|ap", "none", "", "false", "– no data not run in this region"},
		{"healthz|b|us", "unknown", "", "true", "stale · was healthy"},
		{"healthz|b|ap", "none", "", "false", "no data"},
	} {
		m := got[c.key]
		if m == nil {
			t.Errorf("%s: no cell", c.key)
			continue
		}
		if m["data-state"] != c.state || m["data-cause"] != c.cause || m["data-stale"] != c.stale {
			t.Errorf("%s: state=%q cause=%q stale=%q, want %q %q %q", c.key, m["data-state"], m["data-cause"], m["data-stale"], c.state, c.cause, c.stale)
		}
		if !strings.Contains(m["text"], c.text) {
			t.Errorf("%s: text %q does not contain %q", c.key, m["text"], c.text)
		}
		if !strings.Contains(m["class"], "st-"+c.state) {
			t.Errorf("%s: class %q lacks st-%s (colour)", c.key, m["class"], c.state)
		}
	}
	if m := got["asset|b|eu"]; m["title"] != "sha256 mismatch" {
		t.Errorf("error text not in the cell's title: %q", m["title"])
	}
	// Summary counts: 5 healthy (asset a eu/ap, healthz a eu/us, b eu), 1
	// degraded, 3 unhealthy, 1 unknown (stale); cells without data do not count.
	doc := parseHTML(t, body)
	want := map[string]string{"healthy": "5", "degraded": "1", "unhealthy": "3", "unknown": "1"}
	for _, n := range findAll(doc, "data-count") {
		k, _ := attr(n, "data-count")
		if w, ok := want[k]; ok && !strings.HasPrefix(text(n), w+" ") {
			t.Errorf("summary %s = %q, want %s", k, text(n), w)
		}
	}
	// Regions are columns in sorted order.
	var cols []string
	for _, n := range findAll(doc, "data-region-col") {
		v, _ := attr(n, "data-region-col")
		cols = append(cols, v)
	}
	if !slices.Equal(cols, []string{"ap", "eu", "us"}) {
		t.Errorf("region columns = %v", cols)
	}
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestCheckNameWithSlash(t *testing.T) {
	src := &memSource{now: func() time.Time { return t0 }}
	src.add(verdict("api/v1 health", "a", "eu", reporting.StateHealthy, "", time.Second))
	srv := serve(t, Options{Verdicts: src})
	_, _, body := get(t, srv, "/")
	if !strings.Contains(body, `href="/check/api%2Fv1%20health"`) {
		t.Fatal("check link not path-escaped")
	}
	code, _, body := get(t, srv, "/check/api%2Fv1%20health")
	if code != http.StatusOK || !strings.Contains(body, `data-check-page="api/v1 health"`) {
		t.Fatalf("GET escaped check page = %d", code)
	}
}

func TestStaleTurnsUnknown(t *testing.T) {
	src := &memSource{now: func() time.Time { return t0 }}
	v := verdict("api", "origin-a", "eu-west", reporting.StateUnhealthy, "status", time.Minute)
	v.Expires = t0 // expires exactly now: unknown
	src.add(v)
	now := t0
	srv := serve(t, Options{Verdicts: src, Now: func() time.Time { return now }})
	_, _, body := get(t, srv, "/")
	c := cells(t, parseHTML(t, body))["api|origin-a|eu-west"]
	if c["data-state"] != "unknown" || c["data-stale"] != "true" || !strings.Contains(c["text"], "stale · was unhealthy") {
		t.Fatalf("expired verdict shown as %v", c)
	}
}

func TestCheckPage(t *testing.T) {
	src := &memSource{now: func() time.Time { return t0 }}
	roll := func(target, region string, ago time.Duration, total, failed int) reporting.Rollup {
		return reporting.Rollup{Check: "asset", Target: target, Region: region, Minute: t0.Add(-ago).Truncate(time.Minute), Total: total, Failed: failed}
	}
	withTTFB := func(r reporting.Rollup, mean, p95 time.Duration) reporting.Rollup {
		r.TTFBSum, r.TTFBP95, r.TTFBMax = mean*time.Duration(r.Total), p95, 2*p95
		r.TTFBRuns = r.Total
		return r
	}
	src.rollups = []reporting.Rollup{
		withTTFB(roll("a", "eu", 5*time.Hour, 300, 0), 20*time.Millisecond, 30*time.Millisecond),
		withTTFB(roll("a", "eu", 7*time.Hour, 100, 0), 40*time.Millisecond, 70*time.Millisecond),
		roll("a", "eu", time.Hour, 600, 1), roll("a", "us", 2*time.Hour, 400, 0), // 24h: 1000 runs, 1 failed
		roll("a", "eu", 3*24*time.Hour, 2000, 10),  // 7d: 3000 runs, 11 failed
		roll("a", "eu", 20*24*time.Hour, 3000, 30), // 30d: 6000 runs, 41 failed
		roll("a", "eu", 31*24*time.Hour, 999, 999), // outside every window
		roll("b", "eu", 10*time.Minute, 500, 0),    // b: 100 % everywhere
		{Check: "other", Target: "a", Region: "eu", Minute: t0.Add(-time.Hour), Total: 10, Failed: 10},
	}
	// History: one run every 10 s for an hour in two regions, one failure with a screenshot.
	for at := t0.Add(-time.Hour + 5*time.Second); at.Before(t0); at = at.Add(10 * time.Second) {
		for _, r := range []string{"eu", "us"} {
			v := verdict("asset", "a", r, reporting.StateHealthy, "", t0.Sub(at))
			v.DNS, v.Connect, v.TLS, v.TTFB, v.Transfer = time.Millisecond, 2*time.Millisecond, 3*time.Millisecond, 10*time.Millisecond, 4*time.Millisecond
			if r == "us" {
				v.TTFB = 80 * time.Millisecond
			}
			src.add(v)
		}
	}
	bad := verdict("asset", "a", "eu", reporting.StateUnhealthy, "checksum", 90*time.Second)
	bad.Err, bad.Artifact, bad.StatusCode = "body sha256 abc ≠ def", "shots/asset-a.png", 200
	bad.DNS, bad.Connect, bad.TLS, bad.TTFB, bad.Transfer = time.Millisecond, 2*time.Millisecond, 3*time.Millisecond, 10*time.Millisecond, 4*time.Millisecond
	src.add(bad)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "shots"), 0o755); err != nil {
		t.Fatal(err)
	}
	srv := serve(t, Options{Verdicts: src, ArtifactsDir: dir, SLOs: func() []SLOStatus {
		return []SLOStatus{
			{Name: "asset-availability", Check: "asset", Objective: "99.9%", Current: 0.999, BudgetLeft: 0.25, Window: 30 * 24 * time.Hour},
			{Name: "api-availability", Check: "api", Objective: "99%", Current: 0.5, BudgetLeft: -1},
		}
	}})
	code, _, body := get(t, srv, "/check/asset")
	if code != http.StatusOK {
		t.Fatalf("GET /check/asset = %d\n%s", code, body)
	}
	doc := parseHTML(t, body)

	t.Run("uptime", func(t *testing.T) {
		type k struct{ target, window string }
		got := map[k][2]string{}
		for _, n := range findAll(doc, "data-uptime-target") {
			tg, _ := attr(n, "data-uptime-target")
			w, _ := attr(n, "data-window")
			u, _ := attr(n, "data-uptime")
			got[k{tg, w}] = [2]string{u, text(n)}
		}
		for _, c := range []struct {
			target, window, ratio, text string
		}{
			{"a", "24h", "0.999286", "99.928% 1 of 1400 runs failed"},
			{"a", "7d", "0.996765", "99.676% 11 of 3400 runs failed"},
			{"a", "30d", "0.993594", "99.359% 41 of 6400 runs failed, over the last 20d 0h only"},
			{"b", "24h", "1.000000", "100.000% 0 of 500 runs failed, over the last 10m 0s only"},
			{"", "24h", "0.999474", "99.947% 1 of 1900 runs failed"},
			{"", "30d", "0.994058", "99.405% 41 of 6900 runs failed, over the last 20d 0h only"},
		} {
			g := got[k{c.target, c.window}]
			if g[0] != c.ratio || g[1] != c.text {
				t.Errorf("uptime %q %s = %q %q, want %q %q", c.target, c.window, g[0], g[1], c.ratio, c.text)
			}
		}
	})
	t.Run("slo", func(t *testing.T) {
		rows := findAll(doc, "data-slo")
		if len(rows) != 1 {
			t.Fatalf("%d SLO rows, want only this check's one", len(rows))
		}
		if s := text(rows[0]); !strings.Contains(s, "asset-availability 99.9% 99.900% 30d") || !strings.Contains(s, "25.0% left") {
			t.Errorf("SLO row = %q", s)
		}
	})
	t.Run("charts", func(t *testing.T) {
		svgs := findTag(doc, "svg")
		var chart *html.Node
		for _, s := range svgs {
			if c, _ := attr(s, "class"); c == "ttfb-chart" {
				chart = s
			}
		}
		if chart == nil {
			t.Fatal("no TTFB chart svg")
		}
		lines := map[string]int{}
		for _, g := range findAll(chart, "data-stat") {
			r, _ := attr(g, "data-region")
			st, _ := attr(g, "data-stat")
			pl := findTag(g, "polyline")
			if len(pl) == 0 {
				t.Errorf("%s %s: no polyline", r, st)
				continue
			}
			pts, _ := attr(pl[0], "points")
			lines[r+" "+st] = len(strings.Fields(pts))
		}
		for _, want := range []string{"eu p95", "eu p50", "us p95", "us p50"} {
			if lines[want] != chartBuckets {
				t.Errorf("%s: %d points, want %d (one per bucket)", want, lines[want], chartBuckets)
			}
		}
		var legend []string
		for _, fig := range findAll(doc, "data-chart-target") {
			for _, li := range findTag(fig, "li") {
				legend = append(legend, text(li))
			}
		}
		if !slices.Contains(legend, "eu p50 10 ms · p95 10 ms (361 runs)") || !slices.Contains(legend, "us p50 80 ms · p95 80 ms (360 runs)") {
			t.Errorf("chart legend = %q", legend)
		}
	})
	t.Run("phases", func(t *testing.T) {
		rows := findAll(doc, "data-phase-target")
		if len(rows) != 2 {
			t.Fatalf("%d phase rows, want 2", len(rows))
		}
		want := map[string]string{"dns": "1.0 ms", "connect": "2.0 ms", "tls": "3.0 ms", "ttfb (server wait)": "4.0 ms", "transfer": "4.0 ms"}
		for _, td := range findAll(rows[0], "data-phase") {
			ph, _ := attr(td, "data-phase")
			if text(td) != want[ph] {
				t.Errorf("eu phase %s = %q, want %q", ph, text(td), want[ph])
			}
		}
		if n := len(findTag(rows[0], "rect")); n != 5 {
			t.Errorf("stacked bar has %d segments, want 5", n)
		}
	})
	t.Run("failures", func(t *testing.T) {
		rows := findAll(doc, "data-cause")
		var fails []*html.Node
		for _, r := range rows {
			if r.Data == "tr" {
				fails = append(fails, r)
			}
		}
		if len(fails) != 1 {
			t.Fatalf("%d failure rows, want 1", len(fails))
		}
		s := text(fails[0])
		for _, want := range []string{"1m 30s ago", "checksum", "HTTP 200", "body sha256 abc ≠ def", "screenshot"} {
			if !strings.Contains(s, want) {
				t.Errorf("failure row %q lacks %q", s, want)
			}
		}
		a := findTag(fails[0], "a")
		if href, _ := attr(a[0], "href"); href != "/artifacts/shots/asset-a.png" {
			t.Errorf("screenshot link = %q", href)
		}
	})
	t.Run("unknown check", func(t *testing.T) {
		if code, _, _ := get(t, srv, "/check/nope"); code != http.StatusNotFound {
			t.Fatalf("GET /check/nope = %d, want 404", code)
		}
	})
	t.Run("rollup chart", func(t *testing.T) {
		_, _, body := get(t, srv, "/check/asset?window=24h")
		doc := parseHTML(t, body)
		var legend []string
		for _, fig := range findAll(doc, "data-chart-target") {
			if tg, _ := attr(fig, "data-chart-target"); tg != "a" {
				continue
			}
			for _, li := range findTag(fig, "li") {
				legend = append(legend, text(li))
			}
		}
		// eu: 300 runs at 20 ms mean / 30 ms p95, 100 at 40 / 70 and 600 without TTFB
		// (failed otherwise: no TTFB sample): mean (6000+4000)/400 = 25 ms,
		// p95≈ (30·300+70·100)/400 = 40 ms. us has no run with a TTFB: no line.
		if !slices.Equal(legend, []string{"eu mean 25 ms · p95≈ 40 ms (400 runs)"}) {
			t.Errorf("legend = %q", legend)
		}
		if !strings.Contains(body, "from per-minute rollups") {
			t.Error("long window not marked as drawn from rollups")
		}
	})
	t.Run("window", func(t *testing.T) {
		_, _, body := get(t, srv, "/check/asset?window=15m")
		if !strings.Contains(body, `<b aria-current="true">15m</b>`) || !strings.Contains(body, "(90 runs)") {
			t.Fatal("?window=15m not applied")
		}
	})
}

func TestFaultSwitch(t *testing.T) {
	src := &memSource{now: func() time.Time { return t0 }}
	var calls atomic.Int32
	var last atomic.Value
	fc := func(open bool) *FaultControl {
		return &FaultControl{Origins: []string{"origin-a", "origin-b"}, Open: open,
			Set: func(o, m string) error {
				if o == "origin-b" && m == "slow" {
					return errors.New("origin-b: switch unreachable")
				}
				calls.Add(1)
				last.Store(o + "=" + m)
				return nil
			},
			Current: func(o string) string { return "ok" }}
	}
	closed := serve(t, Options{Verdicts: src, AdminToken: "s3cret-token", Faults: fc(false)})
	open := serve(t, Options{Verdicts: src, Faults: fc(true)})

	type req struct {
		srv    *httptest.Server
		form   url.Values
		header map[string]string
	}
	for _, c := range []struct {
		name     string
		r        req
		code     int
		location string
		set      string
	}{
		{"no token", req{closed, url.Values{"origin": {"origin-a"}, "mode": {"down"}}, nil}, 401, "", ""},
		{"wrong token", req{closed, url.Values{"origin": {"origin-a"}, "mode": {"down"}, "token": {"guess"}}, nil}, 401, "", ""},
		{"form token", req{closed, url.Values{"origin": {"origin-a"}, "mode": {"down"}, "token": {"s3cret-token"}, "back": {"/check/asset"}}, nil}, 303, "/check/asset", "origin-a=down"},
		{"bearer token", req{closed, url.Values{"origin": {"origin-b"}, "mode": {"corrupt"}}, map[string]string{"Authorization": "Bearer s3cret-token"}}, 303, "/", "origin-b=corrupt"},
		{"cross-site with token", req{closed, url.Values{"origin": {"origin-a"}, "mode": {"ok"}, "token": {"s3cret-token"}}, map[string]string{"Sec-Fetch-Site": "cross-site"}}, 403, "", ""},
		{"foreign Origin", req{open, url.Values{"origin": {"origin-a"}, "mode": {"ok"}}, map[string]string{"Origin": "http://evil.example"}}, 403, "", ""},
		{"open without token", req{open, url.Values{"origin": {"origin-a"}, "mode": {"503"}}, map[string]string{"Sec-Fetch-Site": "same-origin"}}, 303, "/", "origin-a=503"},
		{"open redirect refused", req{open, url.Values{"origin": {"origin-a"}, "mode": {"ok"}, "back": {"//evil.example/x"}}, nil}, 303, "/", "origin-a=ok"},
		{"unknown origin", req{open, url.Values{"origin": {"origin-z"}, "mode": {"ok"}}, nil}, 400, "", ""},
		{"unknown mode", req{open, url.Values{"origin": {"origin-a"}, "mode": {"explode"}}, nil}, 400, "", ""},
		{"Set fails", req{open, url.Values{"origin": {"origin-b"}, "mode": {"slow"}}, nil}, 502, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := calls.Load()
			last.Store("")
			hr, err := http.NewRequest("POST", c.r.srv.URL+"/fault", strings.NewReader(c.r.form.Encode()))
			if err != nil {
				t.Fatal(err)
			}
			hr.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			for k, v := range c.r.header {
				hr.Header.Set(k, v)
			}
			cl := c.r.srv.Client()
			cl.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
			resp, err := cl.Do(hr)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.code {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.code, b)
			}
			if loc := resp.Header.Get("Location"); loc != c.location {
				t.Errorf("Location %q, want %q", loc, c.location)
			}
			if strings.Contains(string(b), "s3cret-token") {
				t.Error("response leaks the admin token")
			}
			if c.set == "" && calls.Load() != before {
				t.Errorf("Set called (%v) on a refused request", last.Load())
			}
			if c.set != "" && last.Load() != c.set {
				t.Errorf("Set got %v, want %s", last.Load(), c.set)
			}
		})
	}

	t.Run("buttons", func(t *testing.T) {
		_, _, body := get(t, closed, "/")
		doc := parseHTML(t, body)
		btns := findAll(doc, "data-fault-mode")
		if len(btns) != 2*len(DefaultFaultModes) {
			t.Fatalf("%d fault buttons, want %d", len(btns), 2*len(DefaultFaultModes))
		}
		for _, b := range btns {
			o, _ := attr(b, "data-fault-origin")
			m, _ := attr(b, "data-fault-mode")
			v, _ := attr(b, "value")
			if v != m || (o != "origin-a" && o != "origin-b") {
				t.Errorf("button origin=%q mode=%q value=%q", o, m, v)
			}
		}
		if n := len(findTag(doc, "input")); !strings.Contains(body, `name="token"`) || n == 0 {
			t.Error("closed fault switch has no token field")
		}
		_, _, body = get(t, open, "/")
		if strings.Contains(body, `name="token"`) {
			t.Error("open fault switch asks for a token")
		}
	})
	t.Run("hidden without Faults", func(t *testing.T) {
		srv := serve(t, Options{Verdicts: src})
		_, _, body := get(t, srv, "/")
		if strings.Contains(body, "data-fault-mode") {
			t.Error("fault buttons shown without Faults")
		}
		resp, err := srv.Client().PostForm(srv.URL+"/fault", url.Values{"origin": {"origin-a"}, "mode": {"down"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("POST /fault without Faults = %d, want 404", resp.StatusCode)
		}
	})
}

func TestArtifacts(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "data")
	png := []byte("\x89PNG\r\n\x1a\nfake")
	for name, body := range map[string][]byte{
		"data/shots/x.png":   png,
		"data/vigil.db":      []byte("SECRET-DB"),
		"data/shots/n.html":  []byte("<script>alert(1)</script>"),
		"outside/secret.png": []byte("SECRET-OUTSIDE"),
	} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(root, "outside", "secret.png"), filepath.Join(dir, "shots", "link.png")); err != nil {
		t.Fatal(err)
	}
	srv := serve(t, Options{Verdicts: &memSource{now: func() time.Time { return t0 }}, ArtifactsDir: dir})
	for _, c := range []struct {
		path string
		code int
	}{
		{"/artifacts/shots/x.png", 200},
		{"/artifacts/vigil.db", 404},
		{"/artifacts/shots/n.html", 404},
		{"/artifacts/shots/link.png", 404},
		{"/artifacts/..%2foutside%2fsecret.png", 404},
		{"/artifacts/shots/..%2F..%2F..%2Foutside/secret.png", 404},
		{"/artifacts/%2e%2e/outside/secret.png", 404},
		{"/artifacts/shots/", 404},
		{"/artifacts/", 404},
	} {
		t.Run(c.path, func(t *testing.T) {
			code, hdr, body := get(t, srv, c.path)
			if code/100 == 3 {
				// The mux cleans dot segments with a redirect; follow it once.
				code, hdr, body = get(t, srv, hdr.Get("Location"))
			}
			if code != c.code {
				t.Fatalf("status %d, want %d", code, c.code)
			}
			if strings.Contains(body, "SECRET") {
				t.Fatal("served a file outside the artifacts")
			}
			if code == 200 {
				if body != string(png) || hdr.Get("Content-Type") != "image/png" || !strings.Contains(hdr.Get("Content-Security-Policy"), "sandbox") {
					t.Fatalf("served %q as %q (CSP %q)", body, hdr.Get("Content-Type"), hdr.Get("Content-Security-Policy"))
				}
			}
		})
	}
	t.Run("disabled", func(t *testing.T) {
		srv := serve(t, Options{Verdicts: &memSource{now: func() time.Time { return t0 }}})
		if code, _, _ := get(t, srv, "/artifacts/shots/x.png"); code != 404 {
			t.Fatalf("status %d without ArtifactsDir, want 404", code)
		}
	})
}

func TestEscaping(t *testing.T) {
	const (
		evilCheck  = `<script>alert("check")</script>`
		evilCause  = `"><img src=x onerror=alert(1)>`
		evilErr    = `</td><script>alert('err')</script>`
		evilOrigin = `o"><svg onload=alert(2)>`
	)
	src := &memSource{now: func() time.Time { return t0 }}
	v := verdict(evilCheck, "t<1>", "eu&west", reporting.StateUnhealthy, evilCause, time.Second)
	v.Err, v.Artifact, v.URL = evilErr, `javascript:alert(3).png`, `javascript:alert(4)`
	src.add(v)
	srv := serve(t, Options{Verdicts: src, ArtifactsDir: t.TempDir(),
		Origins: func() []Origin {
			return []Origin{{Pool: "<p>", Name: evilOrigin, Flags: []Flag{{Source: FlagPassive, Bad: true, Reason: evilErr}}}}
		},
		Alerts: func() []Alert {
			return []Alert{{Rule: "down", Check: evilCheck, Summary: evilErr, Severity: "page", Artifact: "../../etc/passwd.png"}}
		},
		Failing: func() map[string]string { return map[string]string{"<b>hook</b>": evilErr} },
		Faults:  &FaultControl{Origins: []string{evilOrigin}, Open: true, Set: func(string, string) error { return nil }},
	})
	for _, path := range []string{"/", "/check/" + url.PathEscape(evilCheck)} {
		t.Run(path, func(t *testing.T) {
			code, _, body := get(t, srv, path)
			if code != http.StatusOK {
				t.Fatalf("status %d", code)
			}
			for _, raw := range []string{"<script>alert", "<img src=x", "<svg onload", "<b>hook", "etc/passwd"} {
				if strings.Contains(body, raw) {
					t.Errorf("body contains unescaped %q", raw)
				}
			}
			doc := parseHTML(t, body)
			for _, key := range []string{"href", "src", "action"} {
				for _, n := range findAll(doc, key) {
					if v, _ := attr(n, key); !strings.HasPrefix(v, "/") && !strings.HasPrefix(v, "?") && !strings.HasPrefix(v, "#") {
						t.Errorf("<%s %s=%q> is not a local link", n.Data, key, v)
					}
				}
			}
			if n := len(findTag(doc, "script")); n != 1 {
				t.Errorf("%d script elements, want only the refresh script", n)
			}
			c := cells(t, doc)[evilCheck+"|t<1>|eu&west"]
			if c == nil || c["data-cause"] != evilCause || c["title"] != evilErr {
				t.Errorf("attributes do not round-trip: %v", c)
			}
		})
	}
}

func TestSourceErrorAndBasics(t *testing.T) {
	src := &memSource{now: func() time.Time { return t0 }, err: errDown}
	srv := serve(t, Options{Verdicts: src, Refresh: 7 * time.Second})
	code, hdr, body := get(t, srv, "/")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "cannot read verdicts: store is down") {
		t.Fatalf("GET / with a failing source = %d\n%s", code, body)
	}
	// The body agrees with the banner: no "No verdicts yet", no 0 counts.
	if strings.Contains(body, "No verdicts yet") || !strings.Contains(body, "No verdict could be read") ||
		!strings.Contains(body, `data-count="unreadable"`) || strings.Contains(body, `data-count="healthy"`) {
		t.Errorf("GET / with a failing source reads as an empty store:\n%s", body)
	}
	if csp := hdr.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("CSP = %q", csp)
	}
	if !strings.Contains(body, `<noscript><meta http-equiv="refresh" content="7"></noscript>`) {
		t.Error("no meta refresh for JavaScript-off browsers")
	}
	// No external resources: every src and href is local.
	doc := parseHTML(t, body)
	for _, key := range []string{"src", "href"} {
		for _, n := range findAll(doc, key) {
			v, _ := attr(n, key)
			if !strings.HasPrefix(v, "/") && !strings.HasPrefix(v, "#") && !strings.HasPrefix(v, "?") {
				t.Errorf("<%s %s=%q> is not local", n.Data, key, v)
			}
		}
	}
	for path, ct := range map[string]string{"/static/style.css": "text/css", "/static/refresh.js": "javascript"} {
		code, hdr, _ := get(t, srv, path)
		if code != 200 || !strings.Contains(hdr.Get("Content-Type"), ct) {
			t.Errorf("GET %s = %d %q", path, code, hdr.Get("Content-Type"))
		}
	}
	for _, path := range []string{"/static/", "/nope", "/static/missing.css"} {
		if code, _, _ := get(t, srv, path); code != 404 {
			t.Errorf("GET %s = %d, want 404", path, code)
		}
	}
	srv2 := serve(t, Options{Verdicts: &memSource{now: func() time.Time { return t0 }}, Refresh: -1})
	if _, _, body := get(t, srv2, "/"); strings.Contains(body, "http-equiv") || !strings.Contains(body, `data-refresh-ms="0"`) {
		t.Error("negative Refresh still refreshes")
	}
}

func TestProxyAndAlerts(t *testing.T) {
	o := sampleOptions(sampleSource(), nil)
	srv := serve(t, o)
	_, _, body := get(t, srv, "/")
	doc := parseHTML(t, body)
	origins := map[string]*html.Node{}
	for _, n := range findAll(doc, "data-origin") {
		name, _ := attr(n, "data-origin")
		origins[name] = n
	}
	if len(origins) != 3 {
		t.Fatalf("%d origin rows, want 3", len(origins))
	}
	b := origins["origin-b"]
	if av, _ := attr(b, "data-available"); av != "false" {
		t.Errorf("origin-b data-available = %q", av)
	}
	s := text(b)
	for _, want := range []string{"out", "verdict bad: 3/3 regions unhealthy: checksum · since 3m 40s ago", "passive ok"} {
		if !strings.Contains(s, want) {
			t.Errorf("origin-b row %q lacks %q", s, want)
		}
	}
	if av, _ := attr(origins["origin-a"], "data-available"); av != "true" {
		t.Errorf("origin-a data-available = %q", av)
	}
	alerts := findAll(doc, "data-alert-rule")
	if len(alerts) != 1 || !strings.Contains(text(alerts[0]), "asset on origin-b is unhealthy in 3 regions: checksum") {
		t.Fatalf("alerts = %d", len(alerts))
	}
	if f := findAll(doc, "data-receiver"); len(f) != 1 || !strings.Contains(text(f[0]), "pagerduty: POST") {
		t.Errorf("failing deliveries not shown")
	}
}

func TestLastRuns(t *testing.T) {
	srv := serve(t, sampleOptions(sampleSource(), nil))
	_, _, body := get(t, srv, "/check/asset")
	doc := parseHTML(t, body)
	var failed []string
	for _, n := range findAll(doc, "data-assertion-ok") {
		if ok, _ := attr(n, "data-assertion-ok"); ok == "false" {
			failed = append(failed, text(n))
		}
	}
	if !slices.Equal(failed, []string{"checksum ✕ failed sha256:9f2c…e1 sha256:4b7a…0d"}) {
		t.Errorf("failed assertions = %q", failed)
	}
	runs := findAll(doc, "data-run-target")
	if len(runs) != 2 {
		t.Fatalf("%d runs, want 2", len(runs))
	}
	if tg, _ := attr(runs[0], "data-run-target"); tg != "origin-a" {
		t.Errorf("runs not sorted by target: first %q", tg)
	}
	_, _, body = get(t, srv, "/check/checkout-flow")
	doc = parseHTML(t, body)
	var steps []string
	for _, n := range findAll(doc, "data-step-ok") {
		steps = append(steps, text(n))
	}
	if len(steps) != 4 || !strings.HasPrefix(steps[2], "✕ browser assert_text #cart-count 5.00 s wait_visible") || steps[3] != "skipped screenshot" {
		t.Errorf("steps = %q", steps)
	}
	_, _, body = get(t, srv, "/check/healthz")
	if !strings.Contains(body, "No run details kept for this check") {
		t.Error("no placeholder for a check without run details")
	}
}

// TestConcurrent renders pages from many goroutines (run with -race).
func TestConcurrent(t *testing.T) {
	src := sampleSource()
	srv := serve(t, sampleOptions(src, nil))
	done := make(chan error, 8)
	for i := range 8 {
		go func() {
			for j := range 5 {
				path := []string{"/", "/check/asset", "/check/healthz"}[(i+j)%3]
				resp, err := srv.Client().Get(srv.URL + path)
				if err != nil {
					done <- err
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					done <- fmt.Errorf("GET %s = %d", path, resp.StatusCode)
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
