package statuspage

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/vigil-synthetics/vigil/reporting"
)

// PublicConfig is `status_page.public`: a second, read-only page for
// customers, on its own listener, that shows the listed checks only, by a
// public name, with their state, uptime and a bar of daily uptime. It never
// shows a URL, a target, a region, an error text, a screenshot or an
// alert, and it serves nothing else (no API, no check pages, no metrics).
type PublicConfig struct {
	// Listen is the public page's own address (host:port). Empty: no
	// public page.
	Listen string `mapstructure:"listen"`
	// Title is its heading. Default: status_page.title.
	Title string `mapstructure:"title"`
	// Checks are the checks it shows, in this order. Required with Listen:
	// nothing is public by default.
	Checks []PublicCheck `mapstructure:"checks"`
}

// PublicCheck is one entry of status_page.public.checks: a check name
// (`- home`) or a map (`- {check: home, name: "Web shop"}`).
type PublicCheck struct {
	Check string `mapstructure:"check"`
	// Name is what the page shows. Default: the check's name.
	Name string `mapstructure:"name"`
}

// Public page limits.
const (
	// maxPublicName bounds status_page.public.checks[].name, in characters.
	maxPublicName = 100
	// publicDays is how many days of daily uptime the public page draws.
	publicDays = 30
)

// PublicDecodeHook lets a status_page.public.checks entry be a bare check
// name.
func PublicDecodeHook(_, to reflect.Type, data any) (any, error) {
	if to == reflect.TypeFor[PublicCheck]() {
		if s, ok := data.(string); ok {
			return map[string]any{"check": s}, nil
		}
	}
	return data, nil
}

// validate checks the public section; errors start with "public.".
func (c *PublicConfig) validate(title string) error {
	var errs []error
	if c.Listen == "" {
		if len(c.Checks) > 0 || c.Title != "" {
			errs = append(errs, errors.New("public.listen: required with public.checks or public.title: the address of the public page (e.g. 0.0.0.0:8080)"))
		}
		return errors.Join(errs...)
	}
	if _, port, err := net.SplitHostPort(c.Listen); err != nil || port == "" {
		errs = append(errs, fmt.Errorf("public.listen: %q: want host:port (e.g. 0.0.0.0:8080 or 127.0.0.1:8080)", c.Listen))
	}
	if len(c.Checks) == 0 {
		errs = append(errs, errors.New("public.checks: required with public.listen: list the checks the public page shows (none is shown by default)"))
	}
	seen := map[string]int{}
	for i, pc := range c.Checks {
		key := fmt.Sprintf("public.checks[%d]", i)
		if pc.Check == "" {
			errs = append(errs, fmt.Errorf("%s.check: required: the name of a check", key))
			continue
		}
		if j, dup := seen[pc.Check]; dup {
			errs = append(errs, fmt.Errorf("%s: %q is listed twice (also status_page.public.checks[%d])", key, pc.Check, j))
		} else {
			seen[pc.Check] = i
		}
		if n := len([]rune(pc.Name)); n > maxPublicName {
			errs = append(errs, fmt.Errorf("%s.name: %d characters: at most %d", key, n, maxPublicName))
		}
		if strings.ContainsFunc(pc.Name, unicode.IsControl) {
			errs = append(errs, fmt.Errorf("%s.name: %q: control characters are not allowed", key, pc.Name))
		}
	}
	if c.Title == "" {
		c.Title = title
	}
	return errors.Join(errs...)
}

// label is the name the public page shows for pc.
func (pc PublicCheck) label() string {
	if pc.Name != "" {
		return pc.Name
	}
	return pc.Check
}

// PublicHandler serves the public page (see PublicConfig) from the same
// store as p: GET / and GET /badge/{check} (an SVG badge of a listed
// check's public state or its uptime, labelled with its public name; no
// ?target), and
// the stylesheet. conf is read on every request, so a reload changes what
// it shows. Everything else is 404.
func (p *Page) PublicHandler(conf func() PublicConfig) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { p.servePublic(w, r, conf()) })
	mux.HandleFunc("GET /badge/{check}", func(w http.ResponseWriter, r *http.Request) {
		check, _ := strings.CutSuffix(r.PathValue("check"), ".svg")
		c := conf()
		i := slices.IndexFunc(c.Checks, func(pc PublicCheck) bool { return pc.Check == check })
		if i < 0 {
			writeBadge(w, http.StatusNotFound, check, "no such check", badgeColors[reporting.StateUnknown])
			return
		}
		label := c.Checks[i].label()
		if r.URL.Query().Has("target") {
			writeBadge(w, http.StatusBadRequest, label, "no ?target here", badgeColors[reporting.StateUnknown])
			return
		}
		if r.URL.Query().Has("uptime") {
			p.badge(w, r, check, label)
			return
		}
		ctx, _, cancel := p.ctx(r)
		defer cancel()
		vs, err := p.o.Verdicts.Verdicts(ctx, max(p.o.Forget, 0))
		if err != nil {
			p.log.Warn("statuspage: public badge: read verdicts", "err", err)
			writeBadge(w, http.StatusServiceUnavailable, label, "unavailable", badgeColors[reporting.StateUnknown])
			return
		}
		st, ok := publicStatesOf(p.present(vs), p.o.Now())[check]
		if !ok {
			st = reporting.StateUnknown
		}
		writeBadge(w, http.StatusOK, label, strings.ToLower(publicStates[st]), badgeColors[st])
	})
	mux.Handle("GET /static/style.css", http.StripPrefix("/static/", staticHandler(p.static)))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintln(w, "not found")
	})
	return securityHeaders(mux)
}

// Public page states: what a customer reads for a check's worst current
// state over its targets and regions.
var publicStates = map[reporting.State]string{
	reporting.StateHealthy:   "Operational",
	reporting.StateDegraded:  "Degraded performance",
	reporting.StateUnhealthy: "Outage",
	reporting.StateUnknown:   "No data",
}

type publicRow struct {
	Name       string
	State      reporting.State
	StateLabel string
	// Since is when an Outage or Degraded performance began (see
	// publicSinceOf); zero for other states or when a verdict does not say.
	Since     time.Time
	SinceText string
	Uptime    []uptimeCell // 24h, 7d, 30d over all targets
	Days      []dayCell
}

type publicData struct {
	Title       string
	Now         time.Time
	Refresh     time.Duration
	Overall     string
	OverallSt   reporting.State
	Rows        []publicRow
	Unavailable bool
}

// servePublic renders the public page for c.
func (p *Page) servePublic(w http.ResponseWriter, r *http.Request, c PublicConfig) {
	ctx, _, cancel := p.ctx(r)
	defer cancel()
	now := p.o.Now()
	d := publicData{Title: c.Title, Now: now, Refresh: p.o.Refresh}
	if d.Title == "" {
		d.Title = p.o.Title
	}
	rows, err := p.publicRows(ctx, c, now)
	if err != nil {
		// The error may name the store's URL: only the log has it.
		p.log.Warn("statuspage: public page: read the store", "err", err)
		d.Unavailable = true
		d.Overall, d.OverallSt = "Status temporarily unavailable", reporting.StateUnknown
		p.render(w, http.StatusServiceUnavailable, "public.html", d)
		return
	}
	d.Rows = rows
	d.Overall, d.OverallSt = overall(rows)
	p.render(w, http.StatusOK, "public.html", d)
}

// publicRows reads the listed checks' current state and uptime.
func (p *Page) publicRows(ctx context.Context, c PublicConfig, now time.Time) ([]publicRow, error) {
	vs, err := p.o.Verdicts.Verdicts(ctx, max(p.o.Forget, 0))
	if err != nil {
		return nil, err
	}
	vs = p.present(vs)
	states := publicStatesOf(vs, now)
	rows := make([]publicRow, 0, len(c.Checks))
	for _, pc := range c.Checks {
		st, ok := states[pc.Check]
		if !ok {
			st = reporting.StateUnknown
		}
		ur, days, err := p.uptimeDays(ctx, pc.Check, now)
		if err != nil {
			return nil, err
		}
		row := publicRow{Name: pc.label(), State: st, StateLabel: publicStates[st], Days: days}
		if row.Since = publicSinceOf(vs, pc.Check, st, now); !row.Since.IsZero() {
			row.SinceText = "since " + fmtSinceAt(row.Since, now) + " (" + fmtAgo(now.Sub(row.Since)) + ")"
		}
		for _, u := range ur {
			// The row over all targets; a check of one target has only
			// that target's row.
			if u.Target == "" || len(ur) == 1 {
				row.Uptime = u.Cells
			}
		}
		if row.Uptime == nil {
			for _, w := range uptimeWindows {
				row.Uptime = append(row.Uptime, uptimeCell{Window: w.Label})
			}
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// publicStatesOf is each check's state as the public page shows it. A
// target's state is its worst fresh verdict over the regions (as the
// operator matrix shows it); the check is unhealthy when every target with
// a verdict is, healthy when every one is, unknown when none has one, and
// degraded otherwise: one origin of several failing, while the others
// serve, is degraded service to a customer, not an outage.
func publicStatesOf(vs []reporting.Verdict, now time.Time) map[string]reporting.State {
	type key struct{ check, target string }
	// A target's state is its worst fresh verdict: a region whose verdict
	// expired (unknown) does not hide what the others report.
	rank := func(st reporting.State) int {
		if st == reporting.StateUnknown {
			return -1
		}
		return severity(st)
	}
	worst := map[key]reporting.State{}
	for _, v := range vs {
		k, st := key{v.Check, v.Target}, v.Current(now)
		if cur, ok := worst[k]; !ok || rank(st) > rank(cur) {
			worst[k] = st
		}
	}
	type count struct{ known, healthy, unhealthy int }
	per := map[string]*count{}
	for k, st := range worst {
		c := per[k.check]
		if c == nil {
			c = &count{}
			per[k.check] = c
		}
		switch st {
		case reporting.StateHealthy:
			c.known++
			c.healthy++
		case reporting.StateUnhealthy:
			c.known++
			c.unhealthy++
		case reporting.StateDegraded:
			c.known++
		}
	}
	out := make(map[string]reporting.State, len(per))
	for check, c := range per {
		switch {
		case c.known == 0:
			out[check] = reporting.StateUnknown
		case c.unhealthy == c.known:
			out[check] = reporting.StateUnhealthy
		case c.healthy == c.known:
			out[check] = reporting.StateHealthy
		default:
			out[check] = reporting.StateDegraded
		}
	}
	return out
}

// publicSinceOf is when check entered its public state st, from the
// Verdict.Since of its fresh verdicts; zero when st is neither an outage
// nor degraded, or a verdict it rests on does not say (an earlier since
// may hide behind it). An outage (every target unhealthy) began when the
// last target went down: the latest over the targets of when each went
// down (the earliest of its unhealthy regions). Degraded performance began
// with the earliest problem among its targets: the earliest since of its
// unhealthy and degraded verdicts.
func publicSinceOf(vs []reporting.Verdict, check string, st reporting.State, now time.Time) time.Time {
	if st != reporting.StateUnhealthy && st != reporting.StateDegraded {
		return time.Time{}
	}
	var out time.Time
	downAt := map[string]time.Time{} // target → when it went down
	unknown := false
	for _, v := range vs {
		cur := v.Current(now)
		if v.Check != check || cur != reporting.StateUnhealthy && (cur != reporting.StateDegraded || st == reporting.StateUnhealthy) {
			continue
		}
		if v.Since.IsZero() {
			unknown = true
			continue
		}
		if st == reporting.StateDegraded {
			if out.IsZero() || v.Since.Before(out) {
				out = v.Since
			}
			continue
		}
		if at, ok := downAt[v.Target]; !ok || v.Since.Before(at) {
			downAt[v.Target] = v.Since
		}
	}
	if unknown {
		return time.Time{}
	}
	for _, at := range downAt {
		if at.After(out) {
			out = at
		}
	}
	return out
}

// overall is the page's headline over rows: every check with data
// healthy, some or all in an outage, some degraded; checks without data
// count only when no check has any.
func overall(rows []publicRow) (string, reporting.State) {
	var known, down, degraded int
	for _, r := range rows {
		switch r.State {
		case reporting.StateHealthy:
			known++
		case reporting.StateDegraded:
			known++
			degraded++
		case reporting.StateUnhealthy:
			known++
			down++
		}
	}
	switch {
	case known == 0:
		return "No data yet", reporting.StateUnknown
	case down == known:
		return "Major outage", reporting.StateUnhealthy
	case down > 0:
		return "Partial outage", reporting.StateUnhealthy
	case degraded > 0:
		return "Degraded performance", reporting.StateDegraded
	}
	return "All systems operational", reporting.StateHealthy
}

// dayCell is one UTC day of a check's runs over all its targets and
// regions.
type dayCell struct {
	Day           time.Time // 00:00 UTC
	Total, Failed int
	Ratio         float64 // 1 − Failed/Total; meaningless when Total is 0
}

// computeDayCounts is computeDays from the store's sums per UTC day.
func computeDayCounts(cs []reporting.RollupCount, now time.Time) []dayCell {
	return foldDays(now, func(add func(t time.Time, total, failed int)) {
		for _, c := range cs {
			add(c.Start, c.Total, c.Failed)
		}
	})
}

// computeDays folds per-minute rollups into the publicDays UTC days ending
// with now's day (the last one partial), oldest first.
func computeDays(rs []reporting.Rollup, now time.Time) []dayCell {
	return foldDays(now, func(add func(t time.Time, total, failed int)) {
		for _, r := range rs {
			add(r.Minute, r.Total, r.Failed)
		}
	})
}

// foldDays is the publicDays UTC days ending with now's day, oldest
// first, with the runs each call of add gave it (runs at t outside them, or
// after now, are left out).
func foldDays(now time.Time, each func(add func(t time.Time, total, failed int))) []dayCell {
	first := now.UTC().Truncate(24*time.Hour).AddDate(0, 0, -(publicDays - 1))
	days := make([]dayCell, publicDays)
	for i := range days {
		days[i].Day = first.AddDate(0, 0, i)
	}
	each(func(t time.Time, total, failed int) {
		t = t.UTC()
		if t.Before(first) || t.After(now) {
			return
		}
		if i := int(t.Sub(first) / (24 * time.Hour)); i < publicDays {
			days[i].Total += total
			days[i].Failed += failed
		}
	})
	for i := range days {
		if days[i].Total > 0 {
			days[i].Ratio = 1 - float64(days[i].Failed)/float64(days[i].Total)
		}
	}
	return days
}
