package statuspage

import (
	"context"
	"encoding/xml"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// badge is what a README reader's browser shows of GET /badge/…: the
// badge's status code, its title (label: value), value colour and type.
type badge struct {
	code       int
	title      string
	fill       string
	contentTyp string
}

func getBadge(t *testing.T, url string) badge {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var svg struct {
		Title string `xml:"title"`
		G     []struct {
			Rect []struct {
				Fill string `xml:"fill,attr"`
			} `xml:"rect"`
		} `xml:"g"`
	}
	if err := xml.Unmarshal(b, &svg); err != nil {
		t.Fatalf("GET %s: not SVG: %v\n%s", url, err, b)
	}
	out := badge{code: resp.StatusCode, title: svg.Title, contentTyp: resp.Header.Get("Content-Type")}
	if len(svg.G) > 0 && len(svg.G[0].Rect) > 1 {
		out.fill = svg.G[0].Rect[1].Fill
	}
	return out
}

// TestBadges: GET /badge/CHECK is an SVG badge of the check's worst state
// over its targets and regions (?target= narrows it), ?uptime=24h|7d|30d
// its uptime over that window from the store's rollups; an unknown check is
// a 404 badge, a bad window a 400 one; names are escaped.
func TestBadges(t *testing.T) {
	st, err := store.Open(t.TempDir(), store.Options{Now: func() time.Time { return t0 }, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var vs []reporting.Verdict
	vs = append(vs, runs("web", "o1", "eu", time.Hour, 1999, 1)...) // 24h: 1 failed of 2,000
	vs = append(vs, verdict("web", "o1", "eu", reporting.StateHealthy, "", time.Second))
	vs = append(vs, verdict("web", "o2", "us", reporting.StateDegraded, "ttfb", time.Second))
	vs = append(vs, runs("a<b", "o1", "eu", time.Hour, 4, 4)...)
	vs = append(vs, verdict("a<b", "o1", "eu", reporting.StateUnhealthy, "status", time.Second))
	if err := st.Publish(context.Background(), vs); err != nil {
		t.Fatal(err)
	}
	srv := serve(t, Options{Verdicts: st})
	for _, c := range []struct {
		path        string
		code        int
		title, fill string
	}{
		{"/badge/web", 200, "web: degraded", "#dfb317"},
		{"/badge/web.svg", 200, "web: degraded", "#dfb317"},
		{"/badge/web.svg?target=o1", 200, "web: healthy", "#4c1"},
		{"/badge/web.svg?uptime=24h", 200, "web 24h: 99.95%", "#4c1"},
		{"/badge/web.svg?uptime=30d&target=o1", 200, "web 30d: 99.95%", "#4c1"},
		{"/badge/web.svg?uptime=7d&target=o9", 404, "web 7d: no such check", "#9f9f9f"},
		{"/badge/a%3Cb.svg", 200, "a<b: unhealthy", "#e05d44"},
		{"/badge/a%3Cb.svg?uptime=7d", 200, "a<b 7d: 0%", "#e05d44"},
		{"/badge/nope.svg", 404, "nope: no such check", "#9f9f9f"},
		{"/badge/web.svg?uptime=1y", 400, "uptime: want 24h, 7d, 30d", "#9f9f9f"},
	} {
		got := getBadge(t, srv.URL+c.path)
		if got.code != c.code || got.title != c.title || got.fill != c.fill || !strings.HasPrefix(got.contentTyp, "image/svg+xml") {
			t.Errorf("GET %s: %d %q fill %s (%s), want %d %q fill %s", c.path, got.code, got.title, got.fill, got.contentTyp, c.code, c.title, c.fill)
		}
	}
}

func TestFormatUptime(t *testing.T) {
	for _, c := range []struct {
		ratio float64
		want  string
	}{{1, "100%"}, {0.99996, "99.99%"}, {0.9995, "99.95%"}, {0.95, "95%"}, {0.5, "50%"}, {0, "0%"}} {
		if got := formatUptime(c.ratio); got != c.want {
			t.Errorf("formatUptime(%v) = %q, want %q", c.ratio, got, c.want)
		}
	}
}
