package statuspage

import (
	"embed"
	"fmt"
	"html/template"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/units"
)

//go:embed assets
var assets embed.FS

var funcs = template.FuncMap{
	"runs":       fmtRuns,
	"tabTitle":   tabTitle,
	"icon":       stateIcon,
	"ms":         fmtMs,
	"ago":        fmtAgo,
	"certLeft":   fmtCertLeft,
	"since":      func(t, now time.Time) string { return fmtAgo(now.Sub(t)) },
	"pct":        fmtPct,
	"ratio":      func(f float64) string { return strconv.FormatFloat(f, 'f', 6, 64) },
	"region":     regionLabel,
	"checkURL":   func(name string) string { return "/check/" + url.PathEscape(name) },
	"dur":        fmtDur,
	"seconds":    func(d time.Duration) int64 { return int64(d / time.Second) },
	"f1":         func(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) },
	"sloCurrent": sloCurrent,
	"sloNoRuns":  sloNoRuns,
	"runList":    func(runs []failure, now time.Time, class string) runList { return runList{runs, now, class} },
	"budget":     fmtBudget,
	"budgetW": func(b float64) float64 {
		if math.IsNaN(b) {
			return 0
		}
		return math.Round(1000*min(max(b, 0), 1)) / 10
	},
	"budgetState": budgetState,
	"join":        strings.Join,
	"redact":      units.RedactURL,
	"utc":         func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	"rfc":         func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"add":         func(a, b float64) float64 { return a + b },
	"sub":         func(a, b float64) float64 { return a - b },
	"secs":        func(d time.Duration) int { return int(d / time.Second) },
	// TTFB figures that fall on timed-out runs (chart.go).
	"atLeast":      atLeast,
	"timedOutNote": timedOutNote,
	// The public page (public.go).
	"publicDays":    func() int { return publicDays },
	"publicRefresh": func(d time.Duration) int { return max(int(d/time.Second), 30) },
	"dayBarWidth":   func() int { return publicDays*8 - 2 },
	"dayX":          func(i int) int { return i * 8 },
	"day":           func(t time.Time) string { return t.UTC().Format("2006-01-02") },
	"dayColor": func(d dayCell) string {
		if d.Total == 0 {
			return "#c9ced6"
		}
		return uptimeColor(d.Ratio)
	},
	"dayText": func(d dayCell) string {
		if d.Total == 0 {
			return "no data"
		}
		return fmtPct(d.Ratio) + " uptime"
	},
	"lower": strings.ToLower,
	"title": func(s string) string {
		if s == "" {
			return s
		}
		return strings.ToUpper(s[:1]) + s[1:]
	},
}

// stateIcon is the text symbol shown beside a state's colour, so state never
// depends on colour alone.
func stateIcon(s reporting.State) string {
	switch s {
	case reporting.StateHealthy:
		return "✓"
	case reporting.StateDegraded:
		return "▲"
	case reporting.StateUnhealthy:
		return "✕"
	case stateNone:
		return "–"
	}
	return "?"
}

// fmtMs formats a duration in milliseconds: "0.42 ms", "4.2 ms", "123 ms", "2.41 s".
func fmtMs(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case ms < 1:
		return strconv.FormatFloat(ms, 'f', 2, 64) + " ms"
	case ms < 10:
		return strconv.FormatFloat(ms, 'f', 1, 64) + " ms"
	case ms < 1000:
		return strconv.FormatFloat(ms, 'f', 0, 64) + " ms"
	}
	return strconv.FormatFloat(ms/1000, 'f', 2, 64) + " s"
}

// fmtAgo formats an age coarsely: "3s", "4m 10s", "2h 5m", "3d 4h".
func fmtAgo(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int64(d / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm %ds", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%dh %dm", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%dd %dh", s/86400, s%86400/3600)
}

// fmtDur formats a window: "30d", "24h", "6h", "5m", "1m30s".
func fmtDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "—"
	case d%(24*time.Hour) == 0 && d > 24*time.Hour:
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	}
	return d.String()
}

// fmtPct formats a ratio 0..1 as a percentage with three decimals, rounded
// down so that 99.9996 % never reads as 100.000 %.
func fmtPct(r float64) string {
	v := math.Floor(r*100*1000+1e-6) / 1000
	return strconv.FormatFloat(v, 'f', 3, 64) + "%"
}

// fmtBudget formats the error budget left (1 = untouched, 0 = spent,
// below 0 = overspent). An overspent budget reads as how many times over it
// was spent ("exhausted (1000× spent)" for -999), never as a negative
// percentage such as -99900.0%, which a short window on a fresh store
// easily reaches.
func fmtBudget(b float64) string {
	if math.IsNaN(b) {
		return "unknown"
	}
	if b <= 0 {
		spent := 1 - b
		switch {
		case math.IsInf(spent, 1):
			return "exhausted"
		case spent < 1.05:
			return "exhausted"
		case spent < 10:
			return "exhausted (" + strconv.FormatFloat(spent, 'f', 1, 64) + "× spent)"
		}
		return "exhausted (" + strconv.FormatFloat(math.Round(spent), 'f', 0, 64) + "× spent)"
	}
	return strconv.FormatFloat(b*100, 'f', 1, 64) + "% left"
}

// budgetState is the state an error budget left b (1 = untouched, 0 =
// spent) is shown in: unhealthy when spent, degraded below a quarter left,
// healthy otherwise.
func budgetState(b float64) string {
	switch {
	case math.IsNaN(b):
		return "unknown"
	case b <= 0:
		return "unhealthy"
	case b < 0.25:
		return "degraded"
	}
	return "healthy"
}

// sloCurrent formats an SLI in its objective's unit (see SLOStatus.Current):
// "no runs yet" for an SLO without runs in its window.
func sloCurrent(s SLOStatus) string {
	if sloNoRuns(s) {
		return "no runs yet"
	}
	obj := strings.TrimSpace(s.Objective)
	if strings.HasSuffix(obj, "%") {
		return fmtPct(s.Current)
	}
	if _, err := time.ParseDuration(obj); err == nil {
		if s.CurrentAtLeast {
			return "≥ " + fmtMs(time.Duration(s.Current*float64(time.Second))) + " (timeouts)"
		}
		return fmtMs(time.Duration(s.Current * float64(time.Second)))
	}
	return strconv.FormatFloat(s.Current, 'g', 6, 64)
}

// sloNoRuns reports whether s has no runs in its window: Current below 0,
// or, for a duration objective (a TTFB p95, which a run with a first byte
// never makes 0), 0.
func sloNoRuns(s SLOStatus) bool {
	if s.Current < 0 {
		return true
	}
	_, err := time.ParseDuration(strings.TrimSpace(s.Objective))
	return err == nil && s.Current == 0
}

func regionLabel(r string) string {
	if r == "" {
		return "(no region)"
	}
	return r
}

// fmtRuns is "1 run" or "N runs".
func fmtRuns(n int) string {
	if n == 1 {
		return "1 run"
	}
	return strconv.Itoa(n) + " runs"
}

// fmtStateSince says since when a pair has been in state s, for a matrix
// cell: "down since 10:41 UTC (12m 5s)", "degraded since 09:03 UTC (2h
// 5m)"; the date comes first when it is not now's (UTC) day: "down since
// 2026-11-30 22:10 UTC (1d 12h)".
func fmtStateSince(s reporting.State, since, now time.Time) string {
	word := string(s)
	if s == reporting.StateUnhealthy {
		word = "down"
	}
	return word + " since " + fmtSinceAt(since, now) + " (" + fmtAgo(now.Sub(since)) + ")"
}

// fmtSinceAt is t's time of day in UTC, "10:41 UTC", with its date first
// when it is not now's (UTC) day: "2026-11-30 22:10 UTC".
func fmtSinceAt(t, now time.Time) string {
	t, now = t.UTC(), now.UTC()
	if t.YearDay() != now.YearDay() || t.Year() != now.Year() {
		return t.Format("2006-01-02 15:04 UTC")
	}
	return t.Format("15:04 UTC")
}

// fmtCertLeft says when a certificate expires for a matrix cell: "expires
// in 4 days", "expires in 5 hours", "expired 2 days ago".
func fmtCertLeft(d time.Duration) string {
	past := d < 0
	if past {
		d = -d
	}
	var n string
	switch {
	case d >= 36*time.Hour:
		n = strconv.Itoa(int((d+12*time.Hour)/(24*time.Hour))) + " days"
	case d >= 90*time.Minute:
		n = strconv.Itoa(int((d+30*time.Minute)/time.Hour)) + " hours"
	default:
		n = strconv.Itoa(max(int((d+30*time.Second)/time.Minute), 1)) + " min"
	}
	if past {
		return "expired " + n + " ago"
	}
	return "expires in " + n
}

// tabTitle is the browser tab's title for a page titled t: t followed by
// " status", unless t already ends in "status" ("Acme status", not
// "Acme status status").
func tabTitle(t string) string {
	if strings.HasSuffix(strings.ToLower(strings.TrimSpace(t)), "status") {
		return t
	}
	return t + " status"
}
