package alerting

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// stateVersion is the version of the state file's layout. Version 1
// lacks what receivers had not accepted (groups' undelivered, stream); it
// is read as "everything was delivered". A file with another version is
// treated like a corrupt one: moved aside, not read.
const stateVersion = 2

// stateFile is what Options.StatePath holds: enough to continue after a
// restart without re-notifying firing alerts or losing their resolve.
type stateFile struct {
	Version int `json:"version"`
	// Saved is when the file was written (the evaluation time).
	Saved  time.Time     `json:"saved"`
	Alerts []storedState `json:"alerts"`
	Groups []storedGroup `json:"groups"`
	// Seen are the dead-man rule's last verdict per region × check, so an
	// alert for a region that vanished from the store keeps firing.
	Seen []storedSeen `json:"seen,omitempty"`
	// Stream are the resolved alerts each stream receiver (Alertmanager)
	// has not accepted. Since version 2.
	Stream []storedOwed `json:"stream,omitempty"`
	// Destinations are, by receiver name, a hash of where it sends (see
	// destination), never its URL or key: a receiver whose destination
	// differs at the next start is told everything anew
	// (Alerter.forgetReceiver). Absent in files of older versions: no
	// receiver counts as moved.
	Destinations map[string]string `json:"destinations,omitempty"`
}

// storedAlert is an Alert in its Go field form. Alert.MarshalJSON writes
// the webhook form, which cannot be read back; a defined type has no
// methods, so this one encodes every field as is.
type storedAlert Alert

// storedState is one alertState.
type storedState struct {
	Alert        storedAlert `json:"alert"`
	PendingSince time.Time   `json:"pending_since"`
	Firing       bool        `json:"firing"`
	// Streamed: some stream receiver (Alertmanager) holds it as active.
	// Written for older versions, which read it as "every stream receiver
	// holds it"; so is it read when StreamedTo is absent.
	Streamed bool `json:"streamed,omitempty"`
	// StreamedTo are the stream receivers that hold it as active, sorted.
	StreamedTo []string `json:"streamed_to,omitempty"`
	// ClearedSince is, for a firing alert kept firing by keep_firing_for,
	// when its condition stopped holding. Absent in files of older
	// versions and while the condition holds.
	ClearedSince time.Time `json:"cleared_since,omitzero"`
}

// storedGroup is one groupState. Notified holds the alerts themselves, so
// their resolve goes out with the same labels and group (dedup_key) even if
// nothing else about them survived.
type storedGroup struct {
	Key string `json:"key"`
	// Labels are the group's alerting.group_by labels. Absent in files
	// written before group_by, whose keys are rule/check/severity.
	Labels    map[string]string `json:"labels,omitempty"`
	FirstSeen time.Time         `json:"first_seen"`
	LastSent  time.Time         `json:"last_sent"`
	LastSet   string            `json:"last_set"`
	Notified  []storedAlert     `json:"notified,omitempty"`
	Resolved  []storedAlert     `json:"resolved,omitempty"`
	// Undelivered is, per receiver, what it has not accepted of the
	// group's notifications; it is sent again on the first evaluation.
	// Since version 2.
	Undelivered []storedOwed `json:"undelivered,omitempty"`
	// Told are the receivers that were sent the group's firing alerts,
	// the only ones sent its resolves. Absent (null) in files written
	// before it was kept: every receiver then counts as told.
	Told []string `json:"told"`
	// NotBefore: a group not notified yet, made after a change of
	// group_by, that waits until then rather than group_wait (see
	// groupState.notBefore). Absent otherwise.
	NotBefore time.Time `json:"not_before,omitzero"`
}

// storedOwed is one receiver's owed, in flight or failed alike.
type storedOwed struct {
	Receiver string `json:"receiver"`
	// Firing: the receiver has not accepted the group's firing alerts.
	Firing bool `json:"firing,omitempty"`
	// Repeat: with Firing, what it has not accepted is a repeat_interval
	// repeat, which sends every firing alert again (PagerDuty triggers
	// included), also after a change of group_by. Absent in files of
	// older versions.
	Repeat   bool          `json:"repeat,omitempty"`
	Resolved []storedAlert `json:"resolved,omitempty"`
	// Unaccepted are the fingerprints of alerts the receiver was sent as
	// firing but never accepted: their resolve is not sent to it. Absent
	// in files of older versions (every alert was accepted).
	Unaccepted []string `json:"unaccepted,omitempty"`
}

// storeOwed converts owed maps for the state file, sorted by receiver.
func storeOwed(m map[string]*owed) []storedOwed {
	var out []storedOwed
	for _, name := range sortedOwed(m) {
		o := m[name]
		so := storedOwed{Receiver: name, Firing: o.firing, Repeat: o.firing && o.repeat}
		for _, r := range o.resolved {
			so.Resolved = append(so.Resolved, storedAlert(r.alert))
		}
		sort.SliceStable(so.Resolved, func(i, j int) bool { return so.Resolved[i].Fingerprint < so.Resolved[j].Fingerprint })
		for fp := range o.unaccepted {
			so.Unaccepted = append(so.Unaccepted, fp)
		}
		// A resolve on hold waits for a delivery a restart loses: after
		// one it counts as failed, the alert as never accepted.
		for fp := range o.held {
			if _, dup := o.unaccepted[fp]; !dup {
				so.Unaccepted = append(so.Unaccepted, fp)
			}
		}
		sort.Strings(so.Unaccepted)
		out = append(out, so)
	}
	return out
}

// restoreOwed converts stored owed back: everything due at once.
func restoreOwed(s []storedOwed) map[string]*owed {
	m := map[string]*owed{}
	for _, so := range s {
		o := m[so.Receiver]
		if o == nil {
			o = &owed{}
			m[so.Receiver] = o
		}
		o.firing = o.firing || so.Firing
		o.repeat = o.repeat || so.Firing && so.Repeat
		for _, r := range so.Resolved {
			o.add(Alert(r))
		}
		o.sentFiring(so.Unaccepted, 0)
	}
	for name, o := range m {
		if o.empty() {
			delete(m, name)
		}
	}
	return m
}

// storedSeen is the part of a verdict the dead-man rule reads.
type storedSeen struct {
	Check    string        `json:"check"`
	Region   string        `json:"region"`
	At       time.Time     `json:"at"`
	Interval time.Duration `json:"interval"`
	Tier     string        `json:"tier,omitempty"`
}

// snapshot builds the state file and its change key: the firing set,
// pending timers and what each group notified, without the alerts'
// descriptive fields (summary, regions, values), which change on most
// evaluations and are refreshed by the first evaluation after a restart
// anyway. a.mu held.
func (a *Alerter) snapshot(now time.Time) (stateFile, string) {
	f := stateFile{Version: stateVersion, Saved: now}
	var key strings.Builder
	fps := make([]string, 0, len(a.states))
	for fp := range a.states {
		fps = append(fps, fp)
	}
	sort.Strings(fps)
	for _, fp := range fps {
		st := a.states[fp]
		ss := storedState{Alert: storedAlert(st.alert), PendingSince: st.pendingSince, Firing: st.firing,
			Streamed: st.streamed(), ClearedSince: st.clearedSince}
		if !st.streamedAll {
			for name := range st.streamedTo {
				ss.StreamedTo = append(ss.StreamedTo, name)
			}
			sort.Strings(ss.StreamedTo)
		}
		f.Alerts = append(f.Alerts, ss)
		fmt.Fprintf(&key, "a %s %d %t %t [%s] %d %d\n", fp, st.pendingSince.UnixNano(), st.firing, st.streamedAll,
			strings.Join(ss.StreamedTo, ","), st.alert.StartsAt.UnixNano(), st.clearedSince.UnixNano())
	}
	keys := make([]string, 0, len(a.groups))
	for k := range a.groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		g := a.groups[k]
		sg := storedGroup{Key: k, Labels: g.labels, FirstSeen: g.firstSeen, LastSent: g.lastSent, LastSet: g.lastSet,
			Undelivered: storeOwed(g.owed), NotBefore: g.notBefore}
		if g.told != nil {
			// Written even when empty: [] (no receiver was told) differs
			// from an absent told (every receiver counts as told), which
			// is kept for a group restored from an older file and not yet
			// notified.
			sg.Told = []string{}
			for name := range g.told {
				sg.Told = append(sg.Told, name)
			}
			sort.Strings(sg.Told)
		}
		var notified []string
		for fp := range g.notified {
			notified = append(notified, fp)
			if st := a.states[fp]; st != nil {
				sg.Notified = append(sg.Notified, storedAlert(st.alert))
			}
		}
		sort.Strings(notified)
		sort.Slice(sg.Notified, func(i, j int) bool { return sg.Notified[i].Fingerprint < sg.Notified[j].Fingerprint })
		for _, r := range g.resolved {
			sg.Resolved = append(sg.Resolved, storedAlert(r))
		}
		f.Groups = append(f.Groups, sg)
		fmt.Fprintf(&key, "g %s %d %d %s [%s] [%s] [%s] %t[%s] %d\n", k, g.firstSeen.UnixNano(), g.lastSent.UnixNano(), g.lastSet,
			strings.Join(notified, ","), fingerprints(g.resolved), owedKey(g.owed), g.told == nil, strings.Join(sg.Told, ","),
			g.notBefore.UnixNano())
	}
	f.Stream = storeOwed(a.streamOwed)
	fmt.Fprintf(&key, "s [%s]\n", owedKey(a.streamOwed))
	f.Destinations = a.destinations()
	for _, name := range sortedKeys(f.Destinations) {
		fmt.Fprintf(&key, "d %s %s\n", name, f.Destinations[name])
	}
	for _, s := range a.seen {
		v := s.last
		f.Seen = append(f.Seen, storedSeen{Check: v.Check, Region: v.Region, At: v.At, Interval: v.Interval, Tier: v.Tier})
	}
	sort.Slice(f.Seen, func(i, j int) bool {
		if f.Seen[i].Region != f.Seen[j].Region {
			return f.Seen[i].Region < f.Seen[j].Region
		}
		return f.Seen[i].Check < f.Seen[j].Check
	})
	return f, key.String()
}

// restore replaces the in-memory state with f's. a.mu held (or a not yet
// shared).
func (a *Alerter) restore(f stateFile) {
	for _, s := range f.Alerts {
		st := &alertState{alert: Alert(s.Alert), pendingSince: s.PendingSince, firing: s.Firing, clearedSince: s.ClearedSince}
		if len(s.StreamedTo) > 0 {
			st.streamedTo = map[string]bool{}
			for _, name := range s.StreamedTo {
				st.streamedTo[name] = true
			}
		} else {
			// A file written before streamed_to was kept.
			st.streamedAll = s.Streamed
		}
		a.states[s.Alert.Fingerprint] = st
	}
	for _, sg := range f.Groups {
		g := &groupState{firstSeen: sg.FirstSeen, lastSent: sg.LastSent, lastSet: sg.LastSet, notified: map[string]bool{},
			owed: restoreOwed(sg.Undelivered), labels: sg.Labels, notBefore: sg.NotBefore}
		if g.labels == nil {
			g.labels = keyLabels(sg.Key)
		}
		if sg.Told != nil {
			g.told = map[string]bool{}
			for _, name := range sg.Told {
				g.told[name] = true
			}
		}
		for _, n := range sg.Notified {
			g.notified[n.Fingerprint] = true
			// A notified alert is firing until an evaluation finds its
			// condition gone; then its resolve is sent.
			if st := a.states[n.Fingerprint]; st == nil || !st.firing {
				// Whether it went to the stream receivers is unknown; a
				// resolve Alertmanager never saw as firing is harmless.
				a.states[n.Fingerprint] = &alertState{alert: Alert(n), pendingSince: n.StartsAt, firing: true, streamedAll: true}
			}
		}
		for _, r := range sg.Resolved {
			g.resolved = append(g.resolved, Alert(r))
		}
		a.groups[sg.Key] = g
	}
	for _, s := range f.Seen {
		a.seen[s.Region+"\x00"+s.Check] = seenPair{last: reporting.Verdict{Check: s.Check, Region: s.Region, At: s.At, Interval: s.Interval, Tier: s.Tier}}
	}
	a.streamOwed = restoreOwed(f.Stream)
	a.setActive()
	// A file saved under another alerting.group_by.
	a.regroup()
}

// errBadState marks a state file that was read but cannot be used.
var errBadState = errors.New("unusable state")

// readState reads and checks a state file. It returns fs.ErrNotExist
// (wrapped) when there is none.
func readState(path string) (stateFile, error) {
	var f stateFile
	b, err := os.ReadFile(path)
	if err != nil {
		return f, err
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return f, fmt.Errorf("%w: %w", errBadState, err)
	}
	if f.Version < 1 || f.Version > stateVersion {
		return f, fmt.Errorf("%w: version %d, want 1 to %d", errBadState, f.Version, stateVersion)
	}
	for i, s := range f.Alerts {
		if s.Alert.Fingerprint == "" || s.Alert.Rule == "" {
			return f, fmt.Errorf("%w: alerts[%d] has no fingerprint or rule", errBadState, i)
		}
	}
	for i, g := range f.Groups {
		if g.Key == "" {
			return f, fmt.Errorf("%w: groups[%d] has no key", errBadState, i)
		}
		for j, n := range append(append([]storedAlert(nil), g.Notified...), g.Resolved...) {
			if n.Fingerprint == "" || n.Rule == "" {
				return f, fmt.Errorf("%w: groups[%d] (%s) alert %d has no fingerprint or rule", errBadState, i, g.Key, j)
			}
		}
		if err := checkOwed(g.Undelivered, fmt.Sprintf("groups[%d] (%s) undelivered", i, g.Key)); err != nil {
			return f, err
		}
	}
	if err := checkOwed(f.Stream, "stream"); err != nil {
		return f, err
	}
	return f, nil
}

// checkOwed checks stored owed entries; where names them in errors.
func checkOwed(s []storedOwed, where string) error {
	for i, so := range s {
		if so.Receiver == "" {
			return fmt.Errorf("%w: %s[%d] has no receiver", errBadState, where, i)
		}
		for j, r := range so.Resolved {
			if r.Fingerprint == "" || r.Rule == "" {
				return fmt.Errorf("%w: %s[%d] (%s) resolved alert %d has no fingerprint or rule", errBadState, where, i,
					so.Receiver, j)
			}
		}
	}
	return nil
}

// load restores the state saved at a.statePath, if any, and returns the
// receivers' destinations it was saved with (nil: not known). A file that
// cannot be read or used is logged, renamed to <path>.bad (so a later
// save does not overwrite what may still be worth a look) and the alerter
// starts with no state. Called by New.
func (a *Alerter) load() map[string]string {
	p := a.statePath
	f, err := readState(p)
	switch {
	case err == nil:
		a.restore(f)
		firing, undelivered := 0, 0
		for _, st := range a.states {
			if st.firing {
				firing++
			}
		}
		for _, g := range a.groups {
			undelivered += len(g.owed)
		}
		undelivered += len(a.streamOwed)
		a.log.Info("alerting: state restored", "path", p, "saved", f.Saved, "firing", firing, "groups", len(a.groups),
			"undelivered", undelivered)
		return f.Destinations
	case errors.Is(err, fs.ErrNotExist):
		a.log.Debug("alerting: no saved state, starting fresh", "path", p)
	default:
		bad := p + ".bad"
		if rerr := os.Rename(p, bad); rerr != nil {
			a.log.Error("alerting: saved state unusable and could not be moved aside; starting fresh, it will be overwritten by the next save",
				"path", p, "err", err, "move_err", rerr)
			return nil
		}
		a.log.Error("alerting: saved state unusable, moved aside; starting fresh (firing alerts notify again, earlier ones get no resolve)",
			"path", p, "moved_to", bad, "err", err)
	}
	return nil
}

// save writes f to a.statePath atomically: a temporary file in the same
// directory, fsync, rename, fsync of the directory.
func (a *Alerter) save(f stateFile) error {
	b, err := json.MarshalIndent(f, "", " ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(a.statePath)
	tmp, err := os.CreateTemp(dir, filepath.Base(a.statePath)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), a.statePath); err != nil {
		return err
	}
	// The rename is durable once the directory is; not every platform can
	// sync a directory, so a failure here is not an error.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// saveState saves the current state (as of now) if it changed since the
// last save. a.mu not held.
func (a *Alerter) saveState(now time.Time) {
	a.saveMu.Lock()
	defer a.saveMu.Unlock()
	a.mu.Lock()
	f, key := a.snapshot(now)
	a.mu.Unlock()
	if key != a.savedKey {
		a.persist(f, key, now)
	}
}

// persist saves the state and records its change key. A failed save is
// retried on the next change or evaluation and logged by a.saveFail.
// a.saveMu held, a.mu not held.
func (a *Alerter) persist(f stateFile, key string, now time.Time) {
	err := a.save(f)
	a.saveFail.record(a.log, a.statePath, now, err)
	if err == nil {
		a.savedKey = key
	}
}

// saveFailLogEvery is the least time between two log lines about one run
// of failed saves of the state file (the first is logged at once). A
// variable so tests can shorten it.
var saveFailLogEvery = time.Minute

// saveFailureLog logs failed saves of the state file without a line per
// evaluation (a full disk fails every one, each with another temporary
// file name in the error), as failureRun says, as the store's sink
// warnings do. The zero value is ready; guarded by saveMu.
type saveFailureLog struct{ run failureRun }

// record notes one save of path at now: err nil when it worked.
func (l *saveFailureLog) record(log *slog.Logger, path string, now time.Time, err error) {
	switch line, r := l.run.note(now, err != nil, saveFailLogEvery); line {
	case lineAgain:
		log.Info("alerting: alert state saved again", "path", path, "failures", r.failures, "suppressed", r.suppressed,
			"failed_for", r.failedFor(now))
	case lineFirst:
		log.Warn("alerting: cannot save alert state; retrying on every evaluation", "path", path, "err", err)
	case lineStill:
		log.Warn("alerting: still cannot save alert state", "path", path, "err", err, "failures", r.failures,
			"suppressed", r.suppressed, "failing_for", r.failedFor(now))
	}
}
