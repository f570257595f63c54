package statuspage

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// cell is one check × target × region of the matrix. Several vantages in one
// region fold into one cell: the worst fresh verdict, or the latest stale one.
type cell struct {
	Check, Target, Region string
	// State is the state shown: StateUnknown when stale or missing.
	State reporting.State
	// Stale: the latest verdict expired; Last is its state then.
	Stale   bool
	Last    reporting.State
	Missing bool // no verdict at all for this region: State is stateNone
	OK      bool
	Cause   string
	Err     string
	Status  int
	TTFB    time.Duration
	Age     time.Duration
	// Vantages are the vantages reporting into this region.
	Vantages []string
	Artifact string
	// Held is the end of a flap hold-down keeping a fresh unhealthy verdict
	// unhealthy whatever the runs say; zero when none.
	Held time.Time
	// Since is when a fresh unhealthy or degraded verdict's pair entered
	// that state (Verdict.Since) and SinceText says it ("down since 10:41
	// UTC (12m 5s)"); zero and "" when the cell shows another state or
	// the verdict does not say (one written before Since existed).
	Since     time.Time
	SinceText string
	// Pending: a configured pair that has not run yet (a placeholder with
	// no date).
	Pending bool
	// CertExpiry is when the certificate the last run saw expires, when
	// that is within certShowWithin (or past); zero otherwise.
	CertExpiry time.Time
	CertLeft   time.Duration
}

// certShowWithin is how close a certificate's expiry must be for a cell to
// show it: past the 14 days of alerting.cert_expiry_days' default, so a
// cert_expiry alert's link shows the certificate it is about.
const certShowWithin = 30 * 24 * time.Hour

// row is one check × target.
type row struct {
	Check, Target, Tier string
	Cells               []cell
	// State is the row's worst shown state.
	State reporting.State
	// Span is the number of rows of this check, on its first row; 0 on the others.
	Span int
}

// counts tallies cells by shown state.
type counts struct {
	Healthy, Degraded, Unhealthy, Unknown, Total int
}

func (c *counts) add(s reporting.State) {
	c.Total++
	switch s {
	case reporting.StateHealthy:
		c.Healthy++
	case reporting.StateDegraded:
		c.Degraded++
	case reporting.StateUnhealthy:
		c.Unhealthy++
	default:
		c.Unknown++
	}
}

type matrix struct {
	Regions []string
	Rows    []row
	Counts  counts
	Checks  int
	Targets int
}

// stateNone marks a cell without any verdict: the check does not run in
// that region (or has not yet). It is not counted in the summary.
const stateNone reporting.State = "none"

// severity orders states for "worst of": unhealthy > degraded > unknown >
// healthy > none.
func severity(s reporting.State) int {
	switch s {
	case stateNone:
		return -1
	case reporting.StateUnhealthy:
		return 3
	case reporting.StateDegraded:
		return 2
	case reporting.StateHealthy:
		return 0
	}
	return 1
}

// buildMatrix folds the latest verdicts into rows (sorted by check, target)
// and region columns (sorted). Cells without a verdict are unknown/missing.
func buildMatrix(vs []reporting.Verdict, now time.Time) matrix {
	type rk struct{ check, target string }
	type ck struct{ check, target, region string }
	regionSet := map[string]bool{}
	rows := map[rk]*row{}
	cells := map[ck]*cell{}
	for _, v := range vs {
		regionSet[v.Region] = true
		k := rk{v.Check, v.Target}
		r := rows[k]
		if r == nil {
			r = &row{Check: v.Check, Target: v.Target}
			rows[k] = r
		}
		if r.Tier == "" {
			r.Tier = v.Tier
		}
		c := cellOf(v, now)
		key := ck{v.Check, v.Target, v.Region}
		old := cells[key]
		if old == nil {
			cells[key] = &c
			continue
		}
		c.Vantages = append(old.Vantages, c.Vantages...)
		if better(c, *old) {
			cells[key] = &c
		} else {
			old.Vantages = c.Vantages
		}
	}
	m := matrix{}
	for r := range regionSet {
		m.Regions = append(m.Regions, r)
	}
	slices.Sort(m.Regions)
	checks, targets := map[string]bool{}, map[string]bool{}
	for k, r := range rows {
		checks[k.check], targets[k.target] = true, true
		r.State = stateNone
		for _, reg := range m.Regions {
			c := cells[ck{k.check, k.target, reg}]
			if c == nil {
				c = &cell{Check: k.check, Target: k.target, Region: reg, State: stateNone, Missing: true}
			}
			slices.Sort(c.Vantages)
			c.Vantages = slices.Compact(c.Vantages)
			r.Cells = append(r.Cells, *c)
			if !c.Missing {
				m.Counts.add(c.State)
			}
			if severity(c.State) > severity(r.State) {
				r.State = c.State
			}
		}
		m.Rows = append(m.Rows, *r)
	}
	// Within a check the rows with a problem come first: unhealthy, then
	// degraded, unknown, healthy, each by target.
	slices.SortFunc(m.Rows, func(a, b row) int {
		return cmp.Or(cmp.Compare(a.Check, b.Check), -cmp.Compare(severity(a.State), severity(b.State)), cmp.Compare(a.Target, b.Target))
	})
	m.span()
	m.Checks, m.Targets = len(checks), len(targets)
	return m
}

// span sets the Span of each check's first row.
func (m *matrix) span() {
	for i := 0; i < len(m.Rows); {
		j := i + 1
		for j < len(m.Rows) && m.Rows[j].Check == m.Rows[i].Check {
			j++
		}
		m.Rows[i].Span = j - i
		for k := i + 1; k < j; k++ {
			m.Rows[k].Span = 0
		}
		i = j
	}
}

// stateFilters are the overview's ?state= values: a row is kept when one
// of its cells (with a verdict) is in that state; "problems" keeps the
// rows with a cell that is not healthy.
var stateFilters = []string{"problems", string(reporting.StateUnhealthy), string(reporting.StateDegraded),
	string(reporting.StateUnknown), string(reporting.StateHealthy)}

// filter keeps the rows of check ("": every check) with a cell in state
// (a stateFilters value; "": any). The counts stay those of every row.
func (m *matrix) filter(state, check string) {
	if state == "" && check == "" {
		return
	}
	m.Rows = slices.DeleteFunc(m.Rows, func(r row) bool {
		if check != "" && r.Check != check {
			return true
		}
		if state == "" {
			return false
		}
		for _, c := range r.Cells {
			if c.Missing {
				continue
			}
			if state == "problems" && c.State != reporting.StateHealthy || string(c.State) == state {
				return false
			}
		}
		return true
	})
	m.span()
}

// better reports whether a should be shown instead of b in one cell: a fresh
// verdict beats a stale one; among fresh ones the worse state wins, then the
// newer.
func better(a, b cell) bool {
	if a.Stale != b.Stale {
		return !a.Stale
	}
	if !a.Stale && severity(a.State) != severity(b.State) {
		return severity(a.State) > severity(b.State)
	}
	return a.Age < b.Age
}

func cellOf(v reporting.Verdict, now time.Time) cell {
	cur := v.Current(now)
	c := cell{
		Check: v.Check, Target: v.Target, Region: v.Region,
		State: cur, Last: v.State, Stale: cur == reporting.StateUnknown && v.State != reporting.StateUnknown && v.State != "",
		OK: v.OK, Cause: v.Cause, Err: v.Err, Status: v.StatusCode, TTFB: v.TTFB,
		Age: max(now.Sub(v.At), 0), Artifact: v.Artifact, Pending: v.At.IsZero(),
	}
	if v.Vantage != "" {
		c.Vantages = []string{v.Vantage}
	}
	if !c.Stale && cur == reporting.StateUnhealthy && v.HeldUntil.After(now) {
		c.Held = v.HeldUntil
	}
	if (cur == reporting.StateUnhealthy || cur == reporting.StateDegraded) && !v.Since.IsZero() {
		c.Since, c.SinceText = v.Since, fmtStateSince(cur, v.Since, now)
	}
	if !v.CertExpiry.IsZero() && v.CertExpiry.Sub(now) <= certShowWithin {
		c.CertExpiry, c.CertLeft = v.CertExpiry, v.CertExpiry.Sub(now)
	}
	return c
}

// indexData is the overview page's model.
type indexData struct {
	base
	Matrix   matrix
	Origins  []originView
	HasProxy bool
	// OriginsOut counts origins the proxy does not route to.
	OriginsOut int
	// HasLive: Options.Live is set (and the proxy section shown);
	// LiveFailing counts the origins whose live traffic fails.
	HasLive     bool
	LiveFailing int
	Alerts      []alertView
	HasAlert    bool
	Failing     []failing
	Faults      *faultView
	// State and Check are the matrix filter (?state=, ?check=; "": none);
	// Shown counts the rows it kept, AllRows the rows before it.
	State, Check   string
	Shown, AllRows int
	Filtered       bool
	StateFilters   []string
}

type originView struct {
	Origin
	BadFlags int
	// Live marks an origin whose live traffic fails (liveText), or one
	// the proxy holds out by passive detection while its checks pass; "".
	Live string
}

type alertView struct {
	Alert
	ArtifactURL string
}

type failing struct{ Receiver, Err string }

type faultView struct {
	Origins  []faultOrigin
	Modes    []string
	NeedAuth bool
}

type faultOrigin struct{ Name, Current string }

func (p *Page) serveIndex(w http.ResponseWriter, r *http.Request) {
	ctx, notes, cancel := p.ctx(r)
	defer cancel()
	now := p.o.Now()
	d := indexData{base: p.base(r, now, "")}
	code := http.StatusOK
	vs, err := p.o.Verdicts.Verdicts(ctx, max(p.o.Forget, 0))
	vs = p.present(vs)
	if err != nil {
		p.log.Warn("statuspage: read verdicts", "err", err)
		d.Error = "cannot read verdicts: " + err.Error()
		code = http.StatusServiceUnavailable
	}
	d.Matrix = buildMatrix(vs, now)
	// ?state= and ?check= narrow the matrix (the summary still counts
	// every cell); the summary's counts link to them.
	q := r.URL.Query()
	d.State, d.Check, d.StateFilters = q.Get("state"), q.Get("check"), stateFilters
	if d.State != "" && !slices.Contains(stateFilters, d.State) {
		http.Error(w, fmt.Sprintf("status page: state: %q: want one of %s", d.State, strings.Join(stateFilters, ", ")), http.StatusBadRequest)
		return
	}
	d.AllRows = len(d.Matrix.Rows)
	d.Matrix.filter(d.State, d.Check)
	d.Shown, d.Filtered = len(d.Matrix.Rows), d.State != "" || d.Check != ""
	if p.o.Origins != nil {
		d.HasProxy = true
		for _, o := range p.o.Origins() {
			ov := originView{Origin: o}
			for _, f := range o.Flags {
				if f.Bad {
					ov.BadFlags++
				}
			}
			if !o.Available {
				d.OriginsOut++
			}
			d.Origins = append(d.Origins, ov)
		}
		slices.SortStableFunc(d.Origins, func(a, b originView) int {
			return cmp.Or(cmp.Compare(a.Pool, b.Pool), cmp.Compare(a.Name, b.Name))
		})
		if p.o.Live != nil {
			d.HasLive = true
			p.markLive(ctx, &d, vs, now)
		}
	}
	if p.o.Alerts != nil {
		d.HasAlert = true
		for _, a := range p.o.Alerts() {
			d.Alerts = append(d.Alerts, alertView{Alert: a, ArtifactURL: p.artifactURL(a.Artifact)})
		}
		slices.SortStableFunc(d.Alerts, func(a, b alertView) int {
			return cmp.Or(cmp.Compare(sevRank(a.Severity), sevRank(b.Severity)), a.Since.Compare(b.Since),
				cmp.Compare(a.Check, b.Check), cmp.Compare(a.Target, b.Target))
		})
	}
	if p.o.Failing != nil {
		for rcv, e := range p.o.Failing() {
			d.Failing = append(d.Failing, failing{rcv, e})
		}
		slices.SortFunc(d.Failing, func(a, b failing) int { return cmp.Compare(a.Receiver, b.Receiver) })
	}
	if f := p.o.Faults; f != nil {
		fv := &faultView{Modes: f.Modes, NeedAuth: !f.Open}
		for _, o := range f.Origins {
			fo := faultOrigin{Name: o}
			if f.Current != nil {
				fo.Current = f.Current(o)
			}
			fv.Origins = append(fv.Origins, fo)
		}
		d.Faults = fv
	}
	d.Notice = withDuplicates(p.notice(notes), vs)
	p.render(w, code, "index.html", d)
}

// sevRank sorts page before ticket before warning before anything else.
func sevRank(s string) int {
	switch s {
	case "page", "critical":
		return 0
	case "ticket", "warning":
		return 1
	}
	return 2
}

// base is what every page's layout needs.
type base struct {
	Title   string
	Page    string // "" for the overview, the check name on a check page
	Now     time.Time
	Refresh time.Duration
	Path    string
	Error   string
	Notice  string // Options.Notice, "" for none
	// NavProxy and NavAlerts: the overview has a proxy section
	// (Options.Origins) and an alert section (Options.Alerts), which the
	// navigation then links to; without them it has no such anchor.
	NavProxy, NavAlerts bool
}

func (p *Page) base(r *http.Request, now time.Time, page string) base {
	return base{Title: p.o.Title, Page: page, Now: now, Refresh: p.o.Refresh, Path: r.URL.RequestURI(),
		NavProxy: p.o.Origins != nil, NavAlerts: p.o.Alerts != nil}
}

// notice is Options.Notice's line followed by the notes of the request's
// reads (a store refusing writes), "" without either; a full stop ends the
// first before the second.
func (p *Page) notice(notes *reporting.ReadNotes) string {
	var n string
	if p.o.Notice != nil {
		n = p.o.Notice()
	}
	switch r := notes.String(); {
	case r == "":
		return n
	case n == "":
		return r
	case strings.HasSuffix(n, "."):
		return n + " " + r
	default:
		return n + ". " + r
	}
}

func (p *Page) serveNotFound(w http.ResponseWriter, r *http.Request) {
	d := p.base(r, p.o.Now(), "")
	d.Error = "not found"
	p.render(w, http.StatusNotFound, "notfound.html", d)
}
