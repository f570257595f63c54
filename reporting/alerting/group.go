package alerting

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// groupLabelOrder are the labels alerting.group_by takes, in the order
// they make a group key: the default [rule, check, severity] gives the
// key "rule/check/severity" older versions used.
var groupLabelOrder = []string{"rule", "check", "target", "region", "slo", "severity"}

// defaultGroupBy is alerting.group_by's default.
var defaultGroupBy = []string{"rule", "check", "severity"}

// validateGroupBy checks alerting.group_by and sets it to its canonical
// form (groupLabelOrder's order, alertname as rule, each label once).
// severity is required: the receivers' severities filters, PagerDuty's
// and Slack's colours go by a group's severity. A label a receiver
// (other than an Alertmanager, which is sent each alert on its own)
// filters on must be in it too: a group's notification goes to one set of
// receivers.
func (c *Config) validateGroupBy() error {
	if len(c.GroupBy) == 0 && c.set.Has("group_by") {
		// Alertmanager reads [] as one group for every alert; here it
		// would silently be the default.
		return errors.New("group_by: []: an empty list is not allowed, as severity is required: write [severity] " +
			"to group every check's alerts together (one notification group per severity), or omit the key " +
			"for the default [rule, check, severity]")
	}
	if len(c.GroupBy) == 0 {
		c.GroupBy = slices.Clone(defaultGroupBy)
		return nil
	}
	var errs []error
	in := map[string]bool{}
	for i, l := range c.GroupBy {
		l = strings.ToLower(strings.TrimSpace(l))
		if l == "alertname" {
			l = "rule"
		}
		if !slices.Contains(groupLabelOrder, l) {
			hint := ""
			if l == "tier" {
				hint = " (a check's tier may change while its alerts fire: group by check)"
			}
			errs = append(errs, fmt.Errorf("group_by[%d]: %q: %w%s", i, c.GroupBy[i], ErrGroupByLabel, hint))
			continue
		}
		in[l] = true
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	written := "[" + strings.Join(c.GroupBy, ", ") + "]"
	if !in["severity"] {
		errs = append(errs, fmt.Errorf("group_by: %s lacks severity: a group's alerts share their severity, "+
			"which receivers' severities and PagerDuty go by; add severity", written))
	}
	for i, r := range c.Receivers {
		if r.Alertmanager != nil {
			continue // sent every alert on its own
		}
		for _, f := range []struct {
			key    string
			set    bool
			labels []string
		}{{"checks", len(r.Checks) > 0, []string{"check"}}, {"tiers", len(r.Tiers) > 0, []string{"check"}},
			{"rules", len(r.Rules) > 0, []string{"rule"}}} {
			if f.set && !in[f.labels[0]] {
				errs = append(errs, fmt.Errorf("group_by: %s leaves out %s, which receivers[%d].%s (%q) filters on: "+
					"a group's notification goes to one set of receivers, so its alerts must agree on it; add %s to "+
					"group_by or remove the filter", written, f.labels[0], i, f.key, r.Name, f.labels[0]))
			}
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	c.GroupBy = nil
	for _, l := range groupLabelOrder {
		if in[l] {
			c.GroupBy = append(c.GroupBy, l)
		}
	}
	return nil
}

// groupBy is c.GroupBy, or its default for a Config that was not
// validated.
func (c *Config) groupBy() []string {
	if len(c.GroupBy) == 0 {
		return defaultGroupBy
	}
	return c.GroupBy
}

// labelValue is alert x's value of a group_by label.
func labelValue(x Alert, label string) string {
	switch label {
	case "rule":
		return x.Rule
	case "check":
		return x.Check
	case "target":
		return x.Target
	case "region":
		return x.Region
	case "slo":
		return x.SLO
	case "severity":
		return x.Severity
	}
	return ""
}

// groupLabels are alert x's values of the group_by labels: its group's
// labels.
func (c *Config) groupLabels(x Alert) map[string]string {
	m := make(map[string]string, len(c.groupBy()))
	for _, l := range c.groupBy() {
		m[l] = labelValue(x, l)
	}
	return m
}

// groupKey is the notification group of alert x: its values of the
// group_by labels joined by "/" in groupLabelOrder's order, e.g.
// "down/asset/page" for the default [rule, check, severity], "page" for
// [severity].
func (c *Config) groupKey(x Alert) string {
	by := c.groupBy()
	if len(by) == 3 && by[0] == "rule" && by[1] == "check" && by[2] == "severity" {
		return x.Rule + "/" + x.Check + "/" + x.Severity // no allocation for the default
	}
	vals := make([]string, len(by))
	for i, l := range by {
		vals[i] = labelValue(x, l)
	}
	return strings.Join(vals, "/")
}

// keyLabels are the labels of a group restored from a file that did not
// keep them, written when every group key was rule/check/severity.
func keyLabels(key string) map[string]string {
	parts := strings.SplitN(key, "/", 3)
	for len(parts) < 3 {
		parts = append(parts, "")
	}
	return map[string]string{"rule": parts[0], "check": parts[1], "severity": parts[2]}
}

// fps returns the fingerprints of every alert group g keeps something of:
// notified ones, resolved ones and what receivers are owed.
func (g *groupState) fps() map[string]bool {
	m := map[string]bool{}
	for fp := range g.notified {
		m[fp] = true
	}
	for _, r := range g.resolved {
		m[r.Fingerprint] = true
	}
	for _, o := range g.owed {
		for _, r := range o.resolved {
			m[r.alert.Fingerprint] = true
		}
		for fp := range o.unaccepted {
			m[fp] = true
		}
		for fp := range o.held {
			m[fp] = true
		}
	}
	return m
}

// inGroup reports whether alert x is of the group whose group_by labels
// are labels.
func inGroup(x Alert, labels map[string]string) bool {
	for l, v := range labels {
		if labelValue(x, l) != v {
			return false
		}
	}
	return len(labels) > 0
}

// waiting returns the firing alerts of group k (g) while it waits out
// group_wait, notified of nothing yet: they are in no part of its state
// (fps), only its labels say they are its own. nil for a group notified
// before. a.mu held.
func (a *Alerter) waiting(k string, g *groupState) []string {
	if g.lastSet != "" {
		return nil
	}
	labels := g.labels
	if labels == nil {
		labels = keyLabels(k)
	}
	var out []string
	for fp, st := range a.states {
		if st.firing && !g.notified[fp] && inGroup(st.alert, labels) {
			out = append(out, fp)
		}
	}
	return out
}

// regroup moves the groups' state to the groups a.cfg's group_by puts
// their alerts in, after a reload or a restart changed group_by (a no-op
// when every group's alerts still share its key). Each alert's part
// moves with it: notified as firing (so it is not notified again as
// new), resolved and not yet notified (so its resolve still goes out),
// and per receiver what it has not accepted. A group made of several
// keeps the earliest first seen and last notification (a repeat is due
// repeat_interval after the earliest; a group waiting out group_wait
// keeps the earliest wait of those its alerts came from), the receivers
// told of any of them, and the last notified set of its alerts, so
// nothing is sent before their set changes. A repeat a receiver did not
// accept is owed by every group holding the alerts it repeated. a.mu
// held (or a not yet shared).
func (a *Alerter) regroup() {
	keyOf := map[string]string{}
	labelsOf := map[string]map[string]string{}
	note := func(x Alert) {
		k := a.cfg.groupKey(x)
		keyOf[x.Fingerprint] = k
		if labelsOf[k] == nil {
			labelsOf[k] = a.cfg.groupLabels(x)
		}
	}
	for _, g := range a.groups {
		for _, r := range g.resolved {
			note(r)
		}
		for _, o := range g.owed {
			for _, r := range o.resolved {
				note(r.alert)
			}
		}
	}
	for _, st := range a.states {
		note(st.alert)
	}
	members := map[string]map[string]bool{}
	moved := false
	for k, g := range a.groups {
		m := g.fps()
		for _, fp := range a.waiting(k, g) {
			m[fp] = true
		}
		members[k] = m
		for fp := range m {
			if nk, ok := keyOf[fp]; ok && nk != k {
				moved = true
			}
		}
	}
	if !moved {
		return
	}
	// The groups notified under the old group_by, for the alerts that
	// would have joined them (formerWait).
	for k, g := range a.groups {
		if g.lastSet == "" || g.lastSent.IsZero() {
			continue
		}
		labels := g.labels
		if labels == nil {
			labels = keyLabels(k)
		}
		a.former = append(a.former, formerGroup{labels: labels, lastSent: g.lastSent})
	}
	ng := map[string]*groupState{}
	get := func(k string) *groupState {
		if ng[k] == nil {
			ng[k] = &groupState{notified: map[string]bool{}, owed: map[string]*owed{}, labels: labelsOf[k]}
		}
		return ng[k]
	}
	keys := make([]string, 0, len(a.groups))
	for k := range a.groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	lastSets := map[string][]string{}
	plainWait := map[string]bool{}
	for _, k := range keys {
		g := a.groups[k]
		targets := map[string]bool{}
		for fp := range members[k] {
			if nk, ok := keyOf[fp]; ok {
				targets[nk] = true
			}
		}
		if len(targets) == 0 {
			continue // nothing of it is left
		}
		for t := range targets {
			n := get(t)
			if n.firstSeen.IsZero() || (!g.firstSeen.IsZero() && g.firstSeen.Before(n.firstSeen)) {
				n.firstSeen = g.firstSeen
			}
			if n.lastSent.IsZero() || (!g.lastSent.IsZero() && g.lastSent.Before(n.lastSent)) {
				n.lastSent = g.lastSent
			}
			if n.tier == "" {
				n.tier = g.tier
			}
			// A group still waiting keeps the earliest wait, as for
			// group_wait: the earliest notBefore, none if a part waits
			// out group_wait.
			if g.lastSet == "" && g.notBefore.IsZero() {
				plainWait[t] = true
			} else if g.lastSet == "" && (n.notBefore.IsZero() || g.notBefore.Before(n.notBefore)) {
				n.notBefore = g.notBefore
			}
			if g.told == nil {
				n.toldAll = true
			} else {
				if n.told == nil {
					n.told = map[string]bool{}
				}
				for name := range g.told {
					n.told[name] = true
				}
			}
		}
		if g.lastSet != "" {
			for _, fp := range strings.Split(g.lastSet, ",") {
				if nk, ok := keyOf[fp]; ok {
					lastSets[nk] = append(lastSets[nk], fp)
				}
			}
		}
		for fp := range g.notified {
			if nk, ok := keyOf[fp]; ok {
				get(nk).notified[fp] = true
			}
		}
		for _, r := range g.resolved {
			n := get(keyOf[r.Fingerprint])
			n.resolved = append(n.resolved, r)
		}
		for name, o := range g.owed {
			parts := map[string]*owed{}
			part := func(t string) *owed {
				if parts[t] == nil {
					parts[t] = &owed{failedAt: o.failedAt, failures: o.failures}
				}
				return parts[t]
			}
			for _, r := range o.resolved {
				p := part(keyOf[r.alert.Fingerprint])
				p.resolved = append(p.resolved, r)
			}
			for fp, id := range o.unaccepted {
				if nk, ok := keyOf[fp]; ok {
					p := part(nk)
					if p.unaccepted == nil {
						p.unaccepted = map[string]uint64{}
					}
					p.unaccepted[fp] = id
				}
			}
			for fp, id := range o.held {
				if nk, ok := keyOf[fp]; ok {
					p := part(nk)
					if p.held == nil {
						p.held = map[string]uint64{}
					}
					p.held[fp] = id
				}
			}
			if o.firing {
				// The firing alerts it did not accept are owed by the groups
				// they went to, and only by those: a group whose alerts it
				// all accepted is not sent them again (a part made for a
				// resolve or a held alert carries that alone). A repeat
				// it did not accept repeated every firing alert: each
				// group they went to owes it.
				fps := map[string]bool{}
				for fp := range o.unaccepted {
					fps[fp] = true
				}
				if o.repeat {
					for fp := range g.notified {
						fps[fp] = true
					}
				}
				for fp := range fps {
					if nk, ok := keyOf[fp]; ok {
						p := part(nk)
						p.firing, p.firingID, p.repeat = true, o.firingID, o.repeat
					}
				}
			}
			for t, p := range parts {
				n := get(t)
				if n.owed[name] == nil {
					n.owed[name] = p
				} else {
					n.owed[name].merge(p)
				}
			}
			// Withdrawn resolves name notifications already queued: each
			// part keeps them, as beforeSend looks for them by id.
			for id, fps := range o.withdrawn {
				for t := range parts {
					p := get(t).owed[name]
					if p.withdrawn == nil {
						p.withdrawn = map[uint64]map[string]bool{}
					}
					p.withdrawn[id] = fps
				}
			}
			if len(o.missed) > 0 {
				a.noteMissed(name, o)
			}
		}
	}
	for k, n := range ng {
		if n.toldAll {
			// A part restored from an older file counts every receiver
			// as told, as that file does.
			n.told, n.toldAll = nil, false
		}
		if fps := lastSets[k]; len(fps) > 0 {
			sort.Strings(fps)
			n.lastSet = strings.Join(slices.Compact(fps), ",")
		}
		if n.firstSeen.IsZero() {
			n.firstSeen = n.lastSent
		}
		if plainWait[k] || n.lastSet != "" {
			n.notBefore = time.Time{}
		}
	}
	a.log.Info("alerting: notification groups rebuilt for alerting.group_by", "group_by", strings.Join(a.cfg.groupBy(), ","),
		"groups_before", len(a.groups), "groups", len(ng))
	a.groups = ng
}

// formerGroup is a group notified under an earlier alerting.group_by:
// its labels under that group_by and its last notification.
type formerGroup struct {
	labels   map[string]string
	lastSent time.Time
}

// formerWait is when the group that firing alert st is the first of,
// after a change of group_by, is notified: a.former's group that st
// would have joined under the old group_by (the latest one, after
// several changes) was notified less than group_interval before now and
// still has a firing alert notified: st is a change of that group, due
// group_interval after its last notification, not a new group waiting
// group_wait, so a change of group_by does not hasten (or delay) it.
// Zero when there is none. a.mu held.
func (a *Alerter) formerWait(now time.Time, st *alertState) time.Time {
	var at time.Time
	for _, f := range a.former {
		due := f.lastSent.Add(a.cfg.GroupInterval)
		if !now.Before(due) || !due.After(at) || !inGroup(st.alert, f.labels) || !a.notifiedIn(f.labels, st) {
			continue
		}
		at = due
	}
	return at
}

// notifiedIn reports whether a firing alert other than st, of a group of
// labels, is notified as firing by the group it is in now. a.mu held.
func (a *Alerter) notifiedIn(labels map[string]string, st *alertState) bool {
	for fp, o := range a.states {
		if o == st || !o.firing || !inGroup(o.alert, labels) {
			continue
		}
		if g := a.groups[a.cfg.groupKey(o.alert)]; g != nil && g.notified[fp] {
			return true
		}
	}
	return false
}

// pruneFormer forgets the former groups notified group_interval or more
// before now: an alert joining one now would be due at once, and its new
// group's group_wait is the closest the new grouping has. a.mu held.
func (a *Alerter) pruneFormer(now time.Time) {
	a.former = slices.DeleteFunc(a.former, func(f formerGroup) bool {
		return !now.Before(f.lastSent.Add(a.cfg.GroupInterval))
	})
}

// merge adds p's part to o: both are one receiver's, of groups merged by
// regroup.
func (o *owed) merge(p *owed) {
	if p.firing {
		o.repeat = o.firing && o.repeat || p.repeat
		if !o.firing || p.firingID == 0 || (o.firingID != 0 && p.firingID > o.firingID) {
			o.firingID = p.firingID
		}
		if o.firing && o.firingID != 0 && p.firingID == 0 {
			o.firingID = 0
		}
		o.firing = true
	}
	o.resolved = append(o.resolved, p.resolved...)
	for fp, id := range p.unaccepted {
		if o.unaccepted == nil {
			o.unaccepted = map[string]uint64{}
		}
		o.unaccepted[fp] = id
	}
	for fp, id := range p.held {
		if o.held == nil {
			o.held = map[string]uint64{}
		}
		o.held[fp] = id
	}
	if p.failedAt.After(o.failedAt) {
		o.failedAt = p.failedAt
	}
	o.failures = max(o.failures, p.failures)
}

// has reports whether notification id carries something of o.
func (o *owed) has(id uint64) bool {
	if id == 0 {
		return false
	}
	if o.firingID == id || o.withdrawn[id] != nil {
		return true
	}
	for _, r := range o.resolved {
		if r.id == id {
			return true
		}
	}
	for _, uid := range o.unaccepted {
		if uid == id {
			return true
		}
	}
	for _, hid := range o.held {
		if hid == id {
			return true
		}
	}
	return false
}

// owingGroups are the keys of the groups whose owed of receiver carries
// notification id: the group key it was sent under, or, when a reload
// regrouped since, the groups its alerts moved to.
func (a *Alerter) owingGroups(receiver, key string, id uint64) []string {
	if g := a.groups[key]; g != nil && g.owed[receiver] != nil && g.owed[receiver].has(id) {
		return []string{key}
	}
	var out []string
	for k, g := range a.groups {
		if o := g.owed[receiver]; o != nil && o.has(id) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// forReceiver returns notification n of its group, about to be queued
// for receiver w (whose owed is o), with the firing alerts w already
// accepted as firing noted (Notification.accepted), so a PagerDuty
// receiver is sent a trigger only for the others: w was told of the
// group, the alert was notified as firing before, and no notification
// listing it that w has not accepted is left (o.unaccepted). A repeat
// (repeat_interval since the group's last notification), or the
// redelivery of one w has not accepted, notes none: every firing alert
// is sent again. o records whether n is a repeat, so that a redelivery,
// also after a change of group_by (regroup), is one too. a.mu held.
func (a *Alerter) forReceiver(w *worker, o *owed, n Notification) Notification {
	g := a.groups[n.GroupKey]
	if n.GroupKey == "" || g == nil || len(n.Firing) == 0 {
		return n
	}
	o.repeat = g.lastSet != "" && !n.At.Before(g.lastSent.Add(a.cfg.RepeatInterval)) || o.firing && o.repeat
	if o.repeat || !g.told[w.name] {
		return n
	}
	for _, f := range n.Firing {
		if _, un := o.unaccepted[f.Fingerprint]; un || !g.notified[f.Fingerprint] {
			continue
		}
		if n.accepted == nil {
			n.accepted = map[string]bool{}
		}
		n.accepted[f.Fingerprint] = true
	}
	return n
}

// groupSummaryMax bounds the alerts a multi-check notification's first
// line names.
const groupSummaryMax = 10

// groupSummary is the first line of a notification whose alerts are of
// more than one check or rule (alerting.group_by without them): "12
// firing: down on asset/origin-a, down on asset/origin-b, … 2 more" and,
// when some resolved, "; 3 resolved: …". "" for a notification of one
// rule and check, whose title says it.
func groupSummary(firing, resolved []Alert) string {
	checks, rules := map[string]bool{}, map[string]bool{}
	for _, x := range append(append([]Alert(nil), firing...), resolved...) {
		checks[x.Check], rules[x.Rule] = true, true
	}
	if len(checks) <= 1 && len(rules) <= 1 {
		return ""
	}
	var parts []string
	for _, l := range []struct {
		word string
		as   []Alert
	}{{"firing", firing}, {"resolved", resolved}} {
		if len(l.as) == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%d %s: %s", len(l.as), l.word, listAlerts(l.as, groupSummaryMax)))
	}
	return strings.Join(parts, "; ")
}

// common returns the value f gives every alert of as, "" when they differ
// (or as is empty).
func common(as []Alert, f func(Alert) string) string {
	if len(as) == 0 {
		return ""
	}
	v := f(as[0])
	for _, x := range as[1:] {
		if f(x) != v {
			return ""
		}
	}
	return v
}

// distinct returns the values f gives the alerts of as, in their order,
// each once.
func distinct(as []Alert, f func(Alert) string) []string {
	var out []string
	for _, x := range as {
		if v := f(x); !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// listNames joins at most max names, then "+N more".
func listNames(names []string, max int) string {
	if len(names) <= max {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:max], ", ") + fmt.Sprintf(" +%d more", len(names)-max)
}

// listAlerts names as, in their order, as "rule on check/target" (with
// " in region" for a dead-man alert), at most most of them, then how many
// more: "down on asset/origin-a, down on asset/origin-b, … 2 more".
func listAlerts(as []Alert, most int) string {
	names := make([]string, 0, min(len(as), most+1))
	for i, x := range as {
		if i == most {
			names = append(names, fmt.Sprintf("… %d more", len(as)-i))
			break
		}
		s := x.Rule + " on " + x.Check
		if x.Target != "" {
			s += "/" + x.Target
		}
		if x.Region != "" {
			s += " in " + x.Region
		}
		names = append(names, s)
	}
	return strings.Join(names, ", ")
}
