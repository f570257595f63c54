package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vigil-synthetics/vigil/reporting/units"
)

// OriginStatus is one origin in GET /api/v1/origins.
type OriginStatus struct {
	Pool      string `json:"pool"`
	Name      string `json:"name"`
	Target    string `json:"target,omitempty"`
	URL       string `json:"url"`
	Weight    int    `json:"weight"`
	Available bool   `json:"available"`
	// Flags: each source that currently takes the origin out.
	Drained        bool `json:"drained"`
	VerdictDown    bool `json:"verdict_down"`
	PassiveEjected bool `json:"passive_ejected"`
	// Why per flag, and since when (RFC 3339) it is set.
	Why   map[string]string    `json:"why,omitempty"`
	Since map[string]time.Time `json:"since,omitempty"`
	// DrainedBy says who drained the origin: the drain request's ?by=
	// (the address it came from is logged, not shown here).
	DrainedBy string `json:"drained_by,omitempty"`
	// EjectedUntil is the end of the current passive ejection.
	EjectedUntil *time.Time `json:"ejected_until,omitempty"`
	// EjectionDetail gives the numbers behind the current passive ejection,
	// whose rule Why["passive"] names: "5 consecutive failed tries (3
	// timeout, 2 status_5xx), consecutive_5xx 5", "failure rate 42%
	// (21 of 50 requests in 10s) ≥ failure_rate 30%", "p95 1.2s >
	// latency_p95 500ms (…)", "success rate 60% (…) vs pool median 99%, …".
	EjectionDetail string `json:"ejection_detail,omitempty"`
	// ReturnProbing is set while a return probe (passive.return_probe) of
	// this passively ejected origin is out: ejected_until is then past.
	ReturnProbing bool `json:"return_probing,omitempty"`
	// Ejections is the passive ejection count (grows per ejection, decays
	// while healthy); the next ejection lasts (Ejections+1) × ejection.
	Ejections int   `json:"ejections"`
	InFlight  int64 `json:"in_flight"`
	// MaxConns is the origin's max_conns (0: no cap); Full reports that it
	// is at the cap now and takes no new try.
	MaxConns int64 `json:"max_conns"`
	Full     bool  `json:"full"`
	// SlowStartUntil is, while a returned origin's weight ramps up
	// (slow_start, round_robin and least_conn), when it reaches its full
	// weight; WeightFraction is its effective weight now as a fraction of
	// weight (0.1 to 1). Both are absent outside a ramp.
	SlowStartUntil *time.Time `json:"slow_start_until,omitempty"`
	WeightFraction float64    `json:"weight_fraction,omitempty"`
	// VerdictBelowQuorum is set while the origin is not verdict-down but
	// some regions, fewer than verdicts.quorum, hold it unhealthy: "not
	// taken out: unhealthy in 1 region(s), quorum 2: eu: home (status)".
	VerdictBelowQuorum string `json:"verdict_below_quorum,omitempty"`
	// EjectionRefused is set while max_ejected keeps the origin in service
	// although verdicts or a passive rule would take it out: "not taken
	// out: max_ejected 50% reached: verdicts: …; passive: consecutive_5xx
	// (…)".
	EjectionRefused string `json:"ejection_refused,omitempty"`
}

// Origins returns the state of every origin of every pool.
func (p *Proxy) Origins() []OriginStatus {
	var out []OriginStatus
	for _, pl := range p.state.Load().pools {
		for _, o := range pl.origins {
			f := o.flags.Load()
			s := OriginStatus{Pool: pl.name, Name: o.name, Target: o.target, URL: o.url.String(),
				Weight: o.weight, Available: f == 0, Drained: f&flagDrained != 0,
				VerdictDown: f&flagVerdict != 0, PassiveEjected: f&flagPassive != 0,
				InFlight: o.inflight.Load(), MaxConns: o.maxConns, Full: o.full()}
			o.mu.Lock()
			for i, name := range [3]string{"drained", "verdict", "passive"} {
				if f&(1<<i) == 0 {
					continue
				}
				if s.Why == nil {
					s.Why, s.Since = map[string]string{}, map[string]time.Time{}
				}
				s.Why[name], s.Since[name] = o.why[i], o.since[i]
			}
			if f&flagVerdict != 0 && o.tookSlot != "" {
				s.Why["verdict"] += "; " + o.tookSlot
			}
			if until, frac, ok := o.ramp(pl.cfg, time.Now()); ok && f == 0 {
				s.SlowStartUntil, s.WeightFraction = &until, frac
			}
			if f&flagVerdict == 0 {
				s.VerdictBelowQuorum = o.why[bit(flagVerdict)] // set only below the quorum
			}
			var kept []string
			if o.verdictSeen != "" && f&flagVerdict == 0 {
				kept = append(kept, "verdicts: "+o.verdictSeen)
			}
			if o.passiveKept != "" && f&flagPassive == 0 {
				kept = append(kept, "passive: "+o.passiveKept)
			}
			// An origin out by verdicts or a passive rule is taken out:
			// a refusal of the other kind does not hold it in service.
			if kept != nil && f&(flagVerdict|flagPassive) == 0 {
				s.EjectionRefused = "not taken out: max_ejected " + pl.cfg.MaxEjected.String() + " reached: " + strings.Join(kept, "; ")
			}
			if f&flagDrained != 0 {
				s.DrainedBy = o.drainedBy
			}
			if f&flagPassive != 0 {
				t := o.ejectUntil
				s.EjectedUntil = &t
				s.EjectionDetail = o.ejectDetail
				s.ReturnProbing = o.link != nil && o.link.probing.Load()
			}
			s.Ejections = o.ejections
			o.mu.Unlock()
			out = append(out, s)
		}
	}
	return out
}

// Drain takes every origin named name (target name or host:port, in every
// pool) out of service; new requests stop going to it, requests in flight
// finish. why "" is defaultDrainWhy for an origin not yet drained; for one
// already drained it keeps the earlier reason (see setDrain). It reports
// whether any origin matched.
func (p *Proxy) Drain(name, why string) bool { return p.setDrain(name, why, "", "", true) }

// Undrain returns drained origins named name to service (with slow start if
// configured, once no other flag holds them out).
func (p *Proxy) Undrain(name string) bool { return p.setDrain(name, "", "", "", false) }

// defaultDrainWhy is the reason of a drain that gave none.
const defaultDrainWhy = "drained by admin"

// setDrain holds p.mu, as Reload does: a drain set on the origins of the
// generation a concurrent Reload has already copied its flags from would be
// lost, in memory and in the drains file, though the caller was told it
// applied. by says who asked (logged, and kept with a drain); from is the
// address the request came from (logged only).
//
// Draining an origin already drained keeps its since (when it was taken
// out); a why or by given replaces the earlier one, one left empty keeps it.
func (p *Proxy) setDrain(name, why, by, from string, on bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	found := false
	now := time.Now()
	first := why // the reason of a new drain
	if on && first == "" {
		first = defaultDrainWhy
	}
	for _, pl := range p.state.Load().pools {
		for _, o := range pl.origins {
			if o.name != name {
				continue
			}
			found = true
			var changed bool
			if on {
				changed = o.set(flagDrained, first, now)
				o.mu.Lock()
				if changed {
					o.drainedBy = by
				} else if b := bit(flagDrained); why != "" && o.why[b] != why || by != "" && o.drainedBy != by {
					if why != "" {
						o.why[b] = why
					}
					if by != "" {
						o.drainedBy = by
					}
					pl.log.Info("proxy: origin drain reason changed", "pool", pl.name, "origin", o.name,
						"why", o.why[b], "by", o.drainedBy, "since", o.since[b], "from", from)
				}
				o.mu.Unlock()
			} else {
				changed = o.clear(flagDrained, now)
			}
			if changed {
				o.m.available.Set(b2f(o.Available()))
				pl.log.Info("proxy: origin drain changed", "pool", pl.name, "origin", o.name, "drained", on, "why", first, "by", by, "from", from)
				// max_ejected counts from the origins not drained: a
				// drain lowers the cap, an undrain can bring back an
				// origin verdicts hold out.
				pl.mu.Lock()
				rs := pl.fitCap(now)
				pl.mu.Unlock()
				verb := "undrain"
				if on {
					verb = "drain"
				}
				pl.capReturned(rs, now, verb+" of "+o.name)
			}
		}
	}
	if found {
		p.saveDrains()
	}
	return found
}

// drainsFile is the file under the state dir (WithStateDir) that keeps
// the drains across restarts.
const drainsFile = "proxy-drains.json"

// drainsDoc is the drains file: every drained origin, by pool and URL.
type drainsDoc struct {
	Drains []drainEntry `json:"drains"`
}

type drainEntry struct {
	Pool   string    `json:"pool"`
	Origin string    `json:"origin"` // its name when drained (target or host:port)
	URL    string    `json:"url"`    // a restored drain is matched on Pool and URL, and on Origin alone
	Since  time.Time `json:"since"`
	Why    string    `json:"why,omitempty"`
	By     string    `json:"by,omitempty"`
}

// drained lists the drained origins of the running configuration.
func (p *Proxy) drained() drainsDoc {
	doc := drainsDoc{Drains: []drainEntry{}}
	for _, pl := range p.state.Load().pools {
		for _, o := range pl.origins {
			if !o.has(flagDrained) {
				continue
			}
			o.mu.Lock()
			e := drainEntry{Pool: pl.name, Origin: o.name, URL: o.url.String(), Since: o.since[bit(flagDrained)], Why: o.why[bit(flagDrained)], By: o.drainedBy}
			o.mu.Unlock()
			doc.Drains = append(doc.Drains, e)
		}
	}
	return doc
}

// saveDrains writes the drains file when what it should hold changed: a
// temporary file in the same directory, mode 0600, synced, then renamed
// over the old one, so a crash leaves the old or the new file, never half
// of one. A failure is logged; the drain itself applies in any case.
func (p *Proxy) saveDrains() {
	if p.stateDir == "" {
		return
	}
	p.drainMu.Lock()
	defer p.drainMu.Unlock()
	b, err := json.MarshalIndent(p.drained(), "", "  ")
	if err != nil || bytes.Equal(b, p.drainsAt) {
		return
	}
	path := filepath.Join(p.stateDir, drainsFile)
	if err := units.WriteFileAtomic(path, append(b, '\n'), 0o600); err != nil {
		p.log.Error("proxy: saving drains failed; they hold until the proxy stops, but a restart will not restore them",
			"file", path, "err", err)
		return
	}
	p.drainsAt = b
}

// restoreDrains drains again the origins the drains file lists, matched by
// pool and URL, then by origin name (as a reload keeps a drain), logging
// each; a drain of an origin no longer in the configuration (no origin of
// that pool and URL, nor of that name) is dropped (and logged). An
// unreadable file is logged and ignored: the proxy starts with no drain rather than not at all.
func (p *Proxy) restoreDrains() {
	if p.stateDir == "" {
		return
	}
	path := filepath.Join(p.stateDir, drainsFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	var doc drainsDoc
	if err == nil {
		err = json.Unmarshal(b, &doc)
	}
	if err != nil {
		p.log.Error("proxy: the drains file is unreadable; starting with no origin drained", "file", path, "err", err)
		return
	}
	type key struct{ pool, url string }
	type at struct {
		pl *pool
		o  *origin
	}
	origins := map[key][]at{}
	byName := map[string][]at{}
	for _, pl := range p.state.Load().pools {
		for _, o := range pl.origins {
			k := key{pl.name, o.url.String()}
			origins[k] = append(origins[k], at{pl, o})
			byName[o.name] = append(byName[o.name], at{pl, o})
		}
	}
	restored := map[*origin]bool{}
	restore := func(e drainEntry, m at) {
		o := m.o
		restored[o] = true
		if o.set(flagDrained, e.Why, e.Since) {
			o.m.available.Set(b2f(o.Available()))
			o.mu.Lock()
			o.drainedBy = e.By
			o.mu.Unlock()
		}
		attrs := []any{"pool", m.pl.name, "origin", o.name, "url", o.url.String(), "drained_since", e.Since, "why", e.Why, "by", e.By}
		msg := "proxy: restored a drain saved before the restart"
		if m.pl.name != e.Pool || o.url.String() != e.URL || o.name != e.Origin {
			msg += " (the origin's pool, URL or name changed)"
			attrs = append(attrs, "was_pool", e.Pool, "was_origin", e.Origin, "was_url", e.URL)
		}
		p.log.Info(msg, attrs...)
	}
	for _, e := range doc.Drains {
		for _, m := range origins[key{e.Pool, e.URL}] {
			restore(e, m)
		}
	}
	// Then by origin name, as a reload keeps a drain: a drain is by name
	// (the admin API drains a name in every pool), so one whose pool was
	// renamed or whose URL changed while the proxy was down is restored
	// too, on the origins no saved drain of their pool and URL restored.
	for _, e := range doc.Drains {
		named := byName[e.Origin]
		if len(named) == 0 && len(origins[key{e.Pool, e.URL}]) == 0 {
			p.log.Warn("proxy: dropped a saved drain: the origin is no longer in the config",
				"pool", e.Pool, "origin", e.Origin, "url", e.URL, "drained_since", e.Since, "why", e.Why)
			continue
		}
		for _, m := range named {
			if !restored[m.o] {
				restore(e, m)
			}
		}
	}
	p.saveDrains()
}

// AdminHandler serves the admin API; mount it on the agent listener for the
// paths /api/v1/origins and /api/v1/origins/ (it matches full paths):
//
//	GET  /api/v1/origins                → []OriginStatus (no token needed)
//	POST /api/v1/origins/{name}/drain   → drain; optional ?why=… and ?by=… are recorded (the requester's address is logged)
//	POST /api/v1/origins/{name}/undrain → undrain
//
// Writes need "Authorization: Bearer <admin_token>": 403 when no
// admin_token is configured (writes are then refused entirely, whatever the
// request carries), 401 with WWW-Authenticate without or with a wrong token,
// 404 for an unknown origin. POST /api/v1/trigger follows the same rule.
func (p *Proxy) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/origins", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, p.Origins())
	})
	write := func(on bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if !p.authorized(w, r) {
				return
			}
			name := r.PathValue("name")
			why := r.URL.Query().Get("why") // setDrain has the default
			by := r.URL.Query().Get("by")
			from := r.RemoteAddr
			if h, _, err := net.SplitHostPort(from); err == nil {
				from = h
			}
			if len(by) > maxBy {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("by: longer than %d bytes", maxBy)})
				return
			}
			if !p.setDrain(name, why, by, from, on) {
				writeJSON(w, http.StatusNotFound, map[string]string{"error": "no origin named " + name})
				return
			}
			var out []OriginStatus
			for _, s := range p.Origins() {
				if s.Name == name {
					out = append(out, s)
				}
			}
			writeJSON(w, http.StatusOK, out)
		}
	}
	mux.HandleFunc("POST /api/v1/origins/{name}/drain", write(true))
	mux.HandleFunc("POST /api/v1/origins/{name}/undrain", write(false))
	return mux
}

// maxBy bounds a drain's ?by= (a name, not a message).
const maxBy = 128

// authorized answers 403 when no token is configured, 401 when the
// request's is missing or wrong. It compares the bearer token in constant
// time over SHA-256 digests, so the token's length does not leak either.
func (p *Proxy) authorized(w http.ResponseWriter, r *http.Request) bool {
	token := p.state.Load().cfg.AdminToken
	if token == "" {
		writeJSON(w, http.StatusForbidden, map[string]string{"error": "admin writes are disabled: set agent.admin_token (or proxy.admin_token)"})
		return false
	}
	if !units.BearerMatches(r, token) {
		p.m.adminAuthFail.Inc()
		p.authFail.Note(p.log, r)
		w.Header().Set("WWW-Authenticate", `Bearer realm="vigil"`)
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "missing or wrong bearer token (Authorization: Bearer <proxy.admin_token, else agent.admin_token>)"})
		return false
	}
	return true
}

// writeJSON answers v as JSON, never cached (the origins' state changes
// every second, and a cached 401 or 403 would outlive a token fix), as the
// canary's API answers. < > & are written as they are, not as \u003c and
// the like: the answer is application/json, never HTML, and is read with
// curl.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
