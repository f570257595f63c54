package statuspage

import (
	"cmp"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// sloReport is one check × target of GET /api/v1/slos: the uptime and SLO
// figures its check page shows.
type sloReport struct {
	Check string `json:"check"`
	// Target is "" for the check over all its targets (the page's "all
	// targets" uptime row, and an SLO over every target without runs yet).
	Target string         `json:"target"`
	Uptime []uptimeWindow `json:"uptime"`
	SLOs   []sloFigures   `json:"slos"`
}

// uptimeWindow is one uptime cell: 1 − failed ÷ runs over the window.
type uptimeWindow struct {
	Window        string   `json:"window"`
	WindowSeconds int64    `json:"window_seconds"`
	Runs          int      `json:"runs"`
	Failed        int      `json:"failed"`
	Uptime        *float64 `json:"uptime"` // 0..1; null without runs
	// CoveredSeconds is how much of the window the history spans (its
	// oldest minute with runs to now, at most the window): less than
	// WindowSeconds when the history starts inside the window. 0 without
	// runs.
	CoveredSeconds int64 `json:"covered_seconds"`
}

// sloFigures is one SLO row of a check page.
type sloFigures struct {
	Name string `json:"name"`
	// Kind is "availability" (Unit "ratio") or "ttfb_p95" (Unit "seconds").
	Kind           string   `json:"kind"`
	Objective      string   `json:"objective"`       // as configured: "99.9%", "600ms"
	ObjectiveValue *float64 `json:"objective_value"` // in Unit
	Unit           string   `json:"unit"`
	WindowSeconds  int64    `json:"window_seconds"`
	Current        *float64 `json:"current"` // in Unit; null without runs in the window
	// CurrentAtLeast is true when Current is a lower bound: a TTFB p95
	// that falls on runs that timed out before their first byte (their
	// wait), above any objective.
	CurrentAtLeast bool `json:"current_at_least"`
	// BudgetLeft is the error budget left: 1 untouched, 0 spent, below 0
	// overspent (−4: spent five times).
	BudgetLeft *float64 `json:"budget_left"`
	State      string   `json:"state"`
}

// sloUnit is the unit of s's Current and objective: "ratio" for a
// percentage objective (an availability SLO), "seconds" for a duration (a
// TTFB p95 SLO), "" otherwise; objective is the objective in that unit.
func sloUnit(s SLOStatus) (kind, unit string, objective *float64) {
	obj := strings.TrimSpace(s.Objective)
	if pct, ok := strings.CutSuffix(obj, "%"); ok {
		if f, err := strconv.ParseFloat(strings.TrimSpace(pct), 64); err == nil {
			return "availability", "ratio", finite(f / 100)
		}
		return "availability", "ratio", nil
	}
	if d, err := time.ParseDuration(obj); err == nil {
		return "ttfb_p95", "seconds", finite(d.Seconds())
	}
	return "", "", nil
}

// finite is &f, nil for NaN and ±Inf (which JSON cannot carry).
func finite(f float64) *float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return &f
}

// figures is s as a check page shows it: the same no-runs test
// (sloNoRuns) and budget state (budgetState) as its SLO table.
func figures(s SLOStatus) sloFigures {
	kind, unit, obj := sloUnit(s)
	f := sloFigures{Name: cmp.Or(s.SLO, s.Name), Kind: kind, Objective: s.Objective, ObjectiveValue: obj, Unit: unit,
		WindowSeconds: int64(s.Window / time.Second), BudgetLeft: finite(s.BudgetLeft)}
	if sloNoRuns(s) {
		f.State = "no_runs"
	} else {
		f.Current, f.CurrentAtLeast = finite(s.Current), s.CurrentAtLeast
		f.State = budgetState(s.BudgetLeft)
	}
	return f
}

// uptimeJSON turns an uptime row's cells into JSON; nil cells (a
// target without rollups) read 0 runs in each window.
func uptimeJSON(cells []uptimeCell) []uptimeWindow {
	out := make([]uptimeWindow, 0, len(uptimeWindows))
	for i, w := range uptimeWindows {
		u := uptimeWindow{Window: w.Label, WindowSeconds: int64(w.D / time.Second)}
		if i < len(cells) {
			c := cells[i]
			u.Runs, u.Failed = c.Total, c.Failed
			if c.Total > 0 {
				u.Uptime = finite(c.Ratio)
				u.CoveredSeconds = int64(c.Covered / time.Second)
			}
		}
		out = append(out, u)
	}
	return out
}

// serveSLOs is GET /api/v1/slos: per check × target, the uptime over
// each window and each SLO's figures, as the check pages show them.
// ?check= and ?target= narrow it; a check that nothing is known of (no
// verdict, no runs in 30 days, no SLO) answers 404.
func (p *Page) serveSLOs(w http.ResponseWriter, r *http.Request) {
	ctx, notes, cancel := p.ctx(r)
	defer cancel()
	now := p.o.Now()
	q := r.URL.Query()
	check, target := q.Get("check"), q.Get("target")
	_, hasTarget := q["target"]
	keep := func(c, t string) bool { return (check == "" || c == check) && (!hasTarget || t == target) }

	vs, err := p.o.Verdicts.Verdicts(ctx, max(p.o.Forget, 0))
	if err != nil {
		p.log.Warn("statuspage: read verdicts", "err", err)
		jsonError(w, http.StatusServiceUnavailable, "cannot read verdicts: "+err.Error())
		return
	}
	vs = p.present(vs)
	var slos []SLOStatus
	if p.o.SLOs != nil {
		slos = p.o.SLOs()
	}
	checks := map[string]bool{}
	if check != "" {
		checks[check] = true // known or not: its rollups tell
	} else {
		for _, v := range vs {
			checks[v.Check] = true
		}
		for _, s := range slos {
			checks[s.Check] = true
		}
	}

	type key struct{ check, target string }
	reports := map[key]*sloReport{}
	get := func(c, t string) *sloReport {
		k := key{c, t}
		if reports[k] == nil {
			reports[k] = &sloReport{Check: c, Target: t, SLOs: []sloFigures{}}
		}
		return reports[k]
	}
	known := false
	for c := range checks {
		rows, err := p.uptime(ctx, c, now)
		if err != nil {
			p.log.Warn("statuspage: read rollups", "check", c, "err", err)
			jsonError(w, http.StatusServiceUnavailable, "cannot read rollups: "+err.Error())
			return
		}
		for _, row := range rows {
			known = known || hasRuns([]uptimeRow{row})
			if keep(c, row.Target) {
				get(c, row.Target).Uptime = uptimeJSON(row.Cells)
			}
		}
	}
	for _, v := range vs {
		if checks[v.Check] {
			known = true
			if keep(v.Check, v.Target) {
				get(v.Check, v.Target)
			}
		}
	}
	for _, s := range slos {
		if checks[s.Check] {
			known = true
			if keep(s.Check, s.Target) {
				rep := get(s.Check, s.Target)
				rep.SLOs = append(rep.SLOs, figures(s))
			}
		}
	}
	if check != "" && !known {
		jsonError(w, http.StatusNotFound, fmt.Sprintf("check %q: no verdicts, no runs in the last %s and no SLO", check, uptimeWindows[len(uptimeWindows)-1].Label))
		return
	}
	out := make([]*sloReport, 0, len(reports))
	for _, rep := range reports {
		if rep.Uptime == nil {
			rep.Uptime = uptimeJSON(nil)
		}
		out = append(out, rep)
	}
	// By check, then target, the check over all its targets last (as on
	// its page).
	slices.SortFunc(out, func(a, b *sloReport) int {
		return cmp.Or(cmp.Compare(a.Check, b.Check), cmp.Compare(allLast(a.Target), allLast(b.Target)), cmp.Compare(a.Target, b.Target))
	})
	if n := notes.String(); n != "" {
		w.Header().Set(reporting.ReadNotesHeader, n)
	}
	reporting.WriteJSON(w, http.StatusOK, out)
}

// allLast sorts target "" (all targets) after the others.
func allLast(target string) int {
	if target == "" {
		return 1
	}
	return 0
}

// jsonError is the /api/v1/ error body: {"error": "..."}.
func jsonError(w http.ResponseWriter, code int, msg string) {
	reporting.WriteJSON(w, code, map[string]string{"error": msg})
}
