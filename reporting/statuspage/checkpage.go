package statuspage

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// uptimeWindows are the uptime columns of a check page.
var uptimeWindows = []struct {
	Label string
	D     time.Duration
}{{"24h", 24 * time.Hour}, {"7d", 7 * 24 * time.Hour}, {"30d", 30 * 24 * time.Hour}}

// chartWindows are the TTFB chart spans a check page offers (?window=).
var chartWindows = []struct {
	Label string
	D     time.Duration
}{{"15m", 15 * time.Minute}, {"1h", time.Hour}, {"6h", 6 * time.Hour}, {"24h", 24 * time.Hour}, {"7d", 7 * 24 * time.Hour}}

// rawChartSpan is the longest chart window drawn from raw history; longer
// windows are drawn from per-minute rollups.
const rawChartSpan = time.Hour

// phaseWindow is how far back the phase breakdown averages runs.
const phaseWindow = 15 * time.Minute

// failureWindow and maxFailures bound the recent failures and slow runs
// lists: the newest maxFailures of each within failureWindow, read with a
// failed-only query (reporting.DownRuns, reporting.SlowRuns), so the
// lists cover the whole window however many passing runs came after.
const (
	failureWindow = 24 * time.Hour
	maxFailures   = 30
)

// ManyTargets is the number of targets above which a check page of all
// targets is compact: a table with a row per target (state, TTFB mean and
// p95 from per-minute rollups, 24h uptime, a link to the target's own page)
// instead of a TTFB chart per target, the phase breakdown averaged per
// region over all targets, and a refresh at most every BigPageRefresh.
const ManyTargets = 20

// historyLimit is DefaultHistoryLimit (a variable for the tests).
var historyLimit = DefaultHistoryLimit

// compactHistoryLimit caps the raw runs a compact page reads for its
// phase breakdown: its span is then the runs read (about 3 minutes of 300
// targets every 10 s), which the page says.
const compactHistoryLimit = 5000

// BigPageRefresh is the shortest auto-refresh of a compact check page
// (ManyTargets).
const BigPageRefresh = 30 * time.Second

type uptimeRow struct {
	Target string // "" = all targets
	Cells  []uptimeCell
}

type uptimeCell struct {
	Window        string
	Total, Failed int
	// Ratio is 1 − Failed/Total; meaningless when Total is 0.
	Ratio float64
	// Covered is how much of the window the history spans: from the
	// oldest minute with runs (in any window) to now, at most the
	// window. Shorter than the window (Partial) when the history starts
	// inside it: a check added lately, or a store that keeps less
	// (store.embedded.rollup_retention, an InfluxDB retention policy). 0
	// without runs in the window.
	Covered time.Duration
	Partial bool
}

// computeUptime folds per-minute rollups into uptime per target and over all
// targets for each uptime window ending at now. A minute counts in a window
// when it overlaps it.
func computeUptime(rs []reporting.Rollup, now time.Time) []uptimeRow {
	per := map[string]*uptimeAcc{}
	all := &uptimeAcc{}
	for _, r := range rs {
		a := per[r.Target]
		if a == nil {
			a = &uptimeAcc{}
			per[r.Target] = a
		}
		end := r.Minute.Add(time.Minute)
		if r.Total > 0 && !r.Minute.After(now) {
			for _, x := range []*uptimeAcc{a, all} {
				if x.first.IsZero() || r.Minute.Before(x.first) {
					x.first = r.Minute
				}
			}
		}
		for i, w := range uptimeWindows {
			if end.After(now.Add(-w.D)) && !r.Minute.After(now) {
				a.total[i] += r.Total
				a.failed[i] += r.Failed
				all.total[i] += r.Total
				all.failed[i] += r.Failed
			}
		}
	}
	return uptimeRows(per, all, now)
}

// computeUptimeCounts is computeUptime from the store's sums: wins[i]
// holds the runs of uptimeWindows[i] ending at now, one row per target ×
// region.
func computeUptimeCounts(wins [][]reporting.RollupCount, now time.Time) []uptimeRow {
	per := map[string]*uptimeAcc{}
	all := &uptimeAcc{}
	for i, cs := range wins {
		for _, c := range cs {
			a := per[c.Target]
			if a == nil {
				a = &uptimeAcc{}
				per[c.Target] = a
			}
			if !c.First.IsZero() {
				for _, x := range []*uptimeAcc{a, all} {
					if x.first.IsZero() || c.First.Before(x.first) {
						x.first = c.First
					}
				}
			}
			a.total[i] += c.Total
			a.failed[i] += c.Failed
			all.total[i] += c.Total
			all.failed[i] += c.Failed
		}
	}
	return uptimeRows(per, all, now)
}

// uptimeAcc is one target's (or all targets') runs per uptime window.
type uptimeAcc struct {
	total, failed [3]int
	first         time.Time // the oldest minute with runs: where history starts
}

// uptimeRows turns the windows' runs per target and over all targets into
// the rows the page shows: per target, sorted, then over all targets
// when there are several.
func uptimeRows(per map[string]*uptimeAcc, all *uptimeAcc, now time.Time) []uptimeRow {
	mk := func(target string, a *uptimeAcc) uptimeRow {
		row := uptimeRow{Target: target}
		for i, w := range uptimeWindows {
			c := uptimeCell{Window: w.Label, Total: a.total[i], Failed: a.failed[i]}
			if c.Total > 0 {
				c.Ratio = 1 - float64(c.Failed)/float64(c.Total)
				// A minute overlapping the window's start counts whole:
				// history reaching within a minute of it covers it.
				c.Covered = min(now.Sub(a.first), w.D)
				c.Partial = c.Covered < w.D-time.Minute
			}
			row.Cells = append(row.Cells, c)
		}
		return row
	}
	var out []uptimeRow
	for _, t := range slices.Sorted(maps.Keys(per)) {
		out = append(out, mk(t, per[t]))
	}
	if len(per) > 1 {
		out = append(out, mk("", all))
	}
	return out
}

// phaseRow is the average phase split of recent runs of one target × region.
type phaseRow struct {
	Target, Region string
	Runs           int
	// TimedOut counts the runs that timed out before their first byte in
	// the span: not in the averages (their phases never ended), listed
	// beside them so slow-past-the-timeout runs do not vanish.
	TimedOut                          int
	DNS, Connect, TLS, Wait, Transfer time.Duration
	Total                             time.Duration
	Bars                              []phaseBar
}

type phaseBar struct {
	Phase    string
	Class    string
	Avg      time.Duration
	X, Width float64 // in percent of the bar area
}

var phaseNames = []struct{ Name, Class string }{
	{"dns", "ph-dns"}, {"connect", "ph-connect"}, {"tls", "ph-tls"}, {"ttfb (server wait)", "ph-wait"}, {"transfer", "ph-transfer"},
}

// computePhases averages the phases of runs with a first byte since from,
// and counts the runs that timed out before it (reporting.Verdict.TTFBSample).
// Wait is TTFB minus DNS, connect and TLS (TTFB counts from the run's start).
func computePhases(vs []reporting.Verdict, from time.Time) []phaseRow {
	type k struct{ t, r string }
	sums := map[k]*[6]time.Duration{}
	n := map[k]int{}
	timedOut := map[k]int{}
	for _, v := range vs {
		if v.At.Before(from) {
			continue
		}
		if _, to, ok := v.TTFBSample(); ok && to {
			timedOut[k{v.Target, v.Region}]++
			continue
		}
		if v.TTFB <= 0 {
			continue
		}
		key := k{v.Target, v.Region}
		s := sums[key]
		if s == nil {
			s = &[6]time.Duration{}
			sums[key] = s
		}
		wait := max(v.TTFB-v.DNS-v.Connect-v.TLS, 0)
		s[0] += v.DNS
		s[1] += v.Connect
		s[2] += v.TLS
		s[3] += wait
		s[4] += v.Transfer
		n[key]++
	}
	var out []phaseRow
	var longest time.Duration
	for key, s := range sums {
		c := time.Duration(n[key])
		r := phaseRow{Target: key.t, Region: key.r, Runs: n[key], TimedOut: timedOut[key],
			DNS: s[0] / c, Connect: s[1] / c, TLS: s[2] / c, Wait: s[3] / c, Transfer: s[4] / c}
		r.Total = r.DNS + r.Connect + r.TLS + r.Wait + r.Transfer
		longest = max(longest, r.Total)
		out = append(out, r)
	}
	for i := range out {
		r := &out[i]
		x := 0.0
		for j, d := range []time.Duration{r.DNS, r.Connect, r.TLS, r.Wait, r.Transfer} {
			w := 0.0
			if longest > 0 {
				w = 100 * float64(d) / float64(longest)
			}
			r.Bars = append(r.Bars, phaseBar{Phase: phaseNames[j].Name, Class: phaseNames[j].Class, Avg: d, X: x, Width: w})
			x += w
		}
	}
	slices.SortFunc(out, func(a, b phaseRow) int {
		return cmp.Or(cmp.Compare(a.Target, b.Target), cmp.Compare(a.Region, b.Region))
	})
	return out
}

// failure is one failed run shown on a check page.
type failure struct {
	reporting.Verdict
	ArtifactURL string
}

// runList is one table of runs on a check page (recent failures, recent
// slow runs); Class is each row's class.
type runList struct {
	Runs  []failure
	Now   time.Time
	Class string
}

// checkData is a check page's model.
type checkData struct {
	base
	Check       string
	Tier        string
	Matrix      matrix
	Uptime      []uptimeRow
	SLOs        []SLOStatus
	HasSLOs     bool
	Window      string
	Windows     []string
	FromRollups bool
	Charts      []chart
	Phases      []phaseRow
	PhaseSpan   time.Duration
	Failures    []failure
	// Slow are recent runs that failed only a ttfb or duration objective
	// (available, over the latency objective), newest first.
	Slow        []failure
	LastRuns    []RunDetail
	HasLastRuns bool
	FailWindow  time.Duration
	Known       bool
	// Compact: the page of all targets of a check with more than
	// ManyTargets: TargetRows stand for the charts.
	Compact    bool
	TargetRows []targetRow
	// ChartNote says why a chart of a window up to rawChartSpan is drawn
	// from rollups: the window held more runs than a page reads raw.
	ChartNote string
	// Target, from ?target=, narrows every section to that target ("": all).
	Target string
}

func (p *Page) serveCheck(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	ctx, notes, cancel := p.ctx(r)
	defer cancel()
	now := p.o.Now()
	d := checkData{base: p.base(r, now, name), Check: name, PhaseSpan: phaseWindow, FailWindow: failureWindow}
	code := http.StatusOK
	fail := func(what string, err error) {
		p.log.Warn("statuspage: "+what, "check", name, "err", err)
		if d.Error == "" {
			d.Error = what + ": " + err.Error()
		}
		code = http.StatusServiceUnavailable
	}

	// ?target=T (the alert links carry it) shows only T's rows and series.
	d.Target = r.URL.Query().Get("target")
	keep := func(t string) bool { return d.Target == "" || t == d.Target }

	win := DefaultChartWindow
	d.Window = "1h"
	want := r.URL.Query().Get("window")
	for _, cw := range chartWindows {
		d.Windows = append(d.Windows, cw.Label)
		if want == cw.Label {
			win, d.Window = cw.D, cw.Label
		}
	}
	if want != "" && want != d.Window {
		// A window the page does not offer would otherwise silently draw
		// the default hour under a link that says otherwise.
		http.Error(w, fmt.Sprintf("status page: window: %q: want one of %s", want, strings.Join(d.Windows, ", ")),
			http.StatusBadRequest)
		return
	}

	vs, err := p.o.Verdicts.Verdicts(ctx, max(p.o.Forget, 0))
	vs = p.present(vs)
	if err != nil {
		fail("cannot read verdicts", err)
	}
	var mine []reporting.Verdict
	for _, v := range vs {
		if v.Check == name && keep(v.Target) {
			mine = append(mine, v)
			if d.Tier == "" {
				d.Tier = v.Tier
			}
		}
	}
	d.Matrix = buildMatrix(mine, now)

	if rows, err := p.uptime(ctx, name, now); err != nil {
		fail("cannot read rollups", err)
	} else {
		d.Uptime = rows
	}
	if d.Target != "" {
		d.Uptime = slices.DeleteFunc(slices.Clone(d.Uptime), func(u uptimeRow) bool { return u.Target != d.Target })
	}

	if p.o.SLOs != nil {
		d.HasSLOs = true
		for _, s := range p.o.SLOs() {
			if s.Check == name {
				d.SLOs = append(d.SLOs, s)
			}
		}
	}

	if p.o.LastRuns != nil {
		d.HasLastRuns = true
		d.LastRuns = slices.DeleteFunc(slices.Clone(p.o.LastRuns(name)), func(r RunDetail) bool { return !keep(r.Target) })
		slices.SortFunc(d.LastRuns, func(a, b RunDetail) int {
			return cmp.Or(cmp.Compare(a.Target, b.Target), cmp.Compare(a.Region, b.Region), cmp.Compare(a.Vantage, b.Vantage))
		})
	}

	// The page of all targets of a check with many of them is compact
	// (ManyTargets): a row per target for the charts, refreshed less often.
	if d.Target == "" && max(d.Matrix.Targets, len(d.Uptime)-1) > ManyTargets {
		d.Compact = true
		if d.Refresh > 0 {
			d.Refresh = max(d.Refresh, BigPageRefresh)
		}
	}

	// Raw runs feed the phase breakdown (phaseWindow) and the charts of
	// windows up to rawChartSpan; a compact page draws no chart.
	rawSpan, limit := max(min(win, rawChartSpan), phaseWindow), historyLimit
	if d.Compact {
		rawSpan, limit = phaseWindow, compactHistoryLimit
	}
	hist, err := p.o.Verdicts.History(ctx, reporting.HistoryQuery{Check: name, Target: d.Target, From: now.Add(-rawSpan), To: now, Limit: limit})
	if err != nil {
		fail("cannot read history", err)
	}
	// At the limit the raw runs start later than asked: the page never
	// claims a span it did not read.
	var rawFrom time.Time
	if len(hist) >= limit {
		rawFrom = hist[0].At
	}
	switch {
	case d.Compact:
		rs, err := p.o.Verdicts.Rollups(ctx, reporting.HistoryQuery{Check: name, From: now.Add(-win), To: now})
		if err != nil {
			fail("cannot read rollups", err)
		}
		d.TargetRows = targetRows(rs, d.Matrix, d.Uptime)
	case win <= rawChartSpan && rawFrom.IsZero():
		d.Charts = ttfbCharts(hist, now.Add(-win), now)
	default:
		if win <= rawChartSpan {
			d.ChartNote = fmt.Sprintf("the window holds more than the %d runs a page reads raw", historyLimit)
		}
		d.FromRollups = true
		rs, err := p.o.Verdicts.Rollups(ctx, reporting.HistoryQuery{Check: name, Target: d.Target, From: now.Add(-win), To: now})
		if err != nil {
			fail("cannot read rollups", err)
		}
		d.Charts = ttfbRollupCharts(rs, now.Add(-win), now)
	}
	phaseFrom := now.Add(-phaseWindow)
	if rawFrom.After(phaseFrom) {
		phaseFrom = rawFrom
		d.PhaseSpan = now.Sub(rawFrom).Round(time.Second)
	}
	if d.Compact {
		// One row per region over all targets; a target's own page has its rows.
		all := make([]reporting.Verdict, len(hist))
		for i, v := range hist {
			v.Target = ""
			all[i] = v
		}
		d.Phases = computePhases(all, phaseFrom)
	} else {
		d.Phases = computePhases(hist, phaseFrom)
	}

	// A run that failed only its ttfb or duration objective is slow, not
	// down (uptime does not count it as failed): it is listed apart. The
	// agent's own trouble (AgentFault) is listed with the failures, with
	// its cause.
	var failed int
	for _, l := range []struct {
		runs reporting.RunFilter
		to   *[]failure
	}{{reporting.DownRuns, &d.Failures}, {reporting.SlowRuns, &d.Slow}} {
		fh, err := p.o.Verdicts.History(ctx, reporting.HistoryQuery{Check: name, Target: d.Target, From: now.Add(-failureWindow), To: now,
			Limit: maxFailures, Runs: l.runs})
		if err != nil {
			fail("cannot read history", err)
		}
		failed += len(fh)
		for i := len(fh) - 1; i >= 0 && len(*l.to) < maxFailures; i-- {
			if v := fh[i]; l.runs.Keep(v) {
				*l.to = append(*l.to, failure{Verdict: v, ArtifactURL: p.artifactURL(v.Artifact)})
			}
		}
		slices.SortStableFunc(*l.to, func(a, b failure) int { return b.At.Compare(a.At) })
	}
	d.Known = len(mine) > 0 || len(hist) > 0 || failed > 0 || len(d.LastRuns) > 0 || hasRuns(d.Uptime)
	if !d.Known && code == http.StatusOK {
		code = http.StatusNotFound
	}
	d.Notice = withDuplicates(p.notice(notes), mine)
	p.render(w, code, "check.html", d)
}

// targetRow is one target of a compact check page (ManyTargets).
type targetRow struct {
	Target string
	State  reporting.State // the worst shown state over its regions ("none": no verdict)
	// Since says since when the target is unhealthy or degraded, from
	// its cells in State: the earliest ("down since 10:41 UTC (12m 5s)");
	// "" when healthy, unknown, or a cell does not say.
	Since string
	// Runs counts the TTFB samples in the chart window; Mean is over the
	// runs with a TTFB, P95 the p95 of the minutes' p95 weighted by their
	// samples (TimedOut: it falls on runs that timed out before their
	// first byte, and is a lower bound).
	Runs     int
	Mean     time.Duration
	P95      time.Duration
	TimedOut bool
	Uptime   *uptimeCell // 24h; nil without runs
}

// targetRows folds the rollups of the chart window into a row per target
// of the matrix, the uptime rows or the rollups: the rows with a problem
// (unhealthy, then degraded, unknown) first, then by name.
func targetRows(rs []reporting.Rollup, m matrix, up []uptimeRow) []targetRow {
	byTarget := map[string][]reporting.Rollup{}
	for _, r := range rs {
		byTarget[r.Target] = append(byTarget[r.Target], r)
	}
	rows := map[string]*targetRow{}
	get := func(t string) *targetRow {
		if rows[t] == nil {
			rows[t] = &targetRow{Target: t, State: stateNone}
		}
		return rows[t]
	}
	for _, r := range m.Rows {
		row := get(r.Target)
		row.State = r.State
		var first *cell
		for i := range r.Cells {
			c := &r.Cells[i]
			if c.State != r.State {
				continue
			}
			if c.SinceText == "" {
				first = nil
				break
			}
			if first == nil || c.Since.Before(first.Since) {
				first = c
			}
		}
		if first != nil {
			row.Since = first.SinceText
		}
	}
	for i := range up {
		if up[i].Target == "" {
			continue
		}
		row := get(up[i].Target)
		for j := range up[i].Cells {
			if c := &up[i].Cells[j]; c.Window == uptimeWindows[0].Label && c.Total > 0 {
				row.Uptime = c
			}
		}
	}
	for t, minutes := range byTarget {
		row := get(t)
		var sum time.Duration
		var withTTFB int
		for _, r := range minutes {
			row.Runs += r.TTFBSamples()
			sum += r.TTFBSum
			withTTFB += r.TTFBRuns
		}
		if withTTFB > 0 {
			row.Mean = sum / time.Duration(withTTFB)
		}
		slices.SortFunc(minutes, func(a, b reporting.Rollup) int {
			if a.TTFBP95TimedOut() != b.TTFBP95TimedOut() {
				if a.TTFBP95TimedOut() {
					return 1
				}
				return -1
			}
			return cmp.Compare(a.TTFBP95, b.TTFBP95)
		})
		need, acc := int(math.Ceil(0.95*float64(row.Runs))), 0
		for _, r := range minutes {
			if acc += r.TTFBSamples(); acc >= need && r.TTFBSamples() > 0 {
				row.P95, row.TimedOut = r.TTFBP95, r.TTFBP95TimedOut()
				break
			}
		}
	}
	out := make([]targetRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b targetRow) int {
		return cmp.Or(-cmp.Compare(severity(a.State), severity(b.State)), cmp.Compare(a.Target, b.Target))
	})
	return out
}

func hasRuns(rows []uptimeRow) bool {
	for _, r := range rows {
		for _, c := range r.Cells {
			if c.Total > 0 {
				return true
			}
		}
	}
	return false
}

// uptime is check's uptime per target (and over all targets) for each
// uptime window ending at now, kept a minute (uptimeC). The caller must not
// modify the rows.
func (p *Page) uptime(ctx context.Context, check string, now time.Time) ([]uptimeRow, error) {
	rows, _, err := p.uptimeDays(ctx, check, now)
	return rows, err
}

// uptimeDays is uptime, and the check's daily uptime over the last
// publicDays UTC days (the public page's bar), from the same rollups.
func (p *Page) uptimeDays(ctx context.Context, check string, now time.Time) ([]uptimeRow, []dayCell, error) {
	if e, ok := p.uptimeC.get(check, now); ok {
		return e.rows, e.days, nil
	}
	longest := uptimeWindows[len(uptimeWindows)-1].D
	from := now.Add(-longest)
	if d := now.UTC().Truncate(24*time.Hour).AddDate(0, 0, -(publicDays - 1)); d.Before(from) {
		from = d
	}
	var rows []uptimeRow
	var days []dayCell
	if reporting.CountsRollups(p.o.Verdicts) {
		// The store sums them: a few rows per series per window, where the
		// minutes of 30 days are 43,200 rows per series.
		wins := make([][]reporting.RollupCount, len(uptimeWindows))
		for i, w := range uptimeWindows {
			cs, err := reporting.CountRollups(ctx, p.o.Verdicts, reporting.HistoryQuery{Check: check, From: now.Add(-w.D), To: now}, 0)
			if err != nil {
				return nil, nil, err
			}
			wins[i] = cs
		}
		first := now.UTC().Truncate(24*time.Hour).AddDate(0, 0, -(publicDays - 1))
		ds, err := reporting.CountRollups(ctx, p.o.Verdicts, reporting.HistoryQuery{Check: check, From: first, To: now}, 24*time.Hour)
		if err != nil {
			return nil, nil, err
		}
		rows, days = computeUptimeCounts(wins, now), computeDayCounts(ds, now)
	} else {
		rs, err := p.o.Verdicts.Rollups(ctx, reporting.HistoryQuery{Check: check, From: from, To: now})
		if err != nil {
			return nil, nil, err
		}
		rows, days = computeUptime(rs, now), computeDays(rs, now)
	}
	p.uptimeC.put(check, now, uptimeEntry{rows: rows, days: days})
	return rows, days, nil
}

// percentile returns the nearest-rank q-quantile (0 < q <= 1) of sorted ds.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
