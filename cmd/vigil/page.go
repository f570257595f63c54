package main

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/vigil-synthetics/vigil/canary"
	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/alerting"
	"github.com/vigil-synthetics/vigil/reporting/statuspage"
	"github.com/vigil-synthetics/vigil/scripts"
)

// statusPage builds the status page over the app's store, proxy and
// alerter; nil when there is no store to read.
func (a *app) statusPage() http.Handler {
	sp := a.cfg.StatusPage
	if a.hist == nil || !sp.IsEnabled() {
		return nil
	}
	var verdicts reporting.HistorySource = a.shown()
	if a.can != nil {
		verdicts = withPending{verdicts, a.can}
	}
	o := statuspage.Options{
		Verdicts:   verdicts,
		Notice:     a.pageNotice,
		AdminToken: a.cfg.Agent.AdminToken,
		Faults:     a.opts.faults,
		Title:      sp.Title,
		Refresh:    sp.Refresh,
		Logger:     a.log,
	}
	if sp.ServeArtifacts() {
		// Only <data_dir>/artifacts is served: the data dir also holds the
		// store and alerts.json, which must never be downloadable.
		dir := scripts.ArtifactsDir(a.cfg.Agent.DataDir)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			a.log.Warn("status page: artifacts not served", "dir", dir, "error", err)
		} else {
			o.ArtifactsDir = dir
		}
	}
	if a.prx != nil {
		o.Origins = a.pageOrigins
		if sigs, ok := a.hist.(reporting.SignalSource); ok {
			o.Live = func(ctx context.Context) ([]statuspage.LiveOrigin, error) { return a.pageLive(ctx, sigs) }
		}
	}
	if a.can != nil {
		o.LastRuns = a.pageLastRuns
		// This canary's own pairs that a reload removed leave the page at
		// once; other regions' and other vantages' series (other canaries
		// writing to the same store) are not this config's to judge.
		var mu sync.Mutex
		var of *File // the config pairs was computed from
		var pairs map[string][]string
		o.Removed = func(region, vantage, check, target string) bool {
			cfg := a.current()
			mu.Lock()
			if of != cfg {
				of, pairs = cfg, cfg.pairNames()
			}
			ps := pairs
			mu.Unlock()
			if ps == nil || region != cfg.Agent.Region || vantage != cfg.Agent.Vantage {
				return false
			}
			return !slices.Contains(ps[check], target)
		}
	}
	if a.alr != nil {
		o.Alerts = a.pageAlerts
		o.Failing = a.pageFailing
		o.SLOs = a.pageSLOs
	}
	p, err := statuspage.New(o)
	if err != nil {
		a.log.Error("status page disabled", "error", err)
		return nil
	}
	a.page = p
	return p.Handler()
}

func (a *app) pageOrigins() []statuspage.Origin {
	var out []statuspage.Origin
	for _, s := range a.prx.Origins() {
		o := statuspage.Origin{Pool: s.Pool, Name: s.Name, URL: s.URL, Available: s.Available, Ejections: s.Ejections}
		for _, f := range []struct {
			src, key string
			bad      bool
		}{
			{statuspage.FlagVerdict, "verdict", s.VerdictDown},
			{statuspage.FlagPassive, "passive", s.PassiveEjected},
			{statuspage.FlagDrained, "drained", s.Drained},
		} {
			reason := s.Why[f.key]
			switch {
			case f.bad:
			case f.key == "verdict" && s.VerdictBelowQuorum != "":
				reason = s.VerdictBelowQuorum
			case f.key == "verdict" && strings.Contains(s.EjectionRefused, "verdicts: "),
				f.key == "passive" && strings.Contains(s.EjectionRefused, "passive: "):
				// In service only because max_ejected refused to take it out.
				reason = s.EjectionRefused
			}
			o.Flags = append(o.Flags, statuspage.Flag{Source: f.src, Bad: f.bad, Reason: reason, Since: s.Since[f.key]})
		}
		out = append(out, o)
	}
	return out
}

// pageLive gives the overview the proxies' live traffic per pool × origin
// over alerting.live_errors.window, judged by that rule's thresholds.
func (a *app) pageLive(ctx context.Context, sigs reporting.SignalSource) ([]statuspage.LiveOrigin, error) {
	r := a.current().Alerting.LiveErrors.WithDefaults()
	now := time.Now()
	ss, err := sigs.Signals(ctx, now.Add(-r.Window))
	if err != nil {
		return nil, err
	}
	var out []statuspage.LiveOrigin
	for _, t := range alerting.LiveFigures(ss, now, r.Window) {
		out = append(out, statuspage.LiveOrigin{Pool: t.Pool, Origin: t.Origin, Requests: t.Requests, Failed: t.Failed(),
			Breakdown: t.Breakdown(), Ejected: t.Ejected, Signals: t.Signals, Window: r.Window,
			Failing: !r.Disabled && t.Failing(r)})
	}
	return out, nil
}

// pageLastRuns gives the check page the local canary's latest run of
// each target of check: assertions with got and want, script steps. The
// canary redacted their texts (secrets from ${…} read ***).
func (a *app) pageLastRuns(check string) []statuspage.RunDetail {
	var out []statuspage.RunDetail
	for _, r := range a.can.LastRuns(check) {
		res := r.Result
		d := statuspage.RunDetail{Target: r.Target, Region: r.Region, Vantage: r.Vantage, At: r.At, OK: res.OK,
			Cause: string(res.Cause), Err: res.Err, Assertions: pageAssertions(res.Assertions)}
		for _, s := range res.Steps {
			d.Steps = append(d.Steps, statuspage.Step{Name: s.Name, OK: s.OK, Skipped: s.Skipped, Cause: string(s.Cause),
				Err: s.Err, Duration: s.Duration, Assertions: pageAssertions(s.Assertions)})
		}
		out = append(out, d)
	}
	return out
}

func pageAssertions(as []checks.AssertionResult) []statuspage.Assertion {
	out := make([]statuspage.Assertion, 0, len(as))
	for _, x := range as {
		out = append(out, statuspage.Assertion{Name: x.Name, OK: x.OK, Got: x.Got, Want: x.Want})
	}
	return out
}

// pageFailing gives the page each failing alert receiver's last delivery
// error. The alerter hid the receiver's own secrets (URL credentials and
// query values, header values, routing keys); the ${…} values of the
// config are hidden here too, as /healthz hides them: the page needs no
// login.
func (a *app) pageFailing() map[string]string {
	f := a.alr.DeliveryFailures()
	red := a.current().redactor
	for rcv, e := range f {
		f[rcv] = red.redact(e)
	}
	return f
}

func (a *app) pageAlerts() []statuspage.Alert {
	var out []statuspage.Alert
	for _, al := range a.alr.Active() {
		if al.Resolved() {
			continue
		}
		// The alert carries the link the notifications got,
		// {status_page_url}/artifacts/NAME (escaped); the page wants NAME.
		art := ""
		if i := strings.LastIndex(al.ArtifactURL, "/artifacts/"); i >= 0 {
			if n, err := url.PathUnescape(al.ArtifactURL[i+len("/artifacts/"):]); err == nil {
				art = n
			}
		}
		out = append(out, statuspage.Alert{Rule: al.Rule, Check: al.Check, Target: al.Target,
			Severity: al.Severity, Summary: al.Summary, Regions: al.Regions, Since: al.StartsAt, Artifact: art,
			Silenced: al.Silenced})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Since.Before(out[j].Since) })
	return out
}

// sloCacheFor bounds how often the status page recomputes SLO standings:
// each computation reads the SLO windows' rollups (30 days by default).
const sloCacheFor = 30 * time.Second

func (a *app) pageSLOs() []statuspage.SLOStatus {
	a.sloMu.Lock()
	defer a.sloMu.Unlock()
	if time.Since(a.sloAt) < sloCacheFor && a.sloAt.After(time.Time{}) {
		return a.sloCache
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sts, err := a.alr.SLOStatus(ctx)
	if err != nil {
		a.log.Warn("status page: SLO standings unavailable", "error", err)
		return a.sloCache
	}
	out := make([]statuspage.SLOStatus, 0, len(sts))
	for _, s := range sts {
		name := s.SLO
		if s.Target != "" {
			name += " · " + s.Target
		}
		st := statuspage.SLOStatus{Name: name, Check: s.Check, SLO: s.SLO, Target: s.Target, Window: s.Window}
		switch {
		case s.Objective > 0:
			st.Objective = s.Objective.String()
			st.Current = s.Availability
			st.BudgetLeft = s.BudgetRemaining
		case s.TTFBObjective > 0:
			st.Name += " (TTFB p95)"
			st.Objective = s.TTFBObjective.String()
			st.Current, st.CurrentAtLeast = s.TTFBP95.Seconds(), s.TTFBP95TimedOut
			st.BudgetLeft = 1
			if !s.Met {
				st.BudgetLeft = 0
			}
		}
		out = append(out, st)
	}
	a.sloCache, a.sloAt = out, time.Now()
	return out
}

// withPending completes the verdicts the status page shows with this
// agent's canary's own: a pair whose first verdict is judged but not yet in
// the store (the write is in flight) shows its in-memory verdict, and a
// pair that has not run yet shows a placeholder (unknown, "not run yet"),
// so a check whose first run is ahead (hourly, cron) has its row from the
// start and no row blinks out between its first run and its first write.
type withPending struct {
	reporting.HistorySource
	can *canary.Canary
}

// RollupCounts and CountsRollups are the store's.
func (w withPending) RollupCounts(ctx context.Context, q reporting.HistoryQuery, step time.Duration) ([]reporting.RollupCount, error) {
	return reporting.CountRollups(ctx, w.HistorySource, q, step)
}

func (w withPending) CountsRollups() bool { return reporting.CountsRollups(w.HistorySource) }

func (w withPending) Verdicts(ctx context.Context, maxAge time.Duration) ([]reporting.Verdict, error) {
	vs, err := w.HistorySource.Verdicts(ctx, maxAge)
	if err != nil {
		return vs, err
	}
	type key struct{ check, target, region, vantage string }
	have := make(map[key]bool, len(vs))
	for _, v := range vs {
		have[key{v.Check, v.Target, v.Region, v.Vantage}] = true
	}
	mem, _ := w.can.Verdicts(ctx, maxAge)
	for _, p := range append(mem, w.can.Pending()...) {
		if k := (key{p.Check, p.Target, p.Region, p.Vantage}); !have[k] {
			have[k] = true
			vs = append(vs, p)
		}
	}
	return vs, nil
}

// pageNotice is the status page's banner: the store fallback's notice and a
// rejected reload, which otherwise only /healthz and the log show (the page
// names no error: those can carry URLs).
func (a *app) pageNotice() string {
	var parts []string
	if n := a.fallback.Notice(); n != "" { // "" without a fallback
		parts = append(parts, n)
	}
	a.mu.Lock()
	failed := a.reloadErr != nil
	a.mu.Unlock()
	if failed {
		parts = append(parts, "The last config reload failed; the previous config is still running (see /healthz).")
	}
	return strings.Join(parts, " ")
}
