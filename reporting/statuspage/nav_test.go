package statuspage

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// TestNavLinksHaveAnchors: every link of the navigation points at a
// section the overview has: Proxy only with a proxy (Options.Origins),
// Alerts only with an alerter (Options.Alerts), on the overview, a check
// page and the not-found page alike.
func TestNavLinksHaveAnchors(t *testing.T) {
	src := &memSource{now: func() time.Time { return t0 }}
	src.add(verdict("home", "web", "eu", reporting.StateHealthy, "", time.Second))
	for _, c := range []struct {
		name string
		o    Options
		want []string
	}{
		{"canary only", Options{Verdicts: src}, []string{"/#checks"}},
		{"with a proxy", Options{Verdicts: src, Origins: func() []Origin { return nil }}, []string{"/#checks", "/#proxy"}},
		{"with an alerter", Options{Verdicts: src, Alerts: func() []Alert { return nil }}, []string{"/#checks", "/#alerts"}},
		{"with both", Options{Verdicts: src, Origins: func() []Origin { return nil }, Alerts: func() []Alert { return nil }},
			[]string{"/#checks", "/#proxy", "/#alerts"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := serve(t, c.o)
			_, _, index := get(t, srv, "/")
			ids := map[string]bool{}
			for _, n := range findAll(parseHTML(t, index), "id") {
				id, _ := attr(n, "id")
				ids[id] = true
			}
			for _, path := range []string{"/", "/check/home", "/nope"} {
				_, _, body := get(t, srv, path)
				var links []string
				for _, nav := range findTag(parseHTML(t, body), "nav") {
					for _, a := range findTag(nav, "a") {
						href, _ := attr(a, "href")
						links = append(links, href)
						if !ids[strings.TrimPrefix(href, "/#")] {
							t.Errorf("%s: nav link %s: the overview has no element with that id", path, href)
						}
					}
				}
				if !slices.Equal(links, c.want) {
					t.Errorf("%s: nav links %v, want %v", path, links, c.want)
				}
			}
		})
	}
}
