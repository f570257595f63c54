package proxy

import (
	"errors"
	"sync"
)

// Cutting the tries at an origin taken out of rotation (retry.on_ejection:
// resend, README "Failover").
//
// An origin that stops answering without closing its connections (a
// blackholed or hung host) keeps every try already sent to it waiting until
// try_timeout, even after the verdicts or the passive detector took it out:
// only new tries avoid it. So a try that may go to another origin (the
// request is replay-safe, and the origin was available when picked, not a
// last resort) publishes its origin in its tryWatch, and, while it waits for
// the answer's head, what cuts it: the origin connection on the fast path
// (its deadline is poisoned), the context's cancel function through
// http.Transport (cancelled with errEjected). A try whose answer's head
// arrived is never cut: nothing is published for the body.
//
// Who cuts: on the fast engine, its client watcher, which the ejection wakes
// (takenOutNow) and which also looks at every connection each
// clientWatchInterval, for the price of about five atomic operations per
// try on the request path, no lock and no allocation. Elsewhere (net/http's
// server: HTTP/2 clients, engine stdlib) a try that can be cut allocates its
// own tryWatch and enters cutTries, a set under a mutex, and the ejection
// itself cuts the set's tries at that origin (ejected).
//
// A cut try is logged and counted under cause ejected; the passive detector
// and the signals do not see it (the origin was already out); the request
// then goes on like any failed replay-safe try: another origin, within
// retry.tries, retry.budget and retry.retry_budget.

// errEjected is the error of a try cut because its origin was taken out of
// rotation while the try waited for the answer's head.
var errEjected = errors.New("origin taken out of rotation while the try waited for the answer")

// takenOut reports whether o is out for verdicts or passive detection (a
// drain lets the tries in flight finish).
func (o *origin) takenOut() bool { return o.flags.Load()&(flagVerdict|flagPassive) != 0 }

// cutRegistry holds the tries that can be cut outside the fast engine.
type cutRegistry struct {
	mu sync.Mutex
	m  map[*tryWatch]struct{}
}

// cutTries is the process's registry: origins are few and ejections rare.
var cutTries cutRegistry

func (r *cutRegistry) add(w *tryWatch) {
	r.mu.Lock()
	if r.m == nil {
		r.m = map[*tryWatch]struct{}{}
	}
	r.m[w] = struct{}{}
	w.cutReg = r
	r.mu.Unlock()
}

func (r *cutRegistry) remove(w *tryWatch) {
	r.mu.Lock()
	delete(r.m, w)
	r.mu.Unlock()
}

// cutOut cuts the registered tries at o.
func (r *cutRegistry) cutOut(o *origin) {
	r.mu.Lock()
	var cut []*tryWatch
	for w := range r.m {
		if w.ejectFrom.Load() == o {
			cut = append(cut, w)
		}
	}
	r.mu.Unlock()
	for _, w := range cut {
		w.cut()
	}
}

// takenOutNow is called when o was just taken out for verdicts or passive
// detection: the registered tries at it are cut, and every fast engine's
// watcher is woken to cut its own at once rather than at its next tick.
func takenOutNow(o *origin) {
	cutTries.cutOut(o)
	watchers.kickAll()
}

// watcherSet holds the wake-up channels of the running fast engines'
// watchers (one per listener), so that an ejection cuts the tries waiting at
// the origin within a scheduling delay instead of up to clientWatchInterval.
type watcherSet struct {
	mu sync.Mutex
	m  map[chan struct{}]struct{}
}

var watchers watcherSet

func (s *watcherSet) add(c chan struct{}) {
	s.mu.Lock()
	if s.m == nil {
		s.m = map[chan struct{}]struct{}{}
	}
	s.m[c] = struct{}{}
	s.mu.Unlock()
}

func (s *watcherSet) remove(c chan struct{}) {
	s.mu.Lock()
	delete(s.m, c)
	s.mu.Unlock()
}

// kickAll wakes every watcher; a watcher already woken and not yet looking
// keeps one pending wake-up.
func (s *watcherSet) kickAll() {
	s.mu.Lock()
	for c := range s.m {
		select {
		case c <- struct{}{}:
		default:
		}
	}
	s.mu.Unlock()
}

// beginEject publishes o as the origin of a try that may be cut; w is the
// engine connection's tryWatch, or nil off the fast engine: one is then
// made and registered. It returns the tryWatch to pass on, to be ended with
// endEject.
func beginEject(w *tryWatch, o *origin) *tryWatch {
	if w == nil {
		w = &tryWatch{}
		cutTries.add(w)
	}
	w.ejectFrom.Store(o)
	return w
}

// endEject ends what beginEject began.
func (w *tryWatch) endEject() {
	if w == nil || w.ejectFrom.Load() == nil {
		return
	}
	w.ejectFrom.Store(nil)
	if w.cutReg != nil {
		w.cutReg.remove(w)
	}
}

// cuttable reports whether w's try waits at an origin taken out.
func (w *tryWatch) cuttable() bool {
	o := w.ejectFrom.Load()
	return o != nil && o.takenOut() && (w.head.Load() != nil || w.headCancel.Load() != nil)
}

// cut aborts the wait of w's try for the answer's head, if it still waits.
func (w *tryWatch) cut() {
	if c := w.head.Swap(nil); c != nil {
		c.c.SetDeadline(aLongTimeAgo)
	}
	if f := w.headCancel.Swap(nil); f != nil {
		(*f)(errEjected)
	}
}

// beginHead publishes the fast path's connection while the try waits for
// the head; false when the try cannot be cut (then endHead is not called).
func (w *tryWatch) beginHead(c *h1Conn) bool {
	if w == nil {
		return false
	}
	o := w.ejectFrom.Load()
	if o == nil {
		return false
	}
	w.head.Store(c)
	if o.takenOut() {
		w.cut() // taken out since it was picked
	}
	return true
}

// endHead ends the wait: true when the try was cut (c's deadline is
// poisoned).
func (w *tryWatch) endHead() bool { return w.head.Swap(nil) == nil }

// beginHeadCancel is beginHead for a try through http.Transport.
func (w *tryWatch) beginHeadCancel(f *func(error)) bool {
	if w == nil {
		return false
	}
	o := w.ejectFrom.Load()
	if o == nil {
		return false
	}
	w.headCancel.Store(f)
	if o.takenOut() {
		w.cut()
	}
	return true
}

// endHeadCancel ends the wait: true when the try was cut (its context was
// cancelled with errEjected).
func (w *tryWatch) endHeadCancel() bool { return w.headCancel.Swap(nil) == nil }
