package alerting

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/vigil-synthetics/vigil/reporting/units"
)

// MaxSilence is the longest ad-hoc silence: longer quiet belongs in a
// maintenance window of the config, where it is reviewed.
const MaxSilence = 7 * 24 * time.Hour

// Silence is an ad-hoc silence (POST /api/v1/silences): notifications of
// the alerts of Check (and of Target only, when set) are held back until
// EndsAt, as in a maintenance window; the alerts are still evaluated and
// listed, with silenced naming it.
type Silence struct {
	ID       string    `json:"id"`
	Check    string    `json:"check"`
	Target   string    `json:"target,omitempty"`
	By       string    `json:"by"`
	Why      string    `json:"why"`
	StartsAt time.Time `json:"starts_at"`
	EndsAt   time.Time `json:"ends_at"`
}

// covers reports whether s silences check × target at now.
//
// A silence covers from the moment it exists, whatever time it is asked
// about: an evaluation takes its time before it reads the store, so a
// silence POSTed while it read would otherwise start after that time, be
// undone by it and let its alert notify after the POST was answered.
// Silences cannot be made to start later, and DELETE removes one at once.
func (s Silence) covers(now time.Time, check, target string) bool {
	return s.Check == check && (s.Target == "" || s.Target == target) && now.Before(s.EndsAt)
}

// name is how an alert's silenced names s.
func (s Silence) name() string {
	return fmt.Sprintf("silence %s by %s until %s: %s", s.ID, s.By, s.EndsAt.UTC().Format(time.RFC3339), s.Why)
}

// silences holds the ad-hoc silences, persisted to path ("" for none).
type silences struct {
	mu   sync.Mutex
	path string
	list []Silence
}

// silencesPath is the silences file beside the state file.
func silencesPath(statePath string) string {
	if statePath == "" {
		return ""
	}
	return filepath.Join(filepath.Dir(statePath), "silences.json")
}

// load reads the file; a missing file is no silences. A file that cannot
// be read or used is moved aside to <path>.bad (so the next POST does not
// overwrite what it held) and the error names both files.
func (s *silences) load() error {
	if s.path == "" {
		return nil
	}
	b, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err == nil {
		var list []Silence
		if err = json.Unmarshal(b, &list); err == nil {
			s.list = list
			return nil
		}
	}
	bad := s.path + ".bad"
	if rerr := os.Rename(s.path, bad); rerr != nil {
		return fmt.Errorf("%s: %w (cannot move it aside: %v; it is overwritten by the next silence added)", s.path, err, rerr)
	}
	return fmt.Errorf("%s: %w (moved aside to %s)", s.path, err, bad)
}

// save writes the list atomically (0600). s.mu held.
func (s *silences) save() error {
	if s.path == "" {
		return nil
	}
	b, err := json.MarshalIndent(s.list, "", "  ")
	if err != nil {
		return err
	}
	tmp := s.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, s.path)
}

// active returns the silences not yet ended at now, dropping the others.
// s.mu held.
func (s *silences) active(now time.Time) []Silence {
	kept := s.list[:0]
	for _, x := range s.list {
		if now.Before(x.EndsAt) {
			kept = append(kept, x)
		}
	}
	s.list = kept
	return append([]Silence(nil), kept...)
}

// silenceBy names the first ad-hoc silence covering check × target at now.
func (s *silences) silenceBy(now time.Time, check, target string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.list {
		if x.covers(now, check, target) {
			return x.name()
		}
	}
	return ""
}

// resilence applies the silences at once, after one was added or ended:
// every alert's silenced is read again (so GET /api/v1/alerts shows it,
// and no evaluation after this one notifies a newly silenced alert), the
// change is recorded in the history, and Run is asked for an evaluation
// now, which notifies an alert whose silence ended rather than at the
// next evaluation_interval.
func (a *Alerter) resilence() {
	now := a.now()
	a.mu.Lock()
	sts := make([]*alertState, 0, len(a.states))
	for _, st := range a.states {
		sts = append(sts, st)
	}
	// In order, for the history's entries of this instant.
	sort.Slice(sts, func(i, j int) bool { return alertLess(sts[i].alert, sts[j].alert) })
	for _, st := range sts {
		prev := st.alert.Silenced
		st.alert.Silenced = a.silencedBy(now, st.alert.Check, st.alert.Target)
		a.noteSilence(now, st, prev)
	}
	a.mu.Unlock()
	a.saveHistory()
	select {
	case a.kick <- struct{}{}:
	default: // one is already asked for
	}
}

// Silences lists the ad-hoc silences in force, soonest end first ([] for
// none).
func (a *Alerter) Silences() []Silence {
	now := a.now()
	a.sil.mu.Lock()
	defer a.sil.mu.Unlock()
	out := a.sil.active(now)
	if out == nil {
		out = []Silence{}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].EndsAt.Before(out[j].EndsAt) })
	return out
}

// ListedSilence is a silence as GET /api/v1/silences lists it.
type ListedSilence struct {
	Silence
	// Unmatched says why the silence holds nothing under the running
	// config, when it does not: its check is neither a check nor a proxy
	// pool of the config nor the check of an alert firing now, or its
	// target not one of that check or pool (as POST refuses, see
	// silenceSubjectErr). Such a silence was added under another config
	// sharing agent.data_dir (silences.json), or before a reload removed
	// its subject: it is kept until it ends, as Alertmanager keeps a
	// silence that matches no alert, and holds the alerts it names again
	// if the config comes back to them. "" when it matches.
	Unmatched string `json:"unmatched,omitempty"`
	// Note says what a matching silence holds when that is not what it
	// names now (a check with disabled: true), as POST's answer does.
	Note string `json:"note,omitempty"`
}

// ListSilences is Silences, each marked with whether the running config
// has what it names (ListedSilence.Unmatched).
func (a *Alerter) ListSilences() []ListedSilence {
	list := a.Silences() // a.sil.mu is let go before silenceSubjectErr takes a.mu
	out := make([]ListedSilence, len(list))
	for i, s := range list {
		out[i].Silence = s
		if msg, note := a.silenceSubjectErr(s.Check, s.Target); msg != "" {
			out[i].Unmatched = msg + ": it holds nothing under this config; kept until it ends (another config " +
				"sharing agent.data_dir may have added it): DELETE it if it is stale"
		} else {
			out[i].Note = note
		}
	}
	return out
}

// silenceSubjectErr says why a silence of check (and of target, when not
// "") would silence nothing, else "", and a note for the answer, else "".
// A check must be a check of the running config (SetChecks, SetPairs), a
// check it has with disabled: true (SetDisabledPairs: the note says so),
// a proxy pool of the running config (SetPools: live_errors alerts use the
// pool as their check) or the check of an active alert; a target must be
// a configured target of that check, an origin of that pool or the
// target of one of its active alerts. With neither checks nor pairs known
// (an alerter without a checks section) any check and target are taken.
func (a *Alerter) silenceSubjectErr(check, target string) (msg, note string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.checks == nil && a.pairs == nil {
		return "", ""
	}
	checks := map[string]bool{}
	for c := range a.checks {
		checks[c] = true
	}
	for _, m := range []map[string]map[string]bool{a.pairs, a.disabled, a.pools} {
		for c := range m {
			checks[c] = true
		}
	}
	targets := map[string]bool{}
	for _, m := range []map[string]map[string]bool{a.pairs, a.disabled, a.pools} {
		for t := range m[check] {
			targets[t] = true
		}
	}
	for _, st := range a.states {
		if st.alert.Resolved() || st.alert.Check == "" {
			continue
		}
		checks[st.alert.Check] = true
		if st.alert.Check == check && st.alert.Target != "" {
			targets[st.alert.Target] = true
		}
	}
	if !checks[check] {
		return fmt.Sprintf("check: %q: not a configured check, proxy pool nor the check of an active alert%s", check,
			silenceHint(check, checks)), ""
	}
	if target != "" && !targets[target] {
		return fmt.Sprintf("target: %q: not a target of check %q nor of its active alerts%s", target, check,
			silenceHint(target, targets)), ""
	}
	if _, ok := a.disabled[check]; ok && !a.checks[check] && a.pairs[check] == nil {
		// Silencing ahead of re-enabling it is legitimate (as an
		// Alertmanager silence may match alerts not firing yet): taken,
		// and the answer says it holds nothing until then.
		note = fmt.Sprintf("check %q is disabled (disabled: true): it runs and alerts only once enabled again; "+
			"this silence holds its alerts from then until it ends", check)
	}
	return "", note
}

// silenceHint is ` (did you mean "api"?)` for a name a typo away from one
// of names, else "".
func silenceHint(name string, names map[string]bool) string {
	all := make([]string, 0, len(names))
	for n := range names {
		all = append(all, n)
	}
	sort.Strings(all)
	if near := units.NearestName(name, all); near != "" {
		return fmt.Sprintf(" (did you mean %q?)", near)
	}
	return ""
}

// silenceRequest is POST /api/v1/silences' body.
type silenceRequest struct {
	Check  string `json:"check"`
	Target string `json:"target"`
	For    string `json:"for"`
	By     string `json:"by"`
	Why    string `json:"why"`
}

// SilencesHandler serves /api/v1/silences: GET lists the silences in
// force, those the running config has nothing of marked (ListSilences);
// POST {check, target?, for, by, why} adds one (201, the silence);
// DELETE /api/v1/silences/{id} ends one (204; 404 when unknown). Writes
// need the admin token (token() at each request) as a bearer token: 401
// without the right one, 403 when none is configured. A silence added or
// ended takes effect before the answer (see resilence) and is kept in
// silences.json beside the alert state.
func (a *Alerter) SilencesHandler(token func() string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/api/v1/silences"), "/")
		if r.Method == http.MethodGet && id == "" {
			writeSilenceJSON(w, http.StatusOK, a.ListSilences())
			return
		}
		if (r.Method != http.MethodPost || id != "") && (r.Method != http.MethodDelete || id == "") {
			w.Header().Set("Allow", "GET, POST, DELETE")
			writeSilenceJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "GET or POST /api/v1/silences, DELETE /api/v1/silences/{id}"})
			return
		}
		tok := token()
		if tok == "" {
			writeSilenceJSON(w, http.StatusForbidden, map[string]string{"error": "admin writes are disabled: set agent.admin_token"})
			return
		}
		if !units.BearerMatches(r, tok) {
			w.Header().Set("WWW-Authenticate", "Bearer")
			writeSilenceJSON(w, http.StatusUnauthorized, map[string]string{"error": "missing or wrong bearer token"})
			return
		}
		if r.Method == http.MethodDelete {
			a.sil.mu.Lock()
			found := false
			// An ended silence is no longer in force: unknown, as GET
			// lists it.
			a.sil.active(a.now())
			for i, x := range a.sil.list {
				if x.ID == id {
					found = true
					a.sil.list = append(a.sil.list[:i], a.sil.list[i+1:]...)
					if err := a.sil.save(); err != nil {
						a.log.Error("alerting: cannot save silences", "error", err)
					}
					break
				}
			}
			a.sil.mu.Unlock()
			if !found {
				writeSilenceJSON(w, http.StatusNotFound, map[string]string{"error": "no silence " + id})
				return
			}
			a.log.Info("alerting: silence ended", "id", id)
			a.resilence()
			w.WriteHeader(http.StatusNoContent)
			return
		}
		var req silenceRequest
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			writeSilenceJSON(w, http.StatusBadRequest, map[string]string{"error": "body: " + err.Error()})
			return
		}
		req.Check, req.Target = strings.TrimSpace(req.Check), strings.TrimSpace(req.Target)
		var errs []string
		var note string
		if req.Check == "" {
			errs = append(errs, "check: required")
		} else if e, n := a.silenceSubjectErr(req.Check, req.Target); e != "" {
			errs = append(errs, e)
		} else {
			note = n
		}
		if strings.TrimSpace(req.By) == "" {
			errs = append(errs, "by: required (who silences)")
		}
		if strings.TrimSpace(req.Why) == "" {
			errs = append(errs, "why: required")
		}
		d, err := units.ParseDuration(req.For)
		switch {
		case strings.TrimSpace(req.For) == "":
			errs = append(errs, "for: required (a duration, e.g. 2h)")
		case err != nil:
			errs = append(errs, fmt.Sprintf("for: %q: not a duration (e.g. 30m, 2h, 1d)", req.For))
		case d <= 0 || d > MaxSilence:
			errs = append(errs, fmt.Sprintf("for: %q: must be above 0 and at most %s (longer: a maintenance window)", req.For, shortDur(MaxSilence)))
		}
		if len(errs) > 0 {
			writeSilenceJSON(w, http.StatusBadRequest, map[string]string{"error": strings.Join(errs, "; ")})
			return
		}
		var raw [4]byte
		_, _ = rand.Read(raw[:])
		now := a.now()
		s := Silence{ID: hex.EncodeToString(raw[:]), Check: req.Check, Target: req.Target, By: strings.TrimSpace(req.By),
			Why: strings.TrimSpace(req.Why), StartsAt: now.UTC(), EndsAt: now.Add(d).UTC()}
		a.sil.mu.Lock()
		a.sil.active(now)
		a.sil.list = append(a.sil.list, s)
		err = a.sil.save()
		a.sil.mu.Unlock()
		if err != nil {
			a.log.Error("alerting: cannot save silences", "error", err)
		}
		a.log.Info("alerting: silence added", "id", s.ID, "check", s.Check, "target", s.Target, "by", s.By, "until", s.EndsAt, "why", s.Why)
		a.resilence()
		writeSilenceJSON(w, http.StatusCreated, struct {
			Silence
			// Note says what the silence holds when that is not what
			// it names now (a disabled check).
			Note string `json:"note,omitempty"`
		}{s, note})
	})
}

func writeSilenceJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
