package alerting

import (
	"sort"
	"strings"
	"time"
)

// A notification counts as delivered to a receiver only once the receiver
// accepted it (a 2xx answer). Until then, per group and receiver, an owed
// records what it carried: whether it listed firing alerts, and its
// resolved alerts. A delivery that fails for good (after its retries, or
// its final attempt at shutdown) leaves the owed in place and marks it due
// again; it is folded into the group's next notification to that receiver,
// re-sent on its own after retry.redeliver_backoff (doubling per failure
// in a row up to retry.redeliver_max_backoff, independent of
// repeat_interval), and right away at the first evaluation after a restart
// (the owed part of the state file is "undelivered").
//
// A receiver whose deliveries of an alert as firing all failed is not sent
// that alert's resolve: unaccepted holds the fingerprints of firing alerts
// it was sent but has not accepted yet. When such an alert resolves while
// no delivery listing it as firing is in flight, it is dropped from that
// receiver's resolved list (and a notification left with nothing to say is
// not sent), so a receiver does not learn of a page by its resolve. One
// still in flight keeps its resolve, queued behind it, on hold: if that
// delivery is accepted the resolve goes out (and is retried like any
// other); if it fails for good the resolve is withdrawn, from what is owed
// and from the notification already queued to the receiver's worker (see
// Alerter.beforeSend), which is not sent at all when nothing else is left
// in it.
//
// Stream receivers (Alertmanager) are told every active alert on every
// evaluation, so only their resolved alerts are owed; a failed one goes
// out again with the next evaluation's stream.

// owed is what one receiver has not (yet) accepted of one group's
// notifications, or of a stream receiver's resolved alerts.
type owed struct {
	// firing: the latest notification queued for the receiver listed
	// firing alerts and the receiver has not accepted it. firingID is that
	// notification's id; 0 once it failed (or after a restart): the
	// group's current firing alerts are then due again.
	firing   bool
	firingID uint64
	repeat   bool // with firing: that notification is a repeat (forReceiver)
	// resolved are resolved alerts the receiver has not accepted, each
	// with the id of the notification carrying it (0: due again).
	resolved []owedAlert
	// failedAt is when a delivery to the receiver last failed; zero after
	// a restart. failures counts the deliveries that failed in a row since
	// the receiver last accepted one (0 after a restart).
	failedAt time.Time
	failures int
	// unaccepted are the fingerprints of alerts sent to the receiver as
	// firing in notifications it has not accepted, and never in one it
	// accepted, each with the id of the latest such notification still in
	// flight (0: every one failed).
	unaccepted map[string]uint64
	// held are the fingerprints of alerts that resolved while a delivery
	// listing them as firing, the only one left that could be accepted,
	// was still in flight, each with that delivery's id: their resolve is
	// owed only once it is accepted, and withdrawn if it fails.
	held map[string]uint64
	// withdrawn are, per id of a notification still queued, the
	// fingerprints of resolved alerts it carries that are no longer to be
	// sent: the delivery listing them as firing failed for good.
	withdrawn map[uint64]map[string]bool
	// missed are the resolved alerts the receiver never accepted as firing
	// whose resolve was dropped (withoutUnaccepted) or withdrawn (done)
	// since the Alerter last collected them (Alerter.noteMissed): it was
	// sent nothing it accepted about them. Not kept in the state file.
	missed []Alert
}

// owedAlert is one resolved alert and the notification carrying it.
type owedAlert struct {
	alert Alert
	id    uint64
}

func (o *owed) empty() bool {
	return !o.firing && len(o.resolved) == 0 && len(o.unaccepted) == 0 && len(o.held) == 0 && len(o.withdrawn) == 0
}

// redeliverAt is when what failed is due again: failedAt plus backoff
// doubled per earlier failure in a row, capped at maxBackoff. A zero
// failedAt (after a restart) is due at once.
func (o *owed) redeliverAt(backoff, maxBackoff time.Duration) time.Time {
	if o.failedAt.IsZero() {
		return time.Time{}
	}
	d := backoff
	for i := 1; i < o.failures && d < maxBackoff; i++ {
		d *= 2
	}
	return o.failedAt.Add(min(d, maxBackoff))
}

// sentFiring records fps as sent to the receiver as firing for the first
// time in notification id (0: not in flight), not accepted yet.
func (o *owed) sentFiring(fps []string, id uint64) {
	for _, fp := range fps {
		if o.unaccepted == nil {
			o.unaccepted = map[string]uint64{}
		}
		o.unaccepted[fp] = id
	}
}

// withoutUnaccepted returns the alerts of rs except those whose every
// delivery as firing to the receiver failed; those are forgotten (their
// resolve is not sent). Those whose last delivery as firing is still in
// flight are kept, on hold until it ends.
func (o *owed) withoutUnaccepted(rs []Alert) []Alert {
	if o == nil || len(o.unaccepted) == 0 {
		return rs
	}
	var out []Alert
	for _, r := range rs {
		if id, ok := o.unaccepted[r.Fingerprint]; ok {
			delete(o.unaccepted, r.Fingerprint)
			if id == 0 {
				o.missed = append(o.missed, r)
				continue
			}
			if o.held == nil {
				o.held = map[string]uint64{}
			}
			o.held[r.Fingerprint] = id
		}
		out = append(out, r)
	}
	return out
}

// unsent reports whether one of the firing alerts fs was sent to the
// receiver as firing only in notifications it did not accept, none of
// them still in flight (unaccepted with id 0).
func (o *owed) unsent(fs []Alert) bool {
	for _, f := range fs {
		if id, ok := o.unaccepted[f.Fingerprint]; ok && id == 0 {
			return true
		}
	}
	return false
}

// withdraw forgets the resolve of the alert fp: it is no longer owed, and
// a notification still queued with it leaves it out (beforeSend). The
// alert is added to missed.
func (o *owed) withdraw(fp string) {
	keep := o.resolved[:0]
	found := false
	for _, r := range o.resolved {
		if r.alert.Fingerprint != fp {
			keep = append(keep, r)
			continue
		}
		if !found {
			o.missed = append(o.missed, r.alert)
			found = true
		}
		if r.id != 0 {
			if o.withdrawn == nil {
				o.withdrawn = map[uint64]map[string]bool{}
			}
			if o.withdrawn[r.id] == nil {
				o.withdrawn[r.id] = map[string]bool{}
			}
			o.withdrawn[r.id][fp] = true
		}
	}
	clear(o.resolved[len(keep):])
	o.resolved = keep
}

// due reports whether something failed and waits for a new attempt.
func (o *owed) due() bool {
	if o.firing && o.firingID == 0 {
		return true
	}
	for _, r := range o.resolved {
		if r.id == 0 {
			return true
		}
	}
	return false
}

// retry returns the resolved alerts waiting for a new attempt, sorted.
func (o *owed) retry() []Alert {
	var out []Alert
	for _, r := range o.resolved {
		if r.id == 0 {
			out = append(out, r.alert)
		}
	}
	sortAlerts(out)
	return out
}

// add records a resolved alert due for its first attempt (a stream
// receiver's). One not yet attempted with the same fingerprint is replaced.
func (o *owed) add(a Alert) {
	o.dropWaiting(map[string]bool{a.Fingerprint: true})
	o.resolved = append(o.resolved, owedAlert{alert: a})
}

// dropWaiting removes the resolved alerts waiting for an attempt whose
// fingerprint is in fps (nil: all of them).
func (o *owed) dropWaiting(fps map[string]bool) {
	keep := o.resolved[:0]
	for _, r := range o.resolved {
		if r.id != 0 || (fps != nil && !fps[r.alert.Fingerprint]) {
			keep = append(keep, r)
		}
	}
	clear(o.resolved[len(keep):])
	o.resolved = keep
}

// queued records notification id, with firing alerts (listed) or not and
// the resolved alerts resolved (which include every one retry returned),
// as queued for the receiver. The unaccepted alerts it lists wait for its
// outcome; one it does not list (silenced since) keeps what it had.
func (o *owed) queued(id uint64, firing bool, listed, resolved []Alert) {
	o.firing, o.firingID = firing, id
	if firing {
		for _, f := range listed {
			if _, ok := o.unaccepted[f.Fingerprint]; ok {
				o.unaccepted[f.Fingerprint] = id
			}
		}
	}
	o.dropWaiting(nil)
	for _, r := range resolved {
		o.resolved = append(o.resolved, owedAlert{alert: r, id: id})
	}
}

// done records the outcome of notification id: accepted (ok), or failed
// at now. firing are the alerts it listed as firing: once accepted they
// are no longer unaccepted.
func (o *owed) done(id uint64, ok bool, now time.Time, firing []Alert) {
	// A resolve on hold for this delivery is owed if it was accepted,
	// withdrawn if it failed: the receiver never accepted the alert as
	// firing.
	for fp, hid := range o.held {
		if hid == id {
			delete(o.held, fp)
			if !ok {
				o.withdraw(fp)
			}
		}
	}
	if ok {
		o.failures = 0
		for _, f := range firing {
			delete(o.unaccepted, f.Fingerprint)
		}
		if o.firingID == id {
			o.firing, o.firingID = false, 0
		}
		keep := o.resolved[:0]
		for _, r := range o.resolved {
			if r.id != id {
				keep = append(keep, r)
			}
		}
		clear(o.resolved[len(keep):])
		o.resolved = keep
		return
	}
	if o.firingID == id {
		o.firingID = 0
	}
	for fp, uid := range o.unaccepted {
		if uid == id {
			o.unaccepted[fp] = 0
		}
	}
	for i := range o.resolved {
		if o.resolved[i].id == id {
			o.resolved[i].id = 0
		}
	}
	o.failedAt = now
	o.failures++
}

// mergeResolved returns the alerts of a and then those of b whose
// fingerprint a lacks, sorted.
func mergeResolved(a, b []Alert) []Alert {
	out := append([]Alert(nil), a...)
	in := map[string]bool{}
	for _, x := range a {
		in[x.Fingerprint] = true
	}
	for _, x := range b {
		if !in[x.Fingerprint] {
			out = append(out, x)
		}
	}
	sortAlerts(out)
	return out
}

// queue sends n to receiver w under a new id and records it in m (by
// receiver name) as owed until w accepts it. A stream notification
// (firing false) owes only its resolved alerts. a.mu held.
func (a *Alerter) queue(m map[string]*owed, w *worker, n Notification, firing bool) {
	a.queuedTo[w.name] = true
	a.nextID++
	id := a.nextID
	o := m[w.name]
	if o == nil {
		if !firing && len(n.Resolved) == 0 {
			// A stream notification owing nothing: its id only lets
			// beforeSendStream tell the alerts it sends first.
			a.disp.sendTo(w, n, id)
			return
		}
		o = &owed{}
		m[w.name] = o
	}
	n = a.forReceiver(w, o, n)
	o.queued(id, firing, n.Firing, n.Resolved)
	if !a.disp.sendTo(w, n, id) {
		o.done(id, false, n.At, nil)
	}
}

// delivered is the dispatcher's result function: it settles what
// notification id owed receiver and saves the state when that changed it.
func (a *Alerter) delivered(receiver string, n Notification, id uint64, ok bool) {
	if id == 0 {
		return
	}
	a.mu.Lock()
	now := a.now()
	if n.GroupKey == "" {
		if o := a.streamOwed[receiver]; o != nil && o.has(id) {
			o.done(id, ok, now, nil)
			if o.empty() {
				delete(a.streamOwed, receiver)
			}
		}
	} else {
		// The group it was sent for, or, after a reload changed
		// group_by, those its alerts moved to.
		for _, k := range a.owingGroups(receiver, n.GroupKey, id) {
			g := a.groups[k]
			o := g.owed[receiver]
			o.done(id, ok, now, n.Firing)
			if ok {
				delete(a.missed, receiver)
			} else {
				a.noteMissed(receiver, o)
			}
			if o.empty() {
				delete(g.owed, receiver)
			}
			a.dropIdleGroup(k, g)
		}
		if g := a.groups[n.GroupKey]; g != nil {
			a.dropIdleGroup(n.GroupKey, g)
		}
	}
	a.mu.Unlock()
	if a.statePath != "" {
		a.saveState(now)
	}
}

// beforeSend is the dispatcher's prepare function, run before each
// attempt of notification id to receiver (its first and every retry). It
// takes out of it:
//
//   - the firing alerts silenced since it was queued (a silence POSTed, a
//     maintenance window begun), so that nothing is sent of an alert once
//     its silence was answered 201: the alert shows silenced (and the
//     history says so) from then, the receiver is not owed it (it is not
//     sent the alert's resolve) and, when no receiver was sent it, the
//     group counts it as not notified (when its silence ends while it
//     fires, it is notified as a new alert);
//   - the resolved alerts withdrawn from receiver since it was queued (the
//     delivery listing them as firing failed for good).
//
// Resolves of alerts notified as firing stay, silenced or not. It reports
// false when nothing is left to say: the delivery is skipped.
func (a *Alerter) beforeSend(receiver string, n Notification, id uint64) (Notification, bool) {
	if n.GroupKey == "" {
		return a.beforeSendStream(receiver, n, id)
	}
	a.mu.Lock()
	now := a.now()
	firing, silenced := a.splitSilenced(now, n.Firing)
	// The group it was sent for, or, after a reload changed group_by,
	// those its alerts moved to (each keeps the withdrawn resolves).
	owing := a.owingGroups(receiver, n.GroupKey, id)
	drop := map[string]bool{}
	for _, k := range owing {
		for fp := range a.groups[k].owed[receiver].withdrawn[id] {
			drop[fp] = true
		}
	}
	if len(silenced) == 0 && len(drop) == 0 {
		a.mu.Unlock()
		return n, true
	}
	var resolved []Alert
	for _, r := range n.Resolved {
		if !drop[r.Fingerprint] {
			resolved = append(resolved, r)
		}
	}
	send := len(firing) > 0 || len(resolved) > 0
	for _, k := range owing {
		g := a.groups[k]
		o := g.owed[receiver]
		delete(o.withdrawn, id)
		for _, x := range silenced {
			a.unsend(g, o, x.Fingerprint, id)
		}
		if len(firing) == 0 && o.firingID == id {
			// Nothing firing is owed under id any more.
			o.firing, o.firingID = false, 0
		}
		if o.empty() {
			delete(g.owed, receiver)
		}
		a.dropIdleGroup(k, g)
	}
	if len(silenced) > 0 {
		a.log.Info("alerting: queued notification leaves out alerts silenced since it was queued", "receiver", receiver,
			"group", n.GroupKey, "silenced", listAlerts(silenced, missedListMax), "sent", send)
	}
	a.mu.Unlock()
	if a.statePath != "" {
		a.saveState(now)
		a.saveHistory()
	}
	if !send {
		return n, false
	}
	out := newNotification(n.GroupKey, n.GroupLabels, firing, resolved, n.At, Config{StatusPageURL: n.StatusPageURL})
	out.accepted = n.accepted // PagerDuty is not sent again the triggers it accepted
	return out, true
}

// beforeSendStream is beforeSend for a stream receiver's (Alertmanager)
// notification id: of the firing alerts silenced since it was queued,
// those the receiver does not hold (this notification was to be the
// first to send them, or an earlier one left them out) are left out,
// as an alert that first fires inside a silence is not sent to it; those
// it holds stay, annotated silenced_by, as every evaluation sends them.
// It reports false when nothing is left to say.
func (a *Alerter) beforeSendStream(receiver string, n Notification, id uint64) (Notification, bool) {
	if len(n.Firing) == 0 {
		return n, true
	}
	a.mu.Lock()
	now := a.now()
	_, silenced := a.splitSilenced(now, n.Firing)
	if len(silenced) == 0 {
		a.mu.Unlock()
		return n, true
	}
	drop := map[string]bool{}
	for _, x := range silenced {
		st := a.states[x.Fingerprint]
		if st.streamedIn[receiver] == id || !st.streamedTo[receiver] && !st.streamedAll {
			drop[x.Fingerprint] = true
			delete(st.streamedTo, receiver)
			delete(st.streamedIn, receiver)
		}
	}
	var firing []Alert
	for _, x := range n.Firing {
		if st := a.states[x.Fingerprint]; !drop[x.Fingerprint] {
			if st != nil && st.firing && st.alert.Silenced != "" {
				x.Silenced = st.alert.Silenced
			}
			firing = append(firing, x)
		}
	}
	if len(drop) > 0 {
		var left []Alert
		for _, x := range silenced {
			if drop[x.Fingerprint] {
				left = append(left, x)
			}
		}
		a.log.Info("alerting: queued notification leaves out alerts silenced since it was queued", "receiver", receiver,
			"silenced", listAlerts(left, missedListMax), "sent", len(firing)+len(n.Resolved) > 0)
	}
	a.mu.Unlock()
	if a.statePath != "" {
		a.saveState(now)
		a.saveHistory()
	}
	if len(firing)+len(n.Resolved) == 0 {
		return n, false
	}
	n.Firing = firing
	return n, true
}

// splitSilenced splits a queued notification's firing alerts into those
// still to be sent and those silenced at now (by a silence or window that
// began after it was queued). Each of these shows silenced from now, and
// the history records it as it would at the next evaluation. An alert no
// longer firing is kept: its resolve follows. a.mu held.
func (a *Alerter) splitSilenced(now time.Time, firing []Alert) (keep, silenced []Alert) {
	for _, f := range firing {
		st := a.states[f.Fingerprint]
		cur := ""
		if st != nil && st.firing {
			cur = a.silencedBy(now, st.alert.Check, st.alert.Target)
		}
		if cur == "" {
			keep = append(keep, f)
			continue
		}
		if prev := st.alert.Silenced; prev != cur {
			st.alert.Silenced = cur
			a.noteSilence(now, st, prev)
		}
		silenced = append(silenced, f)
	}
	return keep, silenced
}

// unsend records that the firing alert fp was left out of notification
// id to the receiver owed o, silenced: if id was the first to list it to
// that receiver, the receiver has still not been sent it (its resolve is
// not sent to it); and if no receiver told of group g was sent it, nor
// has a delivery listing it still to run, g counts it as not notified and
// no receiver is owed anything of it (when it fires on after its silence
// it is notified as new; when it resolves, to nobody). a.mu held; o
// stays in g.owed even when left empty (the caller sees to it).
func (a *Alerter) unsend(g *groupState, o *owed, fp string, id uint64) {
	if uid, ok := o.unaccepted[fp]; ok && uid == id {
		o.unaccepted[fp] = 0
	}
	if g.told == nil || !g.notified[fp] {
		return
	}
	for name := range g.told {
		ow := g.owed[name]
		if ow == nil {
			return
		}
		if uid, ok := ow.unaccepted[fp]; !ok || uid != 0 {
			return
		}
	}
	delete(g.notified, fp)
	for name := range g.told {
		ow := g.owed[name]
		delete(ow.unaccepted, fp)
		if ow != o && ow.empty() {
			delete(g.owed, name)
		}
	}
}

// owedKey is the change key of one owed map: what the state file keeps of
// it.
func owedKey(m map[string]*owed) string {
	var b strings.Builder
	for _, name := range sortedOwed(m) {
		o := m[name]
		fps := make([]string, len(o.resolved))
		for i, r := range o.resolved {
			fps[i] = r.alert.Fingerprint
		}
		sort.Strings(fps)
		un := make([]string, 0, len(o.unaccepted)+len(o.held))
		for fp := range o.unaccepted {
			un = append(un, fp)
		}
		for fp := range o.held {
			un = append(un, "h"+fp)
		}
		sort.Strings(un)
		b.WriteString(name + " " + map[bool]string{true: "F", false: "-"}[o.firing] + " " + strings.Join(fps, ",") +
			" u" + strings.Join(un, ",") + ";")
	}
	return b.String()
}

func sortedOwed(m map[string]*owed) []string {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// forgetReceiver forgets what receiver name was sent and had not
// accepted, after its destination changed under the same name (a reload
// or a restart with another URL, routing key or channel: see
// destination): the new destination was sent nothing. It leaves every
// group's told (so the next evaluation sends it each group's firing
// alerts, as to a receiver added by a reload, and no resolve of an alert
// it was not sent) and owed (what the old destination had not accepted
// is not sent to the new one), and, for an Alertmanager, the alerts it
// held (it is sent the active ones anew, and no resolve of the others)
// and the resolves it was owed. One line names the receiver, never its
// URL or key, when it had been told anything. The old destination is
// sent nothing more: deliveries already queued to it drain there. a.mu
// held, a.disp the dispatcher of the new config.
func (a *Alerter) forgetReceiver(name string) {
	groups, alerts := 0, 0
	for k, g := range a.groups {
		if g.told == nil {
			// Restored from a file that did not keep told: every receiver
			// taking the group counts as told, the others stay so.
			rt := g.route()
			g.told = map[string]bool{}
			for _, w := range a.disp.workers {
				if !w.stream && w.takes(rt) {
					g.told[w.name] = true
				}
			}
		}
		if g.told[name] || g.owed[name] != nil {
			groups++
		}
		delete(g.told, name)
		delete(g.owed, name)
		a.dropIdleGroup(k, g)
	}
	if a.streamOwed[name] != nil {
		alerts += len(a.streamOwed[name].resolved)
		delete(a.streamOwed, name)
	}
	for _, st := range a.states {
		if st.streamedAll {
			// Every stream receiver taking it held it: the others still do.
			for _, w := range a.disp.workers {
				if w.stream && w.name != name && st.holds(w) {
					if st.streamedTo == nil {
						st.streamedTo = map[string]bool{}
					}
					st.streamedTo[w.name] = true
				}
				if w.name == name && st.holds(w) {
					alerts++
				}
			}
			st.streamedAll = false
		} else if st.streamedTo[name] {
			alerts++
		}
		delete(st.streamedTo, name)
		delete(st.streamedIn, name)
	}
	delete(a.missed, name)
	if groups+alerts > 0 {
		a.log.Info("alerting: receiver's destination changed (url, routing key or channel): what it was sent before "+
			"is forgotten; it is sent every firing alert at the next evaluation", "receiver", name, "groups", groups,
			"stream_alerts", alerts)
	}
}

// forgetMoved forgets, by forgetReceiver, what each receiver of the
// running config was sent whose destination differs from dests[name] (by
// receiver name; a receiver not in dests is not known to have moved).
// a.mu held (or a not yet shared), a.disp the dispatcher of a.cfg.
func (a *Alerter) forgetMoved(dests map[string]string) {
	for _, r := range a.cfg.Receivers {
		if d, ok := dests[r.Name]; ok && d != destination(r) {
			a.forgetReceiver(r.Name)
		}
	}
}

// destinations are the destination of each receiver of a.cfg, by name.
// a.mu held.
func (a *Alerter) destinations() map[string]string {
	m := make(map[string]string, len(a.cfg.Receivers))
	for _, r := range a.cfg.Receivers {
		m[r.Name] = destination(r)
	}
	return m
}
