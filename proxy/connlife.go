package proxy

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// DefaultKeepaliveTime is keepalive_time unset: a client connection serves
// requests for at most an hour, as nginx's keepalive_time.
const DefaultKeepaliveTime = time.Hour

// connLife is how long (keepalive_time) and for how many requests
// (keepalive_requests) one client connection is kept; 0 is no limit. The
// answer to the request that reaches a limit closes the connection: over
// HTTP/1 with Connection: close, over HTTP/2 with a GOAWAY that lets the
// streams in flight finish. Nothing is cut off; the client opens a new
// connection for its next request, which a load balancer in front may
// send to another proxy (so new proxies of a scaled-out fleet get their
// share of long-lived clients, and a drained one loses its clients).
type connLife struct {
	maxAge  time.Duration
	maxReqs int64
}

// spent reports whether a connection made at born that is serving its
// n-th request (from 1) at now should close after this answer.
func (l connLife) spent(born time.Time, n int64, now time.Time) bool {
	return (l.maxReqs > 0 && n >= l.maxReqs) || (l.maxAge > 0 && now.Sub(born) >= l.maxAge)
}

// connUse is one net/http-served client connection's age and request
// count, reachable from its requests' contexts (connUseContext).
type connUse struct {
	born time.Time
	n    atomic.Int64
}

type connUseKey struct{}

// connUseContext adds a connUse to a net/http connection's context.
func connUseContext(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, connUseKey{}, &connUse{born: time.Now()})
}

// limitConnLife marks the answer of a request on a spent connection
// (keepalive_time, keepalive_requests) Connection: close, which net/http
// turns into a close after the answer over HTTP/1 and a graceful GOAWAY
// over HTTP/2. Requests of connections without a connUse (none made by
// connUseContext) are not limited.
func (p *Proxy) limitConnLife(w http.ResponseWriter, r *http.Request) {
	u, ok := r.Context().Value(connUseKey{}).(*connUse)
	if !ok {
		return
	}
	n := u.n.Add(1)
	if p.state.Load().life.spent(u.born, n, time.Now()) {
		w.Header().Set("Connection", "close")
	}
}
