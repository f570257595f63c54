package proxy

import (
	"errors"
	"sync/atomic"
	"time"
)

// The fast engine reads nothing from a client while its request is at an
// origin (net/http's server does, and cancels the request's context when it
// reads the end of the connection). So that a client that leaves while an
// origin is slow to answer does not keep that origin's connection and
// max_conns slot busy until try_timeout, each engine runs one watcher
// goroutine: every clientWatchInterval it peeks (one non-blocking
// recv(MSG_PEEK)) at the client socket of each connection whose request has
// waited at least that long, and aborts the try of a client that closed.
// The request then ends as a client-closed request (499, origin "none", no
// origin charged). The request path pays five atomic operations per try
// (publish, check, unpublish), no allocation and no timer.

// clientWatchInterval is how often waiting clients are checked, and how long
// a try waits before its client is first checked.
const clientWatchInterval = 500 * time.Millisecond

// errClientGone is the cancel cause of a try whose client went away.
var errClientGone = errors.New("client closed the connection")

// tryWatch is one connection's try in progress, as the watcher sees it. The
// try publishes what aborts it (its origin connection on the fast path, its
// context's cancel function through http.Transport) while it waits for the
// answer's head; the watcher takes it with a swap, so exactly one side acts
// on it: the try (which keeps its connection) or the watcher (which aborts).
type tryWatch struct {
	since  atomic.Int64 // when the wait began (unix ns); 0: no try waiting
	conn   atomic.Pointer[h1Conn]
	cancel atomic.Pointer[func(error)]
	gone   atomic.Bool // the watcher found the client gone

	// A replay-safe try at an origin that was available when picked
	// publishes that origin (ejectFrom) and, while it waits for the answer's
	// head, what cuts it (head on the fast path, headCancel through
	// http.Transport): when the origin is taken out meanwhile, the try is
	// cut and the request moves on (see ejectcut.go). Nothing is published
	// for the answer's body.
	ejectFrom  atomic.Pointer[origin]
	head       atomic.Pointer[h1Conn]
	headCancel atomic.Pointer[func(error)]
	// cutReg is the registry this try is in outside the fast engine (nil
	// on the fast engine, whose watcher finds the try among its conns).
	cutReg *cutRegistry
}

// beginConn publishes the fast path's origin connection; false when the
// client is already known to be gone (the try must not go on, and c must be
// closed: the watcher may have poisoned its deadline).
func (w *tryWatch) beginConn(c *h1Conn, now time.Time) bool {
	if w == nil {
		return true
	}
	w.conn.Store(c)
	w.since.Store(now.UnixNano())
	if w.gone.Load() {
		w.endConn()
		return false
	}
	return true
}

// endConn ends the wait on the fast path: false when the watcher took the
// connection (its deadline is poisoned: it must be closed, not reused).
func (w *tryWatch) endConn() bool {
	if w == nil {
		return true
	}
	w.since.Store(0)
	return w.conn.Swap(nil) != nil
}

// beginCancel publishes the cancel function of a try through http.Transport.
func (w *tryWatch) beginCancel(f *func(error), now time.Time) {
	if w == nil {
		return
	}
	w.cancel.Store(f)
	w.since.Store(now.UnixNano())
	if w.gone.Load() {
		if g := w.cancel.Swap(nil); g != nil {
			(*g)(errClientGone)
		}
	}
}

// endCancel ends the wait of a try through http.Transport.
func (w *tryWatch) endCancel() {
	if w == nil {
		return
	}
	w.since.Store(0)
	w.cancel.Store(nil)
}

// isGone reports whether the watcher found the client gone.
func (w *tryWatch) isGone() bool { return w != nil && w.gone.Load() }

// waitedSince reports whether a try has waited since before t.
func (w *tryWatch) waitedSince(t int64) bool {
	s := w.since.Load()
	return s != 0 && s <= t
}

// abort marks the client gone and aborts the try in progress, if any.
func (w *tryWatch) abort() {
	w.gone.Store(true)
	if c := w.conn.Swap(nil); c != nil {
		c.c.SetDeadline(aLongTimeAgo)
	}
	if f := w.cancel.Swap(nil); f != nil {
		(*f)(errClientGone)
	}
}

// watchClients runs until the engine shut down and its last connection
// ended: see clientWatchInterval.
func (e *engine) watchClients() {
	t := time.NewTicker(clientWatchInterval)
	defer t.Stop()
	watchers.add(e.kick)
	defer watchers.remove(e.kick)
	var waiting, cuts []*econn
	for {
		var now time.Time
		select {
		case now = <-t.C:
		case <-e.kick: // an origin was taken out: cut its tries now
			now = time.Now()
		}
		before := now.Add(-clientWatchInterval).UnixNano()
		waiting = waiting[:0]
		e.mu.Lock()
		if e.shutting.Load() && len(e.conns) == 0 {
			e.mu.Unlock()
			return
		}
		for c := range e.conns {
			if c.watch.waitedSince(before) {
				waiting = append(waiting, c)
			}
			if c.watch.cuttable() {
				cuts = append(cuts, c) // its origin was taken out (ejectcut.go)
			}
		}
		e.mu.Unlock()
		for i, c := range cuts {
			c.watch.cut()
			cuts[i] = nil
		}
		cuts = cuts[:0]
		for i, c := range waiting {
			if c.watch.waitedSince(before) && peerClosed(c.c) {
				c.watch.abort()
			}
			waiting[i] = nil
		}
	}
}
