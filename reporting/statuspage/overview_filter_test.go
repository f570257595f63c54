package statuspage

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// TestOverviewFindsTheFailingOrigin: among 1,200 rows (4 checks × 300
// targets) the overview's unhealthy count links to ?state=unhealthy,
// which shows only the rows with an unhealthy cell (the count still
// counting every cell), ?state=problems adds the degraded ones, ?check=
// narrows to a check, and within a check the rows with a problem come
// first. Plain links: no JavaScript needed.
func TestOverviewFindsTheFailingOrigin(t *testing.T) {
	st := openStore(t)
	var vs []reporting.Verdict
	for _, check := range []string{"dns", "http", "tcp", "tls"} {
		for tg := range 300 {
			state, cause := reporting.StateHealthy, ""
			switch {
			case check == "http" && tg >= 100 && tg < 150:
				state, cause = reporting.StateUnhealthy, "connect_refused"
			case check == "tls" && tg >= 200 && tg < 203:
				state, cause = reporting.StateDegraded, reporting.CauseTTFB
			}
			vs = append(vs, verdict(check, fmt.Sprintf("o%03d", tg), "eu", state, cause, 5*time.Second))
		}
	}
	if err := st.Publish(context.Background(), vs); err != nil {
		t.Fatal(err)
	}
	srv := serve(t, Options{Verdicts: st})
	type rowInfo struct{ check, target, state, span string }
	page := func(path string) (rows []rowInfo, unhealthy string, body string) {
		t.Helper()
		code, _, body := get(t, srv, path)
		if code != http.StatusOK {
			t.Fatalf("GET %s = %d\n%s", path, code, body)
		}
		doc := parseHTML(t, body)
		for _, n := range findAll(doc, "data-row-check") {
			var r rowInfo
			r.check, _ = attr(n, "data-row-check")
			r.target, _ = attr(n, "data-row-target")
			r.state, _ = attr(n, "data-row-state")
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				if v, ok := attr(c, "rowspan"); ok {
					r.span = v
				}
			}
			rows = append(rows, r)
		}
		for _, n := range findAll(doc, "data-count") {
			if v, _ := attr(n, "data-count"); v == "unhealthy" {
				unhealthy = text(n)
			}
		}
		return rows, unhealthy, body
	}

	all, unhealthy, body := page("/")
	if len(all) != 1200 {
		t.Fatalf("overview: %d rows, want 1200", len(all))
	}
	if !strings.Contains(body, `href="/?state=unhealthy#checks"`) {
		t.Errorf("overview: the unhealthy count does not link to /?state=unhealthy")
	}
	// Within check http the 50 unhealthy rows come first, by target.
	var http1 []rowInfo
	for _, r := range all {
		if r.check == "http" {
			http1 = append(http1, r)
		}
	}
	if len(http1) != 300 || http1[0].target != "o100" || http1[0].state != "unhealthy" || http1[49].state != "unhealthy" ||
		http1[50].state != "healthy" || http1[50].target != "o000" || http1[0].span != "300" {
		t.Errorf("check http rows: first %+v, 50th %+v, 51st %+v; want the 50 unhealthy ones first (o100…), then o000…", http1[0], http1[49], http1[50])
	}

	rows, count, _ := page("/?state=unhealthy")
	if len(rows) != 50 || count != unhealthy || !strings.HasPrefix(count, "50") {
		t.Errorf("?state=unhealthy: %d rows (want 50), count %q (want the unfiltered %q)", len(rows), count, unhealthy)
	}
	for _, r := range rows {
		if r.state != "unhealthy" || r.check != "http" {
			t.Errorf("?state=unhealthy: row %+v", r)
		}
	}
	if len(rows) > 0 && rows[0].span != "50" {
		t.Errorf("?state=unhealthy: the check's rowspan is %q, want 50", rows[0].span)
	}
	if rows, _, _ := page("/?state=problems"); len(rows) != 53 {
		t.Errorf("?state=problems: %d rows, want 53 (50 unhealthy, 3 degraded)", len(rows))
	}
	if rows, _, _ := page("/?state=problems&check=tls"); len(rows) != 3 || rows[0].target != "o200" {
		t.Errorf("?state=problems&check=tls: %+v, want o200, o201, o202", rows)
	}
	if rows, _, _ := page("/?check=dns"); len(rows) != 300 {
		t.Errorf("?check=dns: %d rows, want 300", len(rows))
	}
	if code, _, b := get(t, srv, "/?state=down"); code != http.StatusBadRequest || !strings.Contains(b, `state: "down": want one of problems, unhealthy`) {
		t.Errorf("?state=down: %d %q, want 400 naming the values", code, b)
	}
}
