package proxy

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Retry causes (the `cause` label of vigil_proxy_retries_total and the
// `cause` attribute of failed-attempt logs).
const (
	CauseDNS            = "dns"
	CauseConnectRefused = "connect_refused"
	CauseConnectTimeout = "connect_timeout"
	CauseTLS            = "tls"
	CauseTimeout        = "timeout"
	CauseReset          = "reset"
	CauseStatus5xx      = "status_5xx"
	// CauseGRPCStatus: the origin answered a gRPC call with a grpc-status
	// listed in passive.grpc_failure_statuses (UNAVAILABLE by default).
	CauseGRPCStatus = "grpc_status"
	// CauseProtocol is an answer that breaks HTTP/1.1: a malformed head,
	// ambiguous framing, endless interim (1xx) answers, an unrequested
	// protocol switch (101).
	CauseProtocol = "protocol"
	// CauseEjected is a replay-safe try cut while it waited for the
	// answer's head because its origin was taken out of rotation
	// (retry.on_ejection): not a failure of the origin (the passive
	// detector does not count it), the request moves on.
	CauseEjected = "ejected"
)

var retryCauses = []string{CauseDNS, CauseConnectRefused, CauseConnectTimeout, CauseTLS, CauseTimeout, CauseReset, CauseStatus5xx, CauseProtocol, CauseGRPCStatus}

// noOrigin is the origin label of answers the proxy made itself (502, 503
// when every origin is full, 504, 413, …). It labels only
// vigil_proxy_requests_total and vigil_proxy_request_duration_seconds: it is
// not an origin, so it has no availability gauge and no ejection counters
// (an alert on vigil_proxy_origin_available == 0 would otherwise fire for
// it forever). Config validation refuses an origin named "none".
const noOrigin = "none"

// metrics are the proxy's Prometheus collectors. Every series that can be
// known in advance is created at 0 when its pool or origin is built.
type metrics struct {
	requests   *prometheus.CounterVec   // pool, origin, code
	lastResort *prometheus.CounterVec   // pool: requests in last-resort mode
	latency    *prometheus.HistogramVec // pool, origin
	available  *prometheus.GaugeVec     // pool, origin
	ejections  *prometheus.CounterVec   // pool, origin, reason
	retries    *prometheus.CounterVec   // pool, cause
	tries      *prometheus.CounterVec   // pool, origin, result
	budgetDeny *prometheus.CounterVec   // pool
	sourceUp   *prometheus.GaugeVec     // source
	sourceOK   *prometheus.GaugeVec     // source
	verdictAt  *prometheus.GaugeVec     // pool: date of the newest verdict counted
	refused    *prometheus.CounterVec   // code
	clients    prometheus.Gauge         // client connections open
	clientWait prometheus.Counter       // accepts that waited at max_client_conns
	h2Errors   *prometheus.CounterVec   // type
	tlsErrors  *prometheus.CounterVec   // reason
	ppErrors   *prometheus.CounterVec   // reason
	grpc       *prometheus.CounterVec   // pool, origin, grpc_status

	// ejectRefused counts ejections max_ejected refused.
	ejectRefused *prometheus.CounterVec // pool, origin, reason
	// returnProbes counts the probes sent before a passively ejected
	// origin returns.
	returnProbes *prometheus.CounterVec // pool, origin, result
	// adminAuthFail counts admin writes refused for a missing or wrong token.
	adminAuthFail prometheus.Counter
	// crlNextUpdate is client_crl_file's earliest next update.
	crlNextUpdate *prometheus.GaugeVec // file
	// regionsReporting is, per pool, how many regions have a fresh
	// verdict of a counted check for its origins (regionCheck).
	regionsReporting *prometheus.GaugeVec // pool

	// Request bodies received whole into a file (request_buffering,
	// reqbuf.go), the bytes written to such files (of any body, received
	// whole or not), and the bodies the proxy could not store.
	spooled      *prometheus.CounterVec // pool
	spooledBytes *prometheus.CounterVec // pool
	spoolErrors  *prometheus.CounterVec // pool
	// queueTimeouts counts the 503s of requests whose every origin stayed
	// at its max_conns for queue_timeout (or what retry.budget left of it);
	// queueWaiting is how many requests wait for a max_conns slot now.
	queueTimeouts *prometheus.CounterVec // pool
	queueWaiting  *prometheus.GaugeVec   // pool
	// perClientRefused counts the connections max_conns_per_client closed
	// at accept (vigil_proxy_client_connections_refused_total).
	perClientRefused prometheus.Counter

	// live holds the originMetrics of every origin (and of every pool's
	// own answers, under noOrigin) in the running config, by pool and
	// origin: forget and forgetPool mark them gone, so that a try still in
	// flight to a removed origin cannot create its series again.
	liveMu sync.Mutex
	live   map[[2]string]*originMetrics
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		live: map[[2]string]*originMetrics{},
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_proxy_requests_total",
			Help: "Requests answered, by pool, origin that answered (\"none\" for the proxy's own answers) and status code.",
		}, []string{"pool", "origin", "code"}),
		lastResort: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_proxy_last_resort_total",
			Help: "Requests whose first try went to an origin out of rotation as a last resort, because the pool had no available origin (every one verdict-down, passively ejected, drained or full).",
		}, []string{"pool"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "vigil_proxy_request_duration_seconds",
			Help:    "Time from request start to response headers, in seconds, including failover.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"pool", "origin"}),
		available: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vigil_proxy_origin_available",
			Help: "1 when the origin is available (not drained, verdict-down or passively ejected).",
		}, []string{"pool", "origin"}),
		ejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_proxy_ejections_total",
			Help: "Origins taken out, by reason (consecutive_5xx, failure_rate, success_rate, latency_p95, verdict).",
		}, []string{"pool", "origin", "reason"}),
		ejectRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_proxy_ejections_refused_total",
			Help: "Ejections refused because max_ejected origins of the pool were out, by the rule that fired (consecutive_5xx: every failed try at or past the threshold; the window rules: every evaluation; verdict: every verdict poll that found the origin down).",
		}, []string{"pool", "origin", "reason"}),
		adminAuthFail: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_proxy_admin_auth_failures_total",
			Help: "Admin writes (drain, undrain) refused with 401 for a missing or wrong bearer token.",
		}),
		returnProbes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_proxy_return_probes_total",
			Help: "Probes (passive.return_probe) sent to a passively ejected origin whose ejection time was up, by result: pass (it returned) or fail (it stayed out, probed again return_probe_interval later).",
		}, []string{"pool", "origin", "result"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_proxy_retries_total",
			Help: "Tries sent to another origin after a failed try, by the failed try's cause.",
		}, []string{"pool", "cause"}),
		tries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_proxy_tries_total",
			Help: "Tries sent to each origin, by result: ok (an answer below 500 whose body arrived whole) or the failed try's cause (status_5xx, connect_refused, connect, timeout, …; local: this process could not open a connection, never charged to the origin; ejected: cut while waiting for the answer because the origin was taken out of rotation, never charged to it), whether the request was then retried elsewhere or the failure reached the client.",
		}, []string{"pool", "origin", "result"}),
		budgetDeny: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_proxy_retry_budget_exhausted_total",
			Help: "Retries not made because the pool's retry budget was spent.",
		}, []string{"pool"}),
		sourceUp: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vigil_proxy_verdict_source_up",
			Help: "1 when the last read of the verdict source succeeded, 0 when it failed or none was made yet. source is its URL without password.",
		}, []string{"source"}),
		sourceOK: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vigil_proxy_verdict_source_last_success_timestamp_seconds",
			Help: "When the verdict source was last read successfully, Unix seconds (0: never).",
		}, []string{"source"}),
		crlNextUpdate: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vigil_proxy_client_crl_next_update_timestamp_seconds",
			Help: "The earliest next update (nextUpdate) of the CRLs in client_crl_file, Unix seconds, as loaded at start or the last reload; absent without client_crl_file or when no CRL in it has one. Past it, the CRL still applies but is stale: fetch a new one and reload.",
		}, []string{"file"}),
		verdictAt: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vigil_proxy_pool_verdict_timestamp_seconds",
			Help: "Date of the newest verdict counted for one of the pool's origins (a check the pool counts, on the proxy's clock), Unix seconds; absent until the first. Older than the pool's verdicts.max_age: the canaries stopped reporting, and the pool runs on passive detection alone.",
		}, []string{"pool"}),
		regionsReporting: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vigil_proxy_pool_regions_reporting",
			Help: "Regions with a fresh (within the pool's verdicts.max_age, unexpired) verdict of a check the pool counts for one of its origins; set from the first verdict read. Below the pool's verdicts.quorum, verdicts can take no origin out.",
		}, []string{"pool"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_proxy_refused_total",
			Help: "Requests answered before any pool was chosen, by status code: malformed (400), too large (413, 414, 431), unsupported (405, 417, 501, 505), or for a host and path no pool serves (421); 200: OPTIONS *, which asks about the proxy itself.",
		}, []string{"code"}),
		clients: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vigil_proxy_client_connections",
			Help: "Client connections open, over both listeners (WebSocket tunnels included); at most max_client_conns.",
		}),
		h2Errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_proxy_http2_errors_total",
			Help: "HTTP/2 protocol errors on the TLS listener, by type as Go's HTTP/2 server names them: conn_ (the connection was ended with GOAWAY) or stream_ (the stream was reset), the error code and the check that failed (stream_PROTOCOL_ERROR_bad_path_method, conn_PROTOCOL_ERROR_headers_even, …).",
		}, []string{"type"}),
		tlsErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_proxy_tls_handshake_errors_total",
			Help: "TLS handshakes on the TLS listener that failed, by reason: client_cert_missing and client_cert_invalid (client_ca_file), client_cert_revoked (client_crl_file), plain_http (an HTTP request sent to the TLS port, answered 400), timeout, other.",
		}, []string{"reason"}),
		ppErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_proxy_proxy_protocol_errors_total",
			Help: "Client connections closed for their PROXY protocol header (proxy_protocol), by reason: untrusted (the peer is not in proxy_protocol_from), missing (no header), malformed, timeout (no whole header within read_header_timeout), closed (the peer left first).",
		}, []string{"reason"}),
		grpc: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_proxy_grpc_responses_total",
			Help: "gRPC calls answered (origin_protocol http2 pools), by pool, origin that answered (\"none\" for the proxy's own answers) and grpc-status (0 OK, 14 UNAVAILABLE, …; \"invalid\" for a value that is not a status code). vigil_proxy_requests_total counts these calls under HTTP code 200.",
		}, []string{"pool", "origin", "grpc_status"}),
		clientWait: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_proxy_client_connections_limited_total",
			Help: "Times the proxy stopped accepting because max_client_conns connections were open (new ones waited in the accept queue).",
		}),
	}
	m.spooled = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vigil_proxy_request_bodies_spooled_total",
		Help: "Request bodies over retry.max_buffered_body received whole into a file in body_temp_dir before any origin was tried (request_buffering: on).",
	}, []string{"pool"})
	m.spooledBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vigil_proxy_request_bodies_spooled_bytes_total",
		Help: "Bytes of request bodies written to body_temp_dir (request_buffering: on): those counted in vigil_proxy_request_bodies_spooled_total and what reached the file of a body that was not received whole (the client broke it off or stalled, it went over max_body, the disk filled up).",
	}, []string{"pool"})
	m.spoolErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vigil_proxy_request_body_spool_errors_total",
		Help: "Request bodies the proxy could not store in body_temp_dir (the directory gone or not writable, the disk full), each answered 503.",
	}, []string{"pool"})
	m.queueTimeouts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vigil_proxy_queue_timeouts_total",
		Help: "Requests answered 503 because every origin they could go to was at its max_conns for the whole queue_timeout, or until retry.budget ran out first (at once with queue_timeout: 0). Also counted in vigil_proxy_requests_total{origin=\"none\",code=\"503\"}.",
	}, []string{"pool"})
	m.queueWaiting = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "vigil_proxy_queue_waiting",
		Help: "Requests waiting now for a free max_conns slot (queue_timeout), as HAProxy's qcur.",
	}, []string{"pool"})
	connRefused := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vigil_proxy_client_connections_refused_total",
		Help: "Client connections the proxy reset at accept, before reading a byte, by reason: per_client (the client address had max_conns_per_client connections open).",
	}, []string{"reason"})
	m.perClientRefused = connRefused.WithLabelValues("per_client")
	for _, code := range []string{"400", "421"} {
		m.refused.WithLabelValues(code)
	}
	for _, r := range tlsFailReasons {
		m.tlsErrors.WithLabelValues(r)
	}
	for _, r := range ppFailReasons {
		m.ppErrors.WithLabelValues(r)
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.available, m.ejections, m.ejectRefused, m.retries, m.tries, m.budgetDeny, m.sourceUp, m.sourceOK, m.verdictAt, m.regionsReporting, m.refused, m.clients, m.clientWait, m.h2Errors, m.tlsErrors, m.ppErrors, m.grpc, m.returnProbes, m.adminAuthFail, m.crlNextUpdate,
		m.spooled, m.spooledBytes, m.spoolErrors, m.queueTimeouts, m.queueWaiting, connRefused} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	if err := reg.Register(m.lastResort); err != nil {
		return nil, err
	}
	return m, nil
}

// forLastResort returns a pool's vigil_proxy_last_resort_total, created at 0.
func (m *metrics) forLastResort(pool string) prometheus.Counter {
	return m.lastResort.WithLabelValues(pool)
}

// originMetrics holds one origin's pre-resolved series so the hot path does
// no label lookups except for a status code, try result or grpc-status
// seen for the first time. Once its origin has left the config (forget,
// forgetPool), a series it has not resolved yet is never created: an
// outcome of a try still in flight then counts nowhere, instead of bringing
// back, frozen, a series the reload deleted. The series it resolved before
// were deleted from the registry and stay out of it.
type originMetrics struct {
	pool, origin string
	vec          *prometheus.CounterVec // vigil_proxy_requests_total
	triesVec     *prometheus.CounterVec // vigil_proxy_tries_total
	grpcVec      *prometheus.CounterVec // vigil_proxy_grpc_responses_total
	latency      prometheus.Observer
	available    prometheus.Gauge                 // nil for noOrigin
	tryOK        prometheus.Counter               // tries answered below 500, body whole; nil for noOrigin
	ejections    map[string]prometheus.Counter    // empty for noOrigin
	ejectRefused map[string]prometheus.Counter    // by passive reason; empty for noOrigin
	probePass    prometheus.Counter               // return probes passed; nil for noOrigin
	probeFail    prometheus.Counter               // return probes failed; nil for noOrigin
	codes        [1000]atomic.Pointer[counterBox] // by status code; status lines carry 3 digits
	tries        [len(tryCauses)]atomic.Pointer[counterBox]
	grpcStatus   [101]atomic.Pointer[counterBox] // by grpc-status 0-99, then "invalid"
	codesMu      sync.Mutex                      // guards gone and the creation of series
	gone         bool                            // the origin left the config
}

type counterBox struct{ prometheus.Counter }

// tryCauses are the results of vigil_proxy_tries_total but ok that an
// originMetrics keeps a slot for: retryCauses, connect and local.
var tryCauses = [...]string{CauseDNS, CauseConnectRefused, CauseConnectTimeout, CauseTLS, CauseTimeout, CauseReset,
	CauseStatus5xx, CauseProtocol, CauseGRPCStatus, CauseConnect, CauseLocal, CauseEjected}

// tryCause returns the index of cause in tryCauses, -1 when not there.
func tryCause(cause string) int {
	for i, c := range tryCauses {
		if c == cause {
			return i
		}
	}
	return -1
}

// discard counts what a removed origin's tries still in flight record: it
// is registered nowhere.
var discard = prometheus.NewCounter(prometheus.CounterOpts{Name: "vigil_proxy_discarded"})

func (m *metrics) forOrigin(pool, origin string) *originMetrics {
	m.liveMu.Lock()
	defer m.liveMu.Unlock()
	if om := m.live[[2]string{pool, origin}]; om != nil {
		return om // the same series: one originMetrics per pool and origin name
	}
	om := &originMetrics{
		pool: pool, origin: origin, vec: m.requests, triesVec: m.tries, grpcVec: m.grpc,
		latency:   m.latency.WithLabelValues(pool, origin),
		available: m.available.WithLabelValues(pool, origin),
		tryOK:     m.tries.WithLabelValues(pool, origin, "ok"),
		ejections: map[string]prometheus.Counter{},
	}
	for _, r := range ejectionReasons {
		om.ejections[r] = m.ejections.WithLabelValues(pool, origin, r)
	}
	om.ejectRefused = map[string]prometheus.Counter{}
	for _, r := range ejectionReasons {
		om.ejectRefused[r] = m.ejectRefused.WithLabelValues(pool, origin, r)
	}
	om.probePass = m.returnProbes.WithLabelValues(pool, origin, "pass")
	om.probeFail = m.returnProbes.WithLabelValues(pool, origin, "fail")
	// Every failure cause starts at 0, so an origin's failure rate is 0,
	// not absent, until its first failure.
	for _, c := range append(retryCauses[:len(retryCauses):len(retryCauses)], CauseEjected) {
		om.tries[tryCause(c)].Store(&counterBox{m.tries.WithLabelValues(pool, origin, c)})
	}
	m.live[[2]string{pool, origin}] = om
	return om
}

// forProxyAnswers returns the series of the proxy's own answers in a pool:
// requests and latency under origin noOrigin, nothing per-origin.
func (m *metrics) forProxyAnswers(pool string) *originMetrics {
	m.liveMu.Lock()
	defer m.liveMu.Unlock()
	if om := m.live[[2]string{pool, noOrigin}]; om != nil {
		return om
	}
	om := &originMetrics{
		pool: pool, origin: noOrigin, vec: m.requests, triesVec: m.tries, grpcVec: m.grpc,
		latency:   m.latency.WithLabelValues(pool, noOrigin),
		ejections: map[string]prometheus.Counter{},
	}
	m.live[[2]string{pool, noOrigin}] = om
	return om
}

// resolve returns the series of vec with the origin's pool and origin and
// then lv, created and kept in slot (when not nil) on first use; discard
// once the origin has left the config.
func (om *originMetrics) resolve(slot *atomic.Pointer[counterBox], vec *prometheus.CounterVec, lv string) prometheus.Counter {
	om.codesMu.Lock()
	defer om.codesMu.Unlock()
	if om.gone {
		return discard
	}
	if slot == nil {
		return vec.WithLabelValues(om.pool, om.origin, lv)
	}
	b := slot.Load()
	if b == nil {
		b = &counterBox{vec.WithLabelValues(om.pool, om.origin, lv)}
		slot.Store(b)
	}
	return b.Counter
}

// code returns the requests_total counter for a status code.
func (om *originMetrics) code(c int) prometheus.Counter {
	if c < 0 || c >= len(om.codes) {
		c = 0
	}
	if b := om.codes[c].Load(); b != nil {
		return b.Counter
	}
	return om.resolve(&om.codes[c], om.vec, strconv.Itoa(c))
}

// try returns the tries_total counter of a failed try's cause.
func (om *originMetrics) try(cause string) prometheus.Counter {
	i := tryCause(cause)
	if i < 0 {
		return om.resolve(nil, om.triesVec, cause)
	}
	if b := om.tries[i].Load(); b != nil {
		return b.Counter
	}
	return om.resolve(&om.tries[i], om.triesVec, cause)
}

// countGRPC counts a gRPC call's answer in vigil_proxy_grpc_responses_total
// under its grpc-status v ("" counts nothing: the call got no status). A
// value that is not a status code of at most two digits counts as
// "invalid", so an origin cannot make series without bound.
func (om *originMetrics) countGRPC(v string) {
	if v == "" {
		return
	}
	if len(v) > 2 || strings.Trim(v, "0123456789") != "" {
		v = "invalid"
	}
	slot := len(om.grpcStatus) - 1 // invalid
	switch {
	case v == "invalid":
	case len(v) == 1:
		slot = int(v[0] - '0')
	case v[0] != '0':
		slot = int(v[0]-'0')*10 + int(v[1]-'0')
	default:
		om.resolve(nil, om.grpcVec, v).Inc() // "07": not a slot's label
		return
	}
	if b := om.grpcStatus[slot].Load(); b != nil {
		b.Inc()
		return
	}
	om.resolve(&om.grpcStatus[slot], om.grpcVec, v).Inc()
}

// tryCounter returns the tries_total counter of the origin named origin in
// the pool for a failed try's cause (discard for a name not in the pool).
func (pl *pool) tryCounter(origin, cause string) prometheus.Counter {
	for _, o := range pl.origins {
		if o.name == origin && o.m != nil {
			return o.m.try(cause)
		}
	}
	return discard
}

// markGone marks the originMetrics of pool (every origin's when origin is
// "") as gone and drops them from live.
func (m *metrics) markGone(pool, origin string) {
	m.liveMu.Lock()
	var gone []*originMetrics
	for k, om := range m.live {
		if k[0] == pool && (origin == "" || k[1] == origin) {
			gone = append(gone, om)
			delete(m.live, k)
		}
	}
	m.liveMu.Unlock()
	for _, om := range gone {
		om.codesMu.Lock()
		om.gone = true
		om.codesMu.Unlock()
	}
}

// forget deletes an origin's series (on reload when the origin is gone).
// The origin's originMetrics is marked gone first: a try in flight cannot
// create a series again once they are deleted.
func (m *metrics) forget(pool, origin string) {
	m.markGone(pool, origin)
	m.latency.DeleteLabelValues(pool, origin)
	m.available.DeleteLabelValues(pool, origin)
	m.requests.DeletePartialMatch(prometheus.Labels{"pool": pool, "origin": origin})
	m.ejections.DeletePartialMatch(prometheus.Labels{"pool": pool, "origin": origin})
	m.ejectRefused.DeletePartialMatch(prometheus.Labels{"pool": pool, "origin": origin})
	m.tries.DeletePartialMatch(prometheus.Labels{"pool": pool, "origin": origin})
	m.grpc.DeletePartialMatch(prometheus.Labels{"pool": pool, "origin": origin})
	m.returnProbes.DeletePartialMatch(prometheus.Labels{"pool": pool, "origin": origin})
}

// forgetPool deletes every series labelled with pool (on reload when the
// pool is gone): its origins', those of the proxy's own answers (origin
// "none"), retries, the last resort, the retry budget, the verdict date,
// spooled bodies, the max_conns queue.
// A per-pool collector added to metrics belongs in this list.
func (m *metrics) forgetPool(pool string) {
	m.markGone(pool, "")
	for _, vec := range []interface {
		DeletePartialMatch(prometheus.Labels) int
	}{m.requests, m.lastResort, m.latency, m.available, m.ejections, m.ejectRefused, m.returnProbes,
		m.retries, m.tries, m.budgetDeny, m.verdictAt, m.grpc, m.regionsReporting,
		m.spooled, m.spooledBytes, m.spoolErrors, m.queueTimeouts, m.queueWaiting} {
		vec.DeletePartialMatch(prometheus.Labels{"pool": pool})
	}
}
