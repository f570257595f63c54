package statuspage

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// TestCheckPageOverspentBudget: an SLO whose budget is spent many times
// over (one failed run in a fresh store's few) shows how many times, not a
// negative percentage.
func TestCheckPageOverspentBudget(t *testing.T) {
	src := &memSource{now: func() time.Time { return t0 }}
	src.add(verdict("asset", "a", "eu", reporting.StateUnhealthy, "status", time.Minute))
	srv := serve(t, Options{Verdicts: src, SLOs: func() []SLOStatus {
		return []SLOStatus{{Name: "asset-availability", Check: "asset", Objective: "99.9%", Current: 0, BudgetLeft: -999, Window: 30 * 24 * time.Hour}}
	}})
	code, _, body := get(t, srv, "/check/asset")
	if code != http.StatusOK {
		t.Fatalf("GET /check/asset = %d\n%s", code, body)
	}
	rows := findAll(parseHTML(t, body), "data-slo")
	if len(rows) != 1 {
		t.Fatalf("%d SLO rows, want 1", len(rows))
	}
	if s := text(rows[0]); !strings.Contains(s, "exhausted (1000× spent)") || strings.Contains(s, "-9") {
		t.Errorf("SLO row = %q, want the budget as exhausted (1000× spent)", s)
	}
}
