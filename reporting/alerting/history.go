package alerting

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/vigil-synthetics/vigil/reporting/units"
)

// Alert history events: what happened to an alert.
const (
	// EventFiring: the alert started firing (Silenced set when it fired
	// inside a maintenance window or an ad-hoc silence).
	EventFiring = "firing"
	// EventResolved: the alert resolved.
	EventResolved = "resolved"
	// EventSilenced: a firing alert became silenced (a silence was added,
	// a maintenance window began); Silenced names it.
	EventSilenced = "silenced"
	// EventUnsilenced: the silence of a firing alert ended (it expired or
	// was deleted, the window ended); Silenced names the one that ended.
	EventUnsilenced = "unsilenced"
)

// History defaults and limits.
const (
	DefaultHistoryMaxEntries = 1000
	DefaultHistoryMaxAge     = 7 * 24 * time.Hour
	// MaxHistoryEntries caps history.max_entries: the file is rewritten
	// whole at every transition.
	MaxHistoryEntries = 100000
	// defaultHistoryLimit is how many entries GET /api/v1/alerts/history
	// answers without limit=.
	defaultHistoryLimit = 100
)

// HistoryConfig is `alerting.history`: how much of the alert transitions
// the alerter keeps (GET /api/v1/alerts/history, history.json).
type HistoryConfig struct {
	// MaxEntries is how many transitions are kept, newest first. Default
	// 1000, at most 100000.
	MaxEntries int `mapstructure:"max_entries"`
	// MaxAge is how long a transition is kept. Default 7d.
	MaxAge time.Duration `mapstructure:"max_age"`
}

// validate sets the defaults; key paths are relative to `alerting`.
func (h *HistoryConfig) validate() error {
	var errs []error
	if h.MaxEntries < 0 || h.MaxEntries > MaxHistoryEntries {
		errs = append(errs, fmt.Errorf("history.max_entries: %d: must be 1 to %d", h.MaxEntries, MaxHistoryEntries))
	}
	if h.MaxEntries == 0 {
		h.MaxEntries = DefaultHistoryMaxEntries
	}
	if h.MaxAge < 0 {
		errs = append(errs, fmt.Errorf("history.max_age: %s: %w", h.MaxAge, ErrNotPositive))
	}
	if h.MaxAge == 0 {
		h.MaxAge = DefaultHistoryMaxAge
	}
	return errors.Join(errs...)
}

// HistoryEntry is one alert transition, as GET /api/v1/alerts/history
// lists it and history.json keeps it.
type HistoryEntry struct {
	At        time.Time `json:"at"`
	Event     string    `json:"event"`
	Rule      string    `json:"rule"`
	AlertName string    `json:"alertname"`
	Severity  string    `json:"severity"`
	Check     string    `json:"check"`
	Target    string    `json:"target,omitempty"`
	Region    string    `json:"region,omitempty"`
	SLO       string    `json:"slo,omitempty"`
	Summary   string    `json:"summary,omitempty"`
	// Silenced names the silence or maintenance window: the one a firing
	// or silenced entry is silenced by, the one an unsilenced entry ended.
	Silenced string `json:"silenced,omitempty"`
	// StartsAt is when the alert started firing (resolved, silenced and
	// unsilenced entries).
	StartsAt    time.Time `json:"starts_at,omitzero"`
	Fingerprint string    `json:"fingerprint"`
}

// historyFile is history.json.
type historyFile struct {
	Version int            `json:"version"`
	Entries []HistoryEntry `json:"entries"` // oldest first
}

// history holds the recent alert transitions, oldest first, persisted to
// path ("" for none).
type history struct {
	mu      sync.Mutex
	path    string
	list    []HistoryEntry
	changes uint64 // bumped by every change of list
	saved   uint64 // changes at the last save
	saveMu  sync.Mutex
	lastErr string // the last save error logged, to log a run of them once
}

// historyPath is the history file beside the state file.
func historyPath(statePath string) string {
	if statePath == "" {
		return ""
	}
	return filepath.Join(filepath.Dir(statePath), "history.json")
}

// load reads the file; a missing file is an empty history. A file that
// cannot be read or used is logged naming it, moved aside to <path>.bad
// and the history starts empty.
func (a *Alerter) loadHistory() {
	h := &a.hist
	if h.path == "" {
		return
	}
	b, err := os.ReadFile(h.path)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err == nil {
		var f historyFile
		if err = json.Unmarshal(b, &f); err == nil && f.Version != 1 {
			err = fmt.Errorf("version %d, want 1", f.Version)
		}
		if err == nil {
			h.list = f.Entries
			return
		}
	}
	bad := h.path + ".bad"
	if rerr := os.Rename(h.path, bad); rerr != nil {
		a.log.Warn("alerting: alert history unusable; starting with an empty history, the file is overwritten at the next transition",
			"file", h.path, "err", err, "move_err", rerr)
		return
	}
	a.log.Warn("alerting: alert history unusable, moved aside; starting with an empty history", "file", h.path,
		"moved_to", bad, "err", err)
}

// add records one transition of al at now and trims the list to cfg.
// a.mu held (for cfg).
func (h *history) add(now time.Time, event string, al Alert, silenced string, cfg HistoryConfig) {
	e := HistoryEntry{At: now.UTC(), Event: event, Rule: al.Rule, AlertName: al.Name, Severity: al.Severity,
		Check: al.Check, Target: al.Target, Region: al.Region, SLO: al.SLO, Summary: al.Summary, Silenced: silenced,
		Fingerprint: al.Fingerprint}
	if event != EventFiring && !al.StartsAt.IsZero() {
		e.StartsAt = al.StartsAt.UTC()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	// Kept in time order: an evaluation dates its entries at its start,
	// which can precede a silence's entries written while it ran.
	i := len(h.list)
	h.list = append(h.list, e)
	for ; i > 0 && h.list[i-1].At.After(e.At); i-- {
		h.list[i] = h.list[i-1]
	}
	h.list[i] = e
	h.trim(now, cfg)
	h.changes++
}

// trim drops the entries beyond cfg's bounds. h.mu held.
func (h *history) trim(now time.Time, cfg HistoryConfig) {
	drop := 0
	if cfg.MaxEntries > 0 && len(h.list) > cfg.MaxEntries {
		drop = len(h.list) - cfg.MaxEntries
	}
	if cfg.MaxAge > 0 {
		for drop < len(h.list) && now.Sub(h.list[drop].At) > cfg.MaxAge {
			drop++
		}
	}
	if drop > 0 {
		h.list = append(h.list[:0:0], h.list[drop:]...)
		h.changes++
	}
}

// noteSilence records a firing alert's silence changing from prev to
// st.alert.Silenced. a.mu held.
func (a *Alerter) noteSilence(now time.Time, st *alertState, prev string) {
	cur := st.alert.Silenced
	switch {
	case !st.firing || prev == cur:
	case cur != "":
		// From unsilenced, or from one silence to another.
		a.hist.add(now, EventSilenced, st.alert, cur, a.cfg.History)
	default:
		a.hist.add(now, EventUnsilenced, st.alert, prev, a.cfg.History)
	}
}

// saveHistory writes the history if it changed since the last save,
// atomically (0600). A failed save is logged once per run of failures
// and retried at the next change or evaluation. a.mu not held.
func (a *Alerter) saveHistory() {
	h := &a.hist
	if h.path == "" {
		return
	}
	h.saveMu.Lock()
	defer h.saveMu.Unlock()
	h.mu.Lock()
	if h.changes == h.saved {
		h.mu.Unlock()
		return
	}
	f := historyFile{Version: 1, Entries: append([]HistoryEntry{}, h.list...)}
	changes := h.changes
	h.mu.Unlock()
	b, err := json.MarshalIndent(f, "", " ")
	if err == nil {
		err = units.WriteFileAtomic(h.path, append(b, '\n'), 0o600)
	}
	if err != nil {
		if msg := err.Error(); msg != h.lastErr {
			h.lastErr = msg
			a.log.Warn("alerting: cannot save the alert history; retrying at the next evaluation", "file", h.path, "err", err)
		}
		return
	}
	if h.lastErr != "" {
		a.log.Info("alerting: alert history saved again", "file", h.path)
		h.lastErr = ""
	}
	h.mu.Lock()
	h.saved = changes
	h.mu.Unlock()
}

// History returns the alert transitions kept, newest first: those of
// check only unless check is "", at most limit of them (limit ≤ 0: all).
func (a *Alerter) History(check string, limit int) []HistoryEntry {
	now := a.now()
	a.mu.Lock()
	cfg := a.cfg.History
	a.mu.Unlock()
	h := &a.hist
	h.mu.Lock()
	defer h.mu.Unlock()
	h.trim(now, cfg)
	out := []HistoryEntry{}
	for i := len(h.list) - 1; i >= 0 && (limit <= 0 || len(out) < limit); i-- {
		if check == "" || h.list[i].Check == check {
			out = append(out, h.list[i])
		}
	}
	return out
}

// HistoryHandler serves GET /api/v1/alerts/history: the alert transitions
// kept (alerting.history), newest first, as JSON. check= keeps one
// check's (a proxy pool's for live_errors); limit= caps how many (default
// 100, at most history.max_entries). Any other parameter is a 400 naming
// it. It is read-only, like GET /api/v1/alerts, and needs no token.
func (a *Alerter) HistoryHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeSilenceJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "GET /api/v1/alerts/history"})
			return
		}
		q := r.URL.Query()
		for k := range q {
			if k != "check" && k != "limit" {
				writeSilenceJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("%s: unknown parameter (want check=<check> and limit=<n>)", k)})
				return
			}
		}
		a.mu.Lock()
		most := a.cfg.History.MaxEntries
		a.mu.Unlock()
		limit := min(defaultHistoryLimit, most)
		if s := q.Get("limit"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 || n > most {
				writeSilenceJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("limit: %q: want a number from 1 to %d (alerting.history.max_entries)", s, most)})
				return
			}
			limit = n
		}
		writeSilenceJSON(w, http.StatusOK, a.History(q.Get("check"), limit))
	})
}
