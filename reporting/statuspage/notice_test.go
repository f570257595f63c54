package statuspage

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/vigil-synthetics/vigil/reporting"
)

// byID returns the element with id, or nil.
func byID(doc *html.Node, id string) *html.Node {
	for _, n := range findAll(doc, "id") {
		if v, _ := attr(n, "id"); v == id {
			return n
		}
	}
	return nil
}

// TestNoticeBanner: Options.Notice shows as a visible banner on the overview
// and the check pages while it returns a line, and is hidden otherwise.
func TestNoticeBanner(t *testing.T) {
	src := &memSource{now: func() time.Time { return t0 }}
	src.add(verdict("home", "eu-1", "eu", reporting.StateHealthy, "", time.Second))
	var notice atomic.Value
	notice.Store("InfluxDB unreachable since 2026-11-30T11:58:00Z: showing this canary's own results only")
	srv := serve(t, Options{Verdicts: src, Notice: func() string { return notice.Load().(string) }})

	banner := func(path string) (shown bool, line string) {
		t.Helper()
		code, _, body := get(t, srv, path)
		if code != http.StatusOK {
			t.Fatalf("GET %s = %d\n%s", path, code, body)
		}
		n := byID(parseHTML(t, body), "notice")
		if n == nil {
			t.Fatalf("GET %s: no #notice element", path)
		}
		_, hidden := attr(n, "hidden")
		return !hidden, strings.TrimSpace(text(n))
	}
	for _, path := range []string{"/", "/check/home"} {
		if shown, line := banner(path); !shown || line != notice.Load().(string) {
			t.Errorf("GET %s while degraded: banner shown=%v %q", path, shown, line)
		}
	}
	notice.Store("")
	for _, path := range []string{"/", "/check/home"} {
		if shown, line := banner(path); shown || line != "" {
			t.Errorf("GET %s after recovery: banner shown=%v %q, want hidden and empty", path, shown, line)
		}
	}
}
