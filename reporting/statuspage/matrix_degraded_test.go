package statuspage

import (
	"net/http"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// Degraded ranks above healthy: one region degraded and two healthy make the
// row degraded, and in a region where one vantage is degraded and a newer
// one healthy, the cell shows degraded (the worse fresh state wins).
func TestMatrixDegradedOutranksHealthy(t *testing.T) {
	src := &memSource{now: func() time.Time { return t0 }}
	src.add(verdict("api", "a", "ap", reporting.StateHealthy, "", 3*time.Second))
	src.add(verdict("api", "a", "eu", reporting.StateHealthy, "", 3*time.Second))
	src.add(verdict("api", "a", "us", reporting.StateDegraded, "ttfb", 5*time.Second))
	newer := verdict("api", "a", "us", reporting.StateHealthy, "", time.Second)
	newer.Vantage = "us-2"
	src.add(newer)

	srv := serve(t, Options{Verdicts: src})
	code, _, body := get(t, srv, "/")
	if code != http.StatusOK {
		t.Fatalf("GET / = %d\n%s", code, body)
	}
	doc := parseHTML(t, body)
	got := cells(t, doc)
	for key, want := range map[string]string{"api|a|ap": "healthy", "api|a|eu": "healthy", "api|a|us": "degraded"} {
		if m := got[key]; m == nil || m["data-state"] != want {
			t.Errorf("cell %s: %v, want state %q", key, m, want)
		}
	}
	rows := findAll(doc, "data-row-state")
	if len(rows) != 1 {
		t.Fatalf("%d rows, want 1", len(rows))
	}
	if st, _ := attr(rows[0], "data-row-state"); st != "degraded" {
		t.Errorf("row api × a: state %q, want degraded (one region degraded, two healthy)", st)
	}
}
