// Package statuspage serves vigil's built-in status page: a server-rendered
// matrix of checks × targets × regions with state and cause, a page per check
// (uptime 24 h / 7 d / 30 d, SLOs and error budget, TTFB p50/p95 charts by
// region, a phase breakdown, recent failures with screenshots), the proxy's
// origins with their flags, active alerts, failing alert deliveries and, in the
// demo, fault switches for the local origins.
//
// Everything is rendered with html/template and inline SVG; CSS and the small
// auto-refresh script are embedded with go:embed, so the page needs no Node
// build step and loads no external resource. The main matrix is readable with
// JavaScript off (a <noscript> meta refresh reloads the page instead).
//
// The page reads only through the small function fields of Options, so it
// never imports canary, proxy or the alerter: cmd/vigil adapts them.
package statuspage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/vigil-synthetics/vigil/reporting/units"

	"github.com/vigil-synthetics/vigil/reporting"
)

// Defaults for Options.
const (
	// DefaultTitle is the page title when Options.Title is empty.
	DefaultTitle = "vigil"
	// DefaultRefresh is the auto-refresh interval when Options.Refresh is 0.
	DefaultRefresh = 5 * time.Second
	// DefaultChartWindow is the TTFB chart span when the request names none.
	DefaultChartWindow = time.Hour
	// DefaultQueryTimeout bounds every read of the sources per request.
	DefaultQueryTimeout = 10 * time.Second
	// DefaultForget is how old a series' latest verdict may be and still
	// appear in the matrix when Options.Forget is 0.
	DefaultForget = 24 * time.Hour
	// DefaultHistoryLimit caps how many raw verdicts a check page reads for
	// its charts and phase breakdown; a window holding more is charted from
	// per-minute rollups, and the phases cover the runs read, saying so.
	DefaultHistoryLimit = 50000
)

// Errors returned by New.
var (
	// ErrNoVerdicts: Options.Verdicts is nil.
	ErrNoVerdicts = errors.New("statuspage: verdicts: a history source is required")
	// ErrNoAdminToken: fault switches are enabled, not Open, and no admin token is set.
	ErrNoAdminToken = errors.New("statuspage: faults: admin_token is required unless the fault switch is open")
	// ErrNoFaultSetter: Faults is set without a Set function.
	ErrNoFaultSetter = errors.New("statuspage: faults: Set is required")
)

// Flag sources of an Origin, as in the proxy's Available predicate.
const (
	FlagVerdict = "verdict" // canary verdicts (quorum of regions)
	FlagPassive = "passive" // the proxy's passive outlier detector
	FlagDrained = "drained" // drained by an operator through the admin API
)

// DefaultFaultModes are the fault switch buttons when FaultControl.Modes is empty.
var DefaultFaultModes = []string{"ok", "down", "slow", "corrupt", "503"}

// Options configures a Page. Only Verdicts is required; every function field
// may be nil, which hides its section.
type Options struct {
	// Verdicts supplies the latest verdicts (matrix), raw history (charts,
	// phases, failures) and per-minute rollups (uptime).
	Verdicts reporting.HistorySource
	// Origins lists the proxy's origins; nil hides the proxy section.
	Origins func() []Origin
	// Alerts lists the active (firing) alerts; nil hides the alert section.
	Alerts func() []Alert
	// Live returns the live traffic of the proxies' pool × origins over
	// the live_errors window (from their signals), read at most once per
	// 5s; nil: the overview shows no live-traffic figures. An origin of
	// Origins whose traffic is Failing is marked, with what its checks
	// say, and counted in the summary.
	Live func(ctx context.Context) ([]LiveOrigin, error)
	// Failing maps a receiver name to its last delivery error, for receivers
	// whose last delivery failed; nil hides the section.
	Failing func() map[string]string
	// SLOs lists SLO states (computed by the alerter); nil hides SLOs on the
	// check pages.
	SLOs func() []SLOStatus
	// LastRuns returns the latest run details of a check that a local canary
	// kept (assertions with got/want, script steps), one per target ×
	// region; nil hides the section on check pages.
	LastRuns func(check string) []RunDetail
	// Notice returns a line shown in a banner above the page, e.g. that
	// Verdicts reads a fallback ("InfluxDB unreachable since T: showing this
	// canary's own results only"); it is called after the page's reads. nil
	// or "": no banner. The banner also carries, after it, the notes the
	// page's reads of Verdicts added (reporting.NoteRead: a store refusing
	// writes whose latest verdicts are completed from memory).
	Notice func() string
	// Faults enables the demo fault switches; nil hides them.
	Faults *FaultControl
	// Title is the page title and heading. Default "vigil".
	Title string
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// ArtifactsDir is the directory failure artifacts are served from, at
	// /artifacts/NAME: <data_dir>/artifacts, never the data dir itself
	// (which holds the store and alert state). Verdict.Artifact and
	// Alert.Artifact name files relative to it. Only image, text and JSON
	// files are served; "" disables /artifacts/.
	ArtifactsDir string
	// AdminToken authorises fault switch POSTs (form field "token" or
	// "Authorization: Bearer"), unless Faults.Open is true. Never logged.
	AdminToken string
	// Refresh is the auto-refresh interval. Default 5s; negative disables it.
	Refresh time.Duration
	// Forget leaves out series whose latest verdict is older than this (a
	// check, target or region removed from the config); younger ones past
	// their Expires show as unknown. Default 24h; negative: never.
	Forget time.Duration
	// Removed, if set, reports a series this process knows is no longer
	// run (its own canary's region and vantage, a pair removed from its
	// config): it is left out at once instead of showing as unknown until
	// Forget.
	Removed func(region, vantage, check, target string) bool
	// Logger receives request errors. Default slog.Default().
	Logger *slog.Logger
}

// Origin is one proxy origin as the proxy sees it.
type Origin struct {
	Pool, Name, URL string
	// Available is the proxy's verdict: it routes to the origin.
	Available bool
	// Flags are the origin's health flags, good or bad.
	Flags []Flag
	// Ejections counts the passive detector's ejections of this origin.
	Ejections int
}

// Flag is one of an origin's health flags.
type Flag struct {
	// Source is FlagVerdict, FlagPassive or FlagDrained.
	Source string
	// Bad reports whether this flag currently keeps the origin out.
	Bad bool
	// Reason says why (e.g. "2/3 regions unhealthy: checksum").
	Reason string
	// Since is when the flag last changed; zero if unknown.
	Since time.Time
}

// Alert is one firing alert.
type Alert struct {
	Rule, Check, Target, Severity, Summary string
	// Regions are the regions agreeing on the condition.
	Regions []string
	// Since is when the alert started firing.
	Since time.Time
	// Artifact is a failure artifact path relative to ArtifactsDir, or "".
	Artifact string
	// Silenced names the maintenance window silencing the alert, or "".
	// A silenced alert is listed, marked "silenced by NAME".
	Silenced string
}

// SLOStatus is the current state of one SLO (over one target).
type SLOStatus struct {
	// Name is the name shown; SLO the SLO's name in the config ("": Name),
	// Target the target its figures are for ("": all the check's targets).
	Name, Check string
	SLO, Target string
	// Objective is the target as configured, e.g. "99.9%" or "600ms".
	Objective string
	// Current is the SLI over Window: a ratio 0..1 when Objective is a
	// percentage (shown as a percentage), seconds when Objective is a
	// duration, otherwise shown as is. Below 0 (or 0 for a duration
	// objective): no runs in the window yet, shown as such.
	Current float64
	// CurrentAtLeast marks Current as a lower bound: a TTFB p95 that falls
	// on runs that timed out before their first byte (shown "≥ 400 ms").
	CurrentAtLeast bool
	// BudgetLeft is the error budget left, 1 = untouched, 0 = spent
	// (negative: overspent).
	BudgetLeft float64
	// Window is the SLO window, e.g. 30 days.
	Window time.Duration
}

// RunDetail is the latest run of one check × target in one region, as the
// canary that ran it kept it.
type RunDetail struct {
	Target, Region, Vantage string
	At                      time.Time
	OK                      bool
	Cause, Err              string
	Assertions              []Assertion
	Steps                   []Step
}

// Assertion is one assertion of a run: whether it held, what the origin gave
// and what the config wanted, as display strings.
type Assertion struct {
	Name      string
	OK        bool
	Got, Want string
}

// Step is one step of a script run.
type Step struct {
	Name       string
	OK         bool
	Skipped    bool // not run because an earlier step failed
	Cause, Err string
	Duration   time.Duration
	Assertions []Assertion
}

// FaultControl drives the demo origins' fault switches.
type FaultControl struct {
	// Origins are the switchable origins' names, in display order.
	Origins []string
	// Modes are the fault modes offered as buttons. Default DefaultFaultModes.
	Modes []string
	// Set switches origin to mode. Required.
	Set func(origin, mode string) error
	// Current returns origin's current mode; nil: not shown.
	Current func(origin string) string
	// Open lets fault POSTs through without the admin token (local demo
	// only). Cross-origin POSTs are refused either way.
	Open bool
}

// Page is the status page. Create it with New; it is safe for concurrent use.
type Page struct {
	o       Options
	tmpl    *template.Template
	static  fs.FS
	arts    fs.FS    // nil: artifacts disabled
	artDirs []string // ArtifactsDir as given and absolute, for legacy references
	csrf    *http.CrossOriginProtection
	log     *slog.Logger
	uptimeC uptimeCache
	liveC   liveCache
}

// New validates o, sets its defaults and parses the templates.
func New(o Options) (*Page, error) {
	if o.Verdicts == nil {
		return nil, ErrNoVerdicts
	}
	if o.Title == "" {
		o.Title = DefaultTitle
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Refresh == 0 {
		o.Refresh = DefaultRefresh
	}
	if o.Forget == 0 {
		o.Forget = DefaultForget
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if f := o.Faults; f != nil {
		if f.Set == nil {
			return nil, ErrNoFaultSetter
		}
		if !f.Open && o.AdminToken == "" {
			return nil, ErrNoAdminToken
		}
		if len(f.Modes) == 0 {
			c := *f
			c.Modes = DefaultFaultModes
			o.Faults = &c
		}
	}
	p := &Page{o: o, log: o.Logger, csrf: http.NewCrossOriginProtection()}
	p.uptimeC.entries = map[string]uptimeEntry{}
	t, err := template.New("").Funcs(funcs).ParseFS(assets, "assets/*.html")
	if err != nil {
		return nil, fmt.Errorf("statuspage: templates: %w", err)
	}
	p.tmpl = t
	if p.static, err = fs.Sub(assets, "assets/static"); err != nil {
		return nil, fmt.Errorf("statuspage: static: %w", err)
	}
	if o.ArtifactsDir != "" {
		root, err := os.OpenRoot(o.ArtifactsDir)
		if err != nil {
			return nil, fmt.Errorf("statuspage: artifacts_dir: %w", err)
		}
		// The root stays open for the life of the Page (one descriptor).
		p.arts = root.FS()
		p.artDirs = []string{filepath.Clean(o.ArtifactsDir)}
		if abs, err := filepath.Abs(o.ArtifactsDir); err == nil && abs != p.artDirs[0] {
			p.artDirs = append(p.artDirs, abs)
		}
	}
	return p, nil
}

// Handler returns the status page's handler; mount it at "/" (and at
// "GET /api/v1/slos" where another handler takes /api/v1/). It serves
// GET /, GET /check/{name}, GET /api/v1/slos (the check pages' uptime
// and SLO figures as JSON, see serveSLOs), GET /badge/{check} (an SVG
// badge of its state or uptime, see serveBadge), GET /artifacts/{path},
// GET /static/{file} and POST /fault.
func (p *Page) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", p.serveIndex)
	mux.HandleFunc("GET /check/{name}", p.serveCheck)
	mux.HandleFunc("GET /api/v1/slos", p.serveSLOs)
	mux.HandleFunc("GET /badge/{check}", p.serveBadge)
	mux.Handle("GET /static/", http.StripPrefix("/static/", staticHandler(p.static)))
	mux.HandleFunc("GET /artifacts/{path...}", p.serveArtifact)
	mux.Handle("POST /fault", p.csrf.Handler(http.HandlerFunc(p.serveFault)))
	mux.HandleFunc("/", p.serveNotFound)
	return securityHeaders(mux)
}

// securityHeaders forbids every external resource, framing and sniffing.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; script-src 'self'; "+
			"img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("X-Frame-Options", "DENY")
		h.ServeHTTP(w, r)
	})
}

func staticHandler(f fs.FS) http.Handler {
	fsrv := http.FileServerFS(f)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "" || strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=300")
		fsrv.ServeHTTP(w, r)
	})
}

// ctx bounds a request's reads of the sources; notes collects what the
// sources say about their answers (reporting.NoteRead: a store whose
// writes wait in memory), for the banner.
func (p *Page) ctx(r *http.Request) (ctx context.Context, notes *reporting.ReadNotes, cancel context.CancelFunc) {
	ctx, notes = reporting.WithReadNotes(r.Context())
	ctx, cancel = context.WithTimeout(ctx, DefaultQueryTimeout)
	return ctx, notes, cancel
}

// tokenOK reports whether r carries the admin token, in the form field
// "token" or as a bearer token (constant-time).
func (p *Page) tokenOK(r *http.Request) bool {
	if got := r.PostFormValue("token"); got != "" {
		return units.TokenMatches(got, p.o.AdminToken)
	}
	return units.BearerMatches(r, p.o.AdminToken)
}

// render executes the named page template into w with status code.
func (p *Page) render(w http.ResponseWriter, code int, name string, data any) {
	var b bytes.Buffer
	if err := p.tmpl.ExecuteTemplate(&b, name, data); err != nil {
		p.log.Error("statuspage: render", "page", name, "err", err)
		http.Error(w, "status page: render failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(b.Bytes())
}

// uptimeCache keeps per-check uptime for a minute: a 30-day rollup read is
// the most expensive query the page makes, and the figures move slowly.
type uptimeCache struct {
	mu      sync.Mutex
	entries map[string]uptimeEntry
}

type uptimeEntry struct {
	at   time.Time
	rows []uptimeRow
	days []dayCell
}

const uptimeTTL = time.Minute

func (c *uptimeCache) get(check string, now time.Time) (uptimeEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[check]
	if !ok || now.Sub(e.at) >= uptimeTTL || now.Before(e.at) {
		return uptimeEntry{}, false
	}
	return e, true
}

func (c *uptimeCache) put(check string, now time.Time, e uptimeEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) > 1000 {
		clear(c.entries)
	}
	e.at = now
	c.entries[check] = e
}

// present leaves out the series Options.Removed names.
func (p *Page) present(vs []reporting.Verdict) []reporting.Verdict {
	if p.o.Removed == nil {
		return vs
	}
	out := vs[:0:0]
	for _, v := range vs {
		if !p.o.Removed(v.Region, v.Vantage, v.Check, v.Target) {
			out = append(out, v)
		}
	}
	return out
}
