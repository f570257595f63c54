// Package proxy is vigil's health-aware reverse proxy. It routes requests by
// Host and path prefix to pools of origins, picks an origin with a Balancer,
// and keeps users away from origins that canary verdicts (a reporting.Source)
// or its own live traffic (the passive detector) show broken. Failover never
// replays a request that is not replay-safe, and when nothing is available it
// tries the unavailable origins as a last resort instead of refusing.
//
// Wiring: New builds a Proxy from a validated Config; Handler is the data
// plane, AdminHandler the admin API for the agent listener, Run serves the
// configured listeners and runs the verdict poller, the passive evaluator and
// the signal publisher until its context ends; Reload swaps the
// configuration keeping origin state.
package proxy

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/units"
)

// Option configures New.
type Option func(*options)

type options struct {
	reg      prometheus.Registerer
	signals  reporting.SignalSink
	stateDir string
}

// WithRegistry registers the proxy's metrics on reg. Default: a private
// registry nobody scrapes.
func WithRegistry(reg prometheus.Registerer) Option { return func(o *options) { o.reg = reg } }

// WithSignalSink publishes one reporting.Signal per origin every
// Config.SignalWindow to sink (from Run's publisher goroutine, never from the
// request path). Default: signals are not published.
func WithSignalSink(sink reporting.SignalSink) Option {
	return func(o *options) { o.signals = sink }
}

// WithStateDir keeps the proxy's drains in dir/proxy-drains.json (mode
// 0600, replaced atomically on every change) and restores them in New, so
// an origin drained for maintenance stays drained across a restart or a
// crash. vigil passes agent.data_dir. Default: drains live in memory only.
func WithStateDir(dir string) Option { return func(o *options) { o.stateDir = dir } }

// Proxy is a running proxy configuration. Its methods are safe for
// concurrent use.
type Proxy struct {
	src     reporting.Source
	log     *slog.Logger
	m       *metrics
	signals reporting.SignalSink

	state atomic.Pointer[runtimeState]
	mu    sync.Mutex // serialises Reload, Drain and Undrain

	authFail units.AuthFailures // refused admin writes, for the log
	cuts     *clientCuts        // client connections ended with no request head (fast engine)
	rids     *requestIDs        // request IDs (Config.RequestID)
	viaName  string             // the Via name when Config.Via is empty (defaultVia)
	loops    loopLog            // the request-loop warning's rate limit

	addrMu sync.Mutex
	addrs  []net.Addr

	tunnels tunnelSet              // WebSocket tunnels, closed at the end of the shutdown grace
	running atomic.Pointer[Config] // the config Run started the listeners with
	tlsPort atomic.Pointer[string] // the TLS listener's port once listening (redirect_https)
	// tlsCerts are the TLS listener's certificates once listening
	// (redirect_https redirects a "*" pool's hosts only when one covers it).
	tlsCerts atomic.Pointer[certStore]
	// certWake wakes watchCertExpiry when a reload serves other files.
	certWake chan struct{}
	alog     atomic.Pointer[accessLog] // access_log, nil when off
	// feeds are the verdict sources (one per member of a Sources), each
	// with its last verdicts and read health, kept by the poller.
	feeds   []*verdictFeed
	applyMu sync.Mutex // serialises applyFeeds
	// vfresh is, per pool name, the newest verdict counted for the pool's
	// origins and whether it is older than max_age (freshCheck; applyMu).
	vfresh map[string]*poolVerdictAge
	// vseen is, per verdict key, the newest verdict seen and when (on this
	// proxy's clock) it was first seen: verdicts are aged from there, so a
	// canary's clock skew does not make them stale or expired (applyFeeds).
	vseen map[string]*keySeen
	// quorumJudged: applyFeeds ran once with every source read (under
	// applyMu).
	quorumJudged bool

	stateDir string     // WithStateDir; "" keeps drains in memory only
	drainMu  sync.Mutex // serialises saving the drains file
	drainsAt []byte     // what the drains file holds

	ctw clientTLSWatch // client_ca_file and client_crl_file rewritten in place
}

// runtimeState is one configuration generation.
type runtimeState struct {
	cfg    Config
	routes []route
	pools  []*pool
	life   connLife // keepalive_time, keepalive_requests
	// explicit is true when a pool names hosts (not only "*").
	explicit bool
	via      *viaNames // nil with via: off
}

type route struct {
	host   hostPattern
	prefix string
	pool   *pool
}

// New validates cfg (ValidateAndSetDefaults) and builds the proxy. src may be
// nil: no verdicts, passive detection only. log may be nil (slog.Default).
func New(cfg Config, src reporting.Source, log *slog.Logger, opts ...Option) (*Proxy, error) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	if log == nil {
		log = slog.Default()
	}
	if o.reg == nil {
		o.reg = prometheus.NewRegistry()
	}
	m, err := newMetrics(o.reg)
	if err != nil {
		return nil, fmt.Errorf("proxy: metrics: %w", err)
	}
	p := &Proxy{src: src, log: log, m: m, signals: o.signals, feeds: newVerdictFeeds(src, m), stateDir: o.stateDir, rids: newRequestIDs(), viaName: defaultVia(),
		certWake: make(chan struct{}, 1)}
	p.ctw.every = clientTLSPollEvery
	if err := o.reg.Register(certExpiryCollector{p}); err != nil {
		return nil, fmt.Errorf("proxy: metrics: %w", err)
	}
	if err := o.reg.Register(drainedCollector{p}); err != nil {
		return nil, fmt.Errorf("proxy: metrics: %w", err)
	}
	if p.cuts, err = newClientCuts(o.reg, log); err != nil {
		return nil, fmt.Errorf("proxy: metrics: %w", err)
	}
	st, err := p.build(cfg, nil)
	if err != nil {
		return nil, err
	}
	if err := p.openAccessLog(st.cfg); err != nil {
		return nil, err
	}
	p.state.Store(st)
	p.restoreDrains()
	st.cfg.clientCRL.warnStale(log, time.Now())
	st.cfg.clientCRL.setMetric(p.m, st.cfg.ClientCRLFile)
	return p, nil
}

// openAccessLog opens access_log anew (a reload reopens it, so a rotated
// file is let go) and closes the previous one once requests that loaded it
// wrote their line.
func (p *Proxy) openAccessLog(cfg Config) error {
	var al *accessLog
	if cfg.AccessLog != "" {
		var err error
		if al, err = openAccessLog(cfg.AccessLog, cfg.AccessLogQuery, p.log); err != nil {
			return fmt.Errorf("proxy.access_log: %w", err)
		}
	}
	if old := p.alog.Swap(al); old != nil {
		// Requests that began before the swap write their line to its
		// successor (nil: the log was turned off) once it is closed.
		old.next.Store(al)
		time.AfterFunc(2*time.Second, old.close)
	}
	return nil
}

// closeAccessLog flushes and closes the access log (the proxy stops).
func (p *Proxy) closeAccessLog() {
	if al := p.alog.Swap(nil); al != nil {
		al.close()
	}
}

// Reload swaps in cfg. Origin state (drain, verdict and passive flags,
// ejection counts, observations, the count of requests in flight and the
// keep-alive connections) is kept for every origin whose pool name and URL
// are unchanged; a pool keeps its retry budget, and its connections while
// connect_timeout and tls are unchanged. Only the connections of removed or
// changed origins are closed. Listen addresses, TLS files and server timeouts take
// effect only after a restart; everything else applies to new requests at
// once, while requests in flight finish on the old configuration.
func (p *Proxy) Reload(cfg Config) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.state.Load()
	st, err := p.build(cfg, old)
	if err != nil {
		return err
	}
	var certs *certStore
	if cur := p.tlsCerts.Load(); cur != nil && (old.cfg.CertFile != st.cfg.CertFile || old.cfg.KeyFile != st.cfg.KeyFile ||
		!slices.Equal(old.cfg.Certs, st.cfg.Certs)) {
		// The TLS listener runs: its new certificates serve new handshakes
		// (validation loaded them already; a file changed since is caught
		// here and the reload refused).
		if certs, err = newCertStore(CertPair{st.cfg.CertFile, st.cfg.KeyFile}, st.cfg.Certs, p.log); err != nil {
			return units.Prefix("proxy", err)
		}
	}
	if err := p.openAccessLog(st.cfg); err != nil {
		return err
	}
	p.state.Store(st)
	p.ctw.setErr(nil) // the files loaded; the watch compares with them
	st.cfg.clientCRL.warnStale(p.log, time.Now())
	st.cfg.clientCRL.setMetric(p.m, st.cfg.ClientCRLFile)
	if certs != nil {
		p.tlsCerts.Store(certs)
		p.log.Info("proxy: tls: certificates from the reloaded config serve new connections", "cert_file", st.cfg.CertFile, "certs", len(st.cfg.Certs))
		select {
		case p.certWake <- struct{}{}:
		default:
		}
	}
	kept := map[*originMetrics]bool{}
	keptConns := map[*h1Pool]bool{}
	keptOrigins := map[*atomic.Int64]bool{}
	transports := map[*originTransport]bool{}
	for _, pl := range st.pools {
		transports[pl.transport] = true
		for _, o := range pl.origins {
			kept[o.m] = true
			keptConns[o.h1] = true
			keptOrigins[o.inflight] = true
		}
	}
	links := map[*originLink]bool{}
	for _, pl := range st.pools {
		for _, o := range pl.origins {
			links[o.link] = true
		}
	}
	for _, pl := range old.pools {
		for _, o := range pl.origins {
			if !kept[o.m] {
				p.m.forget(pl.name, o.name)
			}
			if !links[o.link] {
				o.link.gone.Store(true) // a probe in flight for it is dropped
			}
		}
		if !transports[pl.transport] {
			pl.closeIdle() // connect_timeout or tls changed, or the pool is gone
			continue
		}
		// The transport is kept: close only the connections of origins
		// removed or changed. The transport cannot close one host's idle
		// connections, so losing an origin costs the pool's others theirs.
		gone := false
		for _, o := range pl.origins {
			if !keptOrigins[o.inflight] {
				gone = true
			}
			if o.h1 != nil && !keptConns[o.h1] {
				o.h1.closeIdle(true)
			}
		}
		if gone {
			pl.transport.CloseIdleConnections()
		}
	}
	pools := map[string]bool{}
	for _, pl := range st.pools {
		pools[pl.name] = true
	}
	for _, pl := range old.pools {
		if !pools[pl.name] {
			p.m.forgetPool(pl.name) // no series of a removed pool stays frozen
		}
	}
	p.log.Info("proxy: configuration reloaded", "pools", len(st.pools))
	p.saveDrains() // a removed origin's drain leaves the file
	base := old.cfg
	if r := p.running.Load(); r != nil {
		base = *r // what the listeners started with, not the last reload
	}
	if keys := restartOnly(base, st.cfg); len(keys) > 0 {
		p.log.Warn("proxy: changed keys take effect on restart; the running listeners keep the old values",
			"keys", strings.Join(keys, ", "))
	}
	return nil
}

// restartOnly lists the keys that differ between a and b and are applied
// only when the listeners start.
func restartOnly(a, b Config) []string {
	var keys []string
	for _, k := range []struct {
		name    string
		changed bool
	}{
		{"proxy.listen", a.Listen != b.Listen},
		{"proxy.tls_listen", a.TLSListen != b.TLSListen},
		{"proxy.engine", a.Engine != b.Engine},
		{"proxy.h2c", a.H2C != b.H2C},
		{"proxy.max_header_bytes", a.MaxHeaderBytes != b.MaxHeaderBytes},
		{"proxy.read_header_timeout", a.ReadHeaderTimeout != b.ReadHeaderTimeout},
		{"proxy.idle_timeout", a.IdleTimeout != b.IdleTimeout},
		{"proxy.read_timeout", a.ReadTimeout != b.ReadTimeout},
		{"proxy.write_timeout", a.WriteTimeout != b.WriteTimeout},
		{"proxy.send_timeout", a.SendTimeout != b.SendTimeout},
		{"proxy.max_client_conns", a.MaxClientConns != b.MaxClientConns},
		{"proxy.max_conns_per_client", a.MaxConnsPerClient != b.MaxConnsPerClient},
		{"proxy.proxy_protocol", a.ProxyProtocol != b.ProxyProtocol},
		{"proxy.proxy_protocol_from", !slices.Equal(a.ProxyProtocolFrom, b.ProxyProtocolFrom)},
	} {
		if k.changed {
			keys = append(keys, k.name)
		}
	}
	return keys
}

func (p *Proxy) build(cfg Config, old *runtimeState) (*runtimeState, error) {
	// Own copies: validation compiles into the pool and origin structs, and
	// the caller's slices must not be shared with the running generation.
	cfg.Pools = append([]PoolConfig(nil), cfg.Pools...)
	for i := range cfg.Pools {
		pc := &cfg.Pools[i]
		pc.Origins = append([]OriginConfig(nil), pc.Origins...)
		pc.Hosts = append([]string(nil), pc.Hosts...)
		pc.hosts = nil
	}
	if err := cfg.ValidateAndSetDefaults(); err != nil {
		return nil, units.Prefix("proxy", err)
	}
	prev := map[string]*origin{}
	prevPools := map[string]*pool{}
	// Drains are by origin name (the admin API drains a name in every
	// pool): an origin whose pool was renamed or whose URL changed stays
	// drained under its name.
	drainedByName := map[string]*origin{}
	// A passive ejection of an origin whose pool was renamed (its pool is
	// gone, its URL in a pool of another name) goes on in the new pool: it
	// would otherwise return untested, and a POST meet its 5xx.
	ejectedByURL := map[string]*origin{}
	newNames := map[string]bool{}
	for i := range cfg.Pools {
		newNames[cfg.Pools[i].Name] = true
	}
	if old != nil {
		for _, pl := range old.pools {
			prevPools[pl.name] = pl
			for _, o := range pl.origins {
				prev[pl.name+"\x00"+o.url.String()] = o
				if o.flags.Load()&flagDrained != 0 && drainedByName[o.name] == nil {
					drainedByName[o.name] = o
				}
				if !newNames[pl.name] && o.has(flagPassive) && ejectedByURL[o.url.String()] == nil {
					ejectedByURL[o.url.String()] = o
				}
			}
		}
	}
	kept := map[string]bool{} // names of drained origins still in the config
	st := &runtimeState{cfg: cfg, life: connLife{maxAge: cfg.KeepaliveTime, maxReqs: int64(cfg.KeepaliveRequests)}}
	viaName := cfg.Via
	if viaName == "" {
		viaName = p.viaName
	}
	st.via = newViaNames(viaName)
	for i := range cfg.Pools {
		pc := &cfg.Pools[i]
		pl := newPool(pc, p.log, p.m)
		pl.tunnels = &p.tunnels
		pl.rid = cfg.ridKey
		pl.ridAnswers = cfg.ridAnswers
		pl.via = st.via
		sameDial := false
		if pp := prevPools[pc.Name]; pp != nil {
			sameDial = pl.inheritPool(pp)
		}
		for j := range pc.Origins {
			oc := &pc.Origins[j]
			o := &origin{idx: j, name: oc.Name(), target: oc.Target, url: oc.u, weight: oc.Weight, maxConns: int64(oc.MaxConns)}
			if po := prev[pc.Name+"\x00"+oc.u.String()]; po != nil {
				o.inherit(po)
				if sameDial {
					o.h1 = po.h1 // same address, same dial settings: keep its connections
				}
			} else if po := ejectedByURL[oc.u.String()]; po != nil {
				o.inheritPassive(po)
				p.log.Info("proxy: passive ejection kept across the reload (the origin's pool was renamed)",
					"pool", pc.Name, "origin", o.name, "url", oc.u.String())
			} else if old != nil && pc.SlowStart > 0 {
				// Added by this reload (or given a new URL): a cold origin
				// (a new cache node) ramps up like a returning one, as
				// Envoy's slow start does for new hosts.
				o.returnedAt.Store(time.Now().UnixNano())
			}
			if po := drainedByName[o.name]; po != nil {
				kept[o.name] = true
				if o.flags.Load()&flagDrained == 0 {
					po.mu.Lock()
					why, since, by := po.why[bit(flagDrained)], po.since[bit(flagDrained)], po.drainedBy
					po.mu.Unlock()
					o.set(flagDrained, why, since)
					o.mu.Lock()
					o.drainedBy = by
					o.mu.Unlock()
					p.log.Info("proxy: drain kept across the reload (the origin's pool or URL changed)",
						"pool", pc.Name, "origin", o.name, "url", oc.u.String(), "was", po.url.String(), "why", why)
				}
			}
			if o.inflight == nil {
				o.inflight = new(atomic.Int64)
			}
			if o.link == nil {
				o.link = &originLink{}
			}
			if o.h1 == nil {
				o.h1 = pl.h1PoolFor(oc.u)
			}
			if o.h1 != nil {
				f := func() { pl.unsolicited(o) }
				o.h1.extra.Store(&f)
				o.h1.setIdleTimeout(pc.OriginIdleTimeout)
			}
			if o.passive == nil || o.passive.width != max(int64(pc.Passive.Window)/10, 1) {
				o.passive = newDetector(pc.Passive.Window)
			}
			if o.stats == nil {
				o.stats = &signalStats{}
			}
			if o.m == nil || o.m.origin != o.name {
				o.m = p.m.forOrigin(pc.Name, o.name)
			}
			o.m.available.Set(b2f(o.Available()))
			pl.origins = append(pl.origins, o)
			pl.all |= 1 << j
			o.link.cur.Store(o)
			o.link.pool.Store(pl)
		}
		pl.bal = newBalancer(pc, pl.origins)
		if pp := prevPools[pc.Name]; pp != nil {
			inheritRoundRobin(pl.bal, pp.bal, pl.origins, pp.origins)
		}
		st.pools = append(st.pools, pl)
		for _, h := range pc.hosts {
			st.routes = append(st.routes, route{host: h, prefix: pc.PathPrefix, pool: pl})
			if !h.any {
				st.explicit = true
			}
		}
	}
	for name, po := range drainedByName {
		if !kept[name] {
			po.mu.Lock()
			why := po.why[bit(flagDrained)]
			po.mu.Unlock()
			p.log.Warn("proxy: dropped a drain: the origin is no longer in the config",
				"origin", name, "url", po.url.String(), "why", why)
		}
	}
	// Most specific host first, then longest path prefix.
	sort.SliceStable(st.routes, func(a, b int) bool {
		ra, rb := st.routes[a].host.rank(), st.routes[b].host.rank()
		if ra != rb {
			return ra > rb
		}
		return len(st.routes[a].prefix) > len(st.routes[b].prefix)
	})
	return st, nil
}

// inherit copies the state of the same origin from the previous generation.
func (o *origin) inherit(po *origin) {
	o.flags.Store(po.flags.Load())
	o.returnedAt.Store(po.returnedAt.Load())
	po.mu.Lock()
	o.why, o.since, o.ejections, o.ejectUntil, o.lastDecay = po.why, po.since, po.ejections, po.ejectUntil, po.lastDecay
	o.ejectDetail, o.drainedBy = po.ejectDetail, po.drainedBy
	o.probeFails, o.probeLogged = po.probeFails, po.probeLogged
	po.mu.Unlock()
	o.passive, o.stats, o.m = po.passive, po.stats, po.m
	o.inflight = po.inflight
	o.link = po.link
}

// inheritPassive carries po's passive ejection (flag, reason, since, count,
// end, detail and return-probe state) over to o, the same origin in a pool
// of another name.
func (o *origin) inheritPassive(po *origin) {
	b := bit(flagPassive)
	po.mu.Lock()
	why, since := po.why[b], po.since[b]
	ejections, until, decay, detail := po.ejections, po.ejectUntil, po.lastDecay, po.ejectDetail
	fails, logged := po.probeFails, po.probeLogged
	po.mu.Unlock()
	o.set(flagPassive, why, since)
	o.mu.Lock()
	o.ejections, o.ejectUntil, o.lastDecay, o.ejectDetail = ejections, until, decay, detail
	o.probeFails, o.probeLogged = fails, logged
	o.mu.Unlock()
	o.link = po.link
}

// inheritPool takes over what a pool of the same name in the previous
// generation built up: its retry budget (the same counts; a changed
// retry_budget applies to them), and, when connect_timeout and the tls
// settings (including the contents of their files) are unchanged, its
// transport with the keep-alive connections to the origins. It reports
// whether the transport (and so the dial function) was taken over.
func (pl *pool) inheritPool(pp *pool) (sameDial bool) {
	// An open last-resort incident goes on (one warning, one "over" line),
	// also for requests still finishing on the previous generation.
	pl.resort = pp.resort
	if pp.budget.ratio == pl.budget.ratio {
		pl.budget = pp.budget
	} else {
		pl.budget.copyCounts(pp.budget)
	}
	if pp.cfg.ConnectTimeout != pl.cfg.ConnectTimeout || pp.cfg.OriginIdleTimeout != pl.cfg.OriginIdleTimeout ||
		pp.cfg.OriginProtocol != pl.cfg.OriginProtocol ||
		!sameOriginTLS(&pp.cfg.TLS, &pl.cfg.TLS) {
		return false
	}
	pl.transport.CloseIdleConnections() // the new one, unused
	pl.transport, pl.dial = pp.transport, pp.dial
	return true
}

// copyCounts starts b with the requests and retries counted by from.
func (b *retryBudget) copyCounts(from *retryBudget) {
	for i := range b.slots {
		s, f := &b.slots[i], &from.slots[i]
		s.epoch.Store(f.epoch.Load())
		s.req.Store(f.req.Load())
		s.retries.Store(f.retries.Load())
	}
}

// sameOriginTLS reports whether two pools' origin TLS settings make the
// same client connections: the same keys and the same loaded CA pool and
// client certificates (a file rewritten in place counts as a change).
func sameOriginTLS(a, b *OriginTLSConfig) bool {
	if a.CAFile != b.CAFile || a.ServerName != b.ServerName || a.hostName != b.hostName || a.InsecureSkipVerify != b.InsecureSkipVerify ||
		a.minVer != b.minVer || a.CertFile != b.CertFile || a.KeyFile != b.KeyFile || len(a.certs) != len(b.certs) {
		return false
	}
	if (a.roots == nil) != (b.roots == nil) || (a.roots != nil && !a.roots.Equal(b.roots)) {
		return false
	}
	for i := range a.certs {
		ca, cb := a.certs[i].Certificate, b.certs[i].Certificate
		if len(ca) != len(cb) {
			return false
		}
		for k := range ca {
			if !bytes.Equal(ca[k], cb[k]) {
				return false
			}
		}
	}
	return true
}

// route finds the pool for host (lower-case, no port) and path.
func (st *runtimeState) route(host, path string) *pool {
	for i := range st.routes {
		r := &st.routes[i]
		if r.host.match(host) && prefixMatch(path, r.prefix) {
			return r.pool
		}
	}
	return nil
}

// prefixMatch matches whole path segments: "/api" matches "/api" and
// "/api/x", not "/apix"; a prefix ending in "/" matches everything below it.
func prefixMatch(path, prefix string) bool {
	if !strings.HasPrefix(path, prefix) {
		return false
	}
	return len(path) == len(prefix) || strings.HasSuffix(prefix, "/") || path[len(prefix)] == '/'
}

// validHost reports whether h, a Host header or :authority, is a host name
// (letters, digits, '-', '_' and dots between labels, one trailing dot
// allowed), an IPv4 address or a bracketed IPv6 literal, with an optional
// numeric port. It is stricter than net/http's check, which lets through
// the URI's sub-delimiters: "evil.com#.example.com" or "evil.com?.example.com"
// would match a "*.example.com" pool, and an origin building links from
// Host would send its users to evil.com. The empty Host (HTTP/1.0) passes.
func validHost(h string) bool {
	name := h
	if len(h) > 0 && h[0] == '[' {
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return false
		}
		for i := 1; i < end; i++ {
			c := h[i]
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == ':' || c == '.') {
				return false
			}
		}
		if end < 3 {
			return false
		}
		name = ""
		h = h[end+1:]
		if h == "" {
			return true
		}
		if h[0] != ':' {
			return false
		}
	} else if i := strings.IndexByte(h, ':'); i >= 0 {
		name = h[:i]
		h = h[i:]
	} else {
		h = ""
	}
	if h != "" { // ":port"
		if len(h) > 6 {
			return false
		}
		for i := 1; i < len(h); i++ {
			if c := h[i]; c < '0' || c > '9' {
				return false
			}
		}
	}
	prev := byte('.')
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
		case c == '.':
			if prev == '.' { // a leading dot or an empty label
				return false
			}
		default:
			return false
		}
		prev = c
	}
	return true
}

// hostOf returns the request host lower-cased without port.
func hostOf(h string) string {
	if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.Contains(h[i:], "]") {
		h = h[:i]
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	h = strings.TrimSuffix(h, ".") // the fully qualified form names the same host
	for i := 0; i < len(h); i++ {
		if c := h[i]; c >= 'A' && c <= 'Z' {
			return strings.ToLower(h)
		}
	}
	return h
}

// clientCertConfig returns the listener's GetConfigForClient: with
// client_ca_file set in the running configuration (reloads included), a copy
// of base that asks for a client certificate and verifies it against those
// CAs, and against client_crl_file when set; base itself otherwise.
func (p *Proxy) clientCertConfig(base *tls.Config) func(*tls.ClientHelloInfo) (*tls.Config, error) {
	return func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		cfg := &p.state.Load().cfg
		minVer := minTLSVersion(cfg.TLSMinVersion)
		if cfg.clientCAs == nil && minVer == base.MinVersion {
			return nil, nil
		}
		c := base.Clone()
		c.MinVersion = minVer // tls_min_version as reloaded
		if cfg.clientCAs == nil {
			return c, nil
		}
		c.ClientCAs = cfg.clientCAs
		c.ClientAuth = tls.RequireAndVerifyClientCert
		if cfg.ClientAuth == ClientAuthOptional {
			c.ClientAuth = tls.VerifyClientCertIfGiven
		}
		if cfg.clientCRL != nil {
			remote := ""
			if hello.Conn != nil {
				remote = hello.Conn.RemoteAddr().String()
			}
			c.VerifyConnection = cfg.clientCRL.verifyConnection(p.log, remote)
		}
		return c, nil
	}
}

// minTLSVersion is tls_min_version's TLS version.
func minTLSVersion(v string) uint16 {
	if v == "1.3" {
		return tls.VersionTLS13
	}
	return tls.VersionTLS12
}

// shutdownGrace is how long in-flight requests and WebSocket tunnels get to
// end when the proxy stops.
var shutdownGrace = 10 * time.Second

// Addrs returns the addresses Run listens on (empty before it listens).
func (p *Proxy) Addrs() []net.Addr {
	p.addrMu.Lock()
	defer p.addrMu.Unlock()
	return append([]net.Addr(nil), p.addrs...)
}

// Run listens on Config.Listen (and TLSListen), and runs the verdict poller,
// the passive evaluator and the signal publisher until ctx is done; then it
// shuts the listeners down gracefully (in-flight requests get 10s) and
// returns nil, or the first listener error.
func (p *Proxy) Run(ctx context.Context) error {
	cfg := p.state.Load().cfg
	ctx, cancel := context.WithCancel(ctx)
	p.running.Store(&cfg)
	p.tunnels.open()
	defer cancel()
	var servers []interface{ Shutdown(context.Context) error }
	errc := make(chan error, 3) // one per server
	limit := newConnLimit(cfg.MaxClientConns, p.m, p.log)
	limit.perClient(cfg.MaxConnsPerClient, slices.Concat(cfg.trusted, cfg.ppFrom))
	ppLog := &ppFailLog{m: p.m, log: p.log}
	serve := func(addr string, tlsFiles bool) error {
		tln, err := net.Listen("tcp", addr)
		if err != nil {
			key := map[bool]string{false: "proxy.listen", true: "proxy.tls_listen"}[tlsFiles]
			if errors.Is(err, syscall.EADDRINUSE) {
				return fmt.Errorf("%s: %s already in use", key, addr)
			}
			return fmt.Errorf("%s: %w", key, err)
		}
		ln := limit.listener(tln)
		if cfg.ProxyProtocol {
			// The header comes first, before TLS.
			ln = newPPListener(ln, cfg.ppFrom, cfg.ReadHeaderTimeout, ppLog.fail)
		}
		var certs *certStore
		if tlsFiles {
			if certs, err = newCertStore(CertPair{cfg.CertFile, cfg.KeyFile}, cfg.Certs, p.log); err != nil {
				ln.Close()
				return err
			}
		}
		p.addrMu.Lock()
		p.addrs = append(p.addrs, ln.Addr())
		p.addrMu.Unlock()
		if tlsFiles {
			_, port, _ := net.SplitHostPort(ln.Addr().String())
			p.tlsPort.Store(&port)
			p.tlsCerts.Store(certs)
		}
		// run serves sln with srv in its own goroutine; its Shutdown ends
		// it with the others.
		run := func(srv interface {
			Serve(net.Listener) error
			Shutdown(context.Context) error
		}, sln net.Listener) {
			servers = append(servers, srv)
			go func() {
				if err := srv.Serve(sln); err != nil && !errors.Is(err, http.ErrServerClosed) {
					errc <- err
				}
			}()
		}
		fast := cfg.Engine == EngineFast
		newFast := func() *engine {
			eng := newEngine(p.Handler(), cfg, p.log)
			eng.onRefuse = p.engineRefused
			eng.onCut = p.cuts.note
			eng.onCutHead = p.engineCutHead
			eng.life = func() connLife { return p.state.Load().life }
			return eng
		}
		if !tlsFiles && fast {
			eng := newFast()
			if cfg.H2C {
				// Connections that open with the HTTP/2 preface go to
				// net/http's HTTP/2 server.
				q := newConnQueue(ln.Addr())
				h2 := p.server(cfg)
				h2.Protocols = new(http.Protocols)
				h2.Protocols.SetUnencryptedHTTP2(true)
				run(h2, q)
				eng.h2c = q.push
			}
			run(eng, ln)
			p.log.Info("proxy: listening", "addr", ln.Addr().String(), "tls", false, "engine", cfg.Engine)
			return nil
		}
		srv := p.server(cfg)
		if !tlsFiles {
			if cfg.H2C {
				srv.Protocols = new(http.Protocols)
				srv.Protocols.SetHTTP1(true)
				srv.Protocols.SetUnencryptedHTTP2(true)
			}
			// net/http's own refusals are counted on the connections it
			// writes to (refused.go).
			run(srv, &refusalListener{Listener: ln, onRefuse: p.engineRefused, sendTimeout: cfg.SendTimeout})
			p.log.Info("proxy: listening", "addr", ln.Addr().String(), "tls", false, "engine", cfg.Engine)
			return nil
		}
		// HTTP/2 and HTTP/1.1 by ALPN. srv.TLSConfig naming "h2" makes Serve
		// set up net/http's HTTP/2 server; the listener gets its own copy
		// (Serve adjusts srv.TLSConfig concurrently). HTTP/2 connections go
		// to net/http, HTTP/1 ones to the fast engine (engine fast, with the
		// plain listener's framing rules) or to net/http, which then counts
		// its refusals on the decrypted side.
		minVer := minTLSVersion(cfg.TLSMinVersion)
		// Certificates and the minimum version are read per handshake, so
		// a reload that changes cert_file, certs or tls_min_version applies
		// to new connections without a restart.
		srv.TLSConfig = &tls.Config{GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) {
			return p.tlsCerts.Load().GetCertificate(h)
		}, MinVersion: minVer, CipherSuites: listenerSuites, NextProtos: []string{"h2", "http/1.1"}}
		srv.TLSConfig.GetConfigForClient = p.clientCertConfig(srv.TLSConfig.Clone())
		std, h1 := newTLSListener(ln, srv.TLSConfig.Clone(), handshakeTimeout(cfg), cfg.SendTimeout, p.engineRefused,
			func(reason string) { p.m.tlsErrors.WithLabelValues(reason).Inc() }, p.log, fast)
		run(srv, std)
		if h1 != nil {
			run(newFast(), h1)
		}
		p.log.Info("proxy: listening", "addr", ln.Addr().String(), "tls", true, "engine", cfg.Engine)
		return nil
	}
	shutdown := func() {
		sctx, c := context.WithTimeout(context.Background(), shutdownGrace)
		defer c()
		// All at once: the TLS listener's engine and HTTP/2 server share
		// its TCP listener, and each gets the whole grace period.
		var swg sync.WaitGroup
		for _, s := range servers {
			swg.Add(1)
			go func() { defer swg.Done(); _ = s.Shutdown(sctx) }()
		}
		swg.Wait()
		// WebSocket tunnels get what is left of the grace period.
		for p.tunnels.len() > 0 && sctx.Err() == nil {
			select {
			case <-sctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
		if n := p.tunnels.closeAll(); n > 0 {
			p.log.Info("proxy: closed WebSocket tunnels still open at the end of the shutdown grace", "tunnels", n)
		}
		p.closeAccessLog()
	}
	if err := serve(cfg.Listen, false); err != nil {
		return err
	}
	if cfg.TLSListen != "" {
		if err := serve(cfg.TLSListen, true); err != nil {
			shutdown()
			return err
		}
	}
	// Once listening (a listener that cannot open is the error to tell):
	// an open-file limit too low for max_client_conns (fdlimit.go).
	if w := fdLimitWarning(cfg.MaxClientConns, openFileLimit()); w != "" {
		p.log.Warn("proxy." + w)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); p.background(ctx) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	cancel()
	shutdown()
	wg.Wait()
	for _, pl := range p.state.Load().pools {
		pl.closeIdle()
	}
	return err
}

// server builds the data-plane http.Server with the configured limits. Its
// listener's connections, when wrapped by refusalListener or tlsListener,
// count net/http's own refusals. "OPTIONS *" is answered by the proxy's
// handler, as on the fast engine, not by net/http's.
func (p *Proxy) server(cfg Config) *http.Server {
	h := p.Handler()
	return &http.Server{
		Handler: markAnswering(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p.limitConnLife(w, r)
			h.ServeHTTP(w, r)
		})),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return refusalConnContext(connUseContext(ctx, c), c)
		},
		ConnState: func(c net.Conn, s http.ConnState) {
			refusalConnState(c, s)
			p.stdConnState(c, s, cfg.ReadHeaderTimeout)
		},
		DisableGeneralOptionsHandler: true,
		MaxHeaderBytes:               int(cfg.MaxHeaderBytes),
		ReadHeaderTimeout:            cfg.ReadHeaderTimeout,
		ReadTimeout:                  cfg.ReadTimeout,
		WriteTimeout:                 cfg.WriteTimeout,
		IdleTimeout:                  cfg.IdleTimeout,
		ErrorLog:                     slog.NewLogLogger(p.log.Handler(), slog.LevelDebug),
		HTTP2: &http.HTTP2Config{CountError: func(typ string) {
			p.m.h2Errors.WithLabelValues(typ).Inc()
		}},
	}
}

// background runs the verdict poller, the passive evaluator, the signal
// publisher and, with tls_listen, the client_ca_file/client_crl_file watch
// and the certificate expiry watch until ctx is done.
func (p *Proxy) background(ctx context.Context) {
	var wg sync.WaitGroup
	run := func(name string, f func(context.Context)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if !p.guard(name, func() { f(ctx) }) {
					return
				}
				select { // restarted after a panic, with a pause
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
		}()
	}
	if p.src != nil {
		run("verdict poller", p.pollVerdicts)
	}
	run("passive evaluator", p.evaluateLoop)
	if r := p.running.Load(); r != nil && r.TLSListen != "" && p.ctw.every > 0 {
		run("client_ca_file/client_crl_file watch", p.watchClientTLS)
	}
	if r := p.running.Load(); r != nil && r.TLSListen != "" {
		run("certificate expiry watch", p.watchCertExpiry)
	}
	if p.signals != nil {
		run("signal publisher", p.publishSignals)
	}
	wg.Wait()
}

// guard runs f, logging a panic with its stack; it reports whether f panicked.
func (p *Proxy) guard(name string, f func()) (panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			p.log.Error("proxy: panic", "in", name, "panic", r, "stack", string(debug.Stack()))
			panicked = true
		}
	}()
	f()
	return false
}

// evaluateLoop runs the passive window rules (and sends return probes due)
// every min(1s, window/10, return_probe_interval).
func (p *Proxy) evaluateLoop(ctx context.Context) {
	for {
		every := time.Second
		st := p.state.Load()
		for _, pl := range st.pools {
			every = min(every, max(pl.cfg.Passive.Window/10, 10*time.Millisecond))
			if pl.cfg.Passive.probing() {
				// The next return probe goes out at most a tick late.
				every = min(every, max(pl.cfg.Passive.ReturnProbeInterval, 10*time.Millisecond))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
		now := time.Now()
		for _, pl := range p.state.Load().pools {
			pl.evaluateCtx(ctx, now)
			pl.flushTryLog(now)
		}
	}
}

// publishSignals sends one Signal per origin every SignalWindow. Ejected is
// the passive detector's ejection alone (the canary's passive triggers run
// an origin's checks on it; an origin out by the canaries' own verdicts must
// not set them off); Out and OutBy say whether and why the origin was out of
// rotation at all (passive, verdicts, drain), for the Ejections panel.
func (p *Proxy) publishSignals(ctx context.Context) {
	last := time.Now()
	for {
		st := p.state.Load()
		select {
		case <-ctx.Done():
			return
		case <-time.After(st.cfg.SignalWindow):
		}
		now := time.Now()
		st = p.state.Load()
		var out []reporting.Signal
		for _, pl := range st.pools {
			for _, o := range pl.origins {
				req, s5, ce, to, p95 := o.stats.take()
				f := o.flags.Load()
				var why string
				if f&flagPassive != 0 {
					o.mu.Lock()
					why = o.why[bit(flagPassive)]
					o.mu.Unlock()
				}
				out = append(out, reporting.Signal{
					Pool: pl.name, Origin: o.name, Region: st.cfg.Region, Vantage: st.cfg.Vantage,
					At: now, Window: now.Sub(last), Requests: req, Status5xx: s5, ConnErrors: ce,
					Timeouts: to, P95: p95, Ejected: f&flagPassive != 0, Reason: why,
					Out: f != 0, OutBy: flagNames(f),
				})
			}
		}
		last = now
		pctx, c := context.WithTimeout(ctx, st.cfg.SignalWindow)
		if err := p.signals.PublishSignals(pctx, out); err != nil {
			p.log.Warn("proxy: publishing signals failed", "err", err)
		}
		c()
	}
}

// flagNames names the flags set in f as /api/v1/origins does, comma
// separated: "drained,verdict_down,passive_ejected"; "" for none.
func flagNames(f uint32) string {
	var out []string
	for _, x := range []struct {
		flag uint32
		name string
	}{{flagDrained, "drained"}, {flagVerdict, "verdict_down"}, {flagPassive, "passive_ejected"}} {
		if f&x.flag != 0 {
			out = append(out, x.name)
		}
	}
	return strings.Join(out, ",")
}
