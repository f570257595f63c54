package statuspage

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// TestPublicPageSince: the public page says since when a check is in an
// outage (since its last target went down) or degraded (since its first
// problem), a time and how long, nothing of which target or region; an
// operational check, and one whose verdicts do not say, show no time.
func TestPublicPageSince(t *testing.T) {
	st, err := store.Open(t.TempDir(), store.Options{Now: func() time.Time { return t0 }, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	at := func(check, target, region string, s reporting.State, ago time.Duration) reporting.Verdict {
		cause := ""
		if s != reporting.StateHealthy {
			cause = "status"
		}
		v := verdict(check, target, region, s, cause, 5*time.Second)
		if ago > 0 {
			v.Since = t0.Add(-ago)
		}
		return v
	}
	down, slow, ok := reporting.StateUnhealthy, reporting.StateDegraded, reporting.StateHealthy
	vs := []reporting.Verdict{
		// Both targets down: the outage began when the second went down
		// (origin-b, in its first region: 11:30).
		at("api", "origin-a", "eu", down, 45*time.Minute),
		at("api", "origin-b", "eu", down, 20*time.Minute),
		at("api", "origin-b", "us", down, 30*time.Minute),
		// One target degraded, one down: degraded since the first problem.
		at("web", "origin-a", "eu", slow, 3*time.Hour),
		at("web", "origin-b", "eu", down, time.Hour),
		at("web", "origin-c", "eu", ok, 5*time.Hour),
		at("docs", "origin-a", "eu", ok, 5*time.Hour),
		// Written before since existed.
		at("blog", "origin-a", "eu", down, 0),
	}
	if err := st.Publish(context.Background(), vs); err != nil {
		t.Fatal(err)
	}
	p, err := New(Options{Verdicts: st, Now: func() time.Time { return t0 }, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	conf := PublicConfig{Checks: []PublicCheck{{Check: "api"}, {Check: "web"}, {Check: "docs"}, {Check: "blog"}}}
	srv := httptest.NewServer(p.PublicHandler(func() PublicConfig { return conf }))
	defer srv.Close()
	code, _, body := get(t, srv, "/")
	if code != 200 {
		t.Fatalf("GET /: %d\n%s", code, body)
	}
	for name, want := range map[string]string{
		"api":  "Outage since 11:30 UTC (30m 0s)",
		"web":  "Degraded performance since 09:00 UTC (3h 0m)",
		"docs": "",
		"blog": "",
	} {
		m := regexp.MustCompile(`(?s)<tr data-public-check="` + name + `".*?</tr>`).FindString(body)
		got := strings.Join(strings.Fields(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(m, " ")), " ")
		if want == "" && strings.Contains(got, "since") || want != "" && !strings.Contains(got, want) {
			t.Errorf("row %s reads %q, want %q", name, got, want)
		}
	}
	if strings.Contains(body, "origin-") {
		t.Error("the public page names a target")
	}
}
