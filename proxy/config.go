package proxy

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-synthetics/vigil/checks/grpchealth"
	"github.com/vigil-synthetics/vigil/reporting/units"
	"golang.org/x/net/http/httpguts"
)

// Config errors that tests and callers compare with errors.Is.
var (
	ErrNoPools        = errors.New("at least one pool is required")
	ErrNoOrigins      = errors.New("at least one origin is required")
	ErrTooManyOrigins = errors.New("at most 64 origins per pool")
	ErrUnknownPolicy  = errors.New("unknown policy")
	ErrBadHashKey     = errors.New("want header:NAME, cookie:NAME, path, uri or client_ip")
	ErrDuplicate      = errors.New("duplicate")
	ErrNoURL          = errors.New("url is required (or a target the loader resolves to a url)")
	ErrReservedName   = errors.New(`is reserved: the metrics label the proxy's own answers origin="none"`)
)

// Policy names accepted in PoolConfig.Policy.
const (
	PolicyRoundRobin = "round_robin" // smooth weighted round robin (nginx)
	PolicyLeastConn  = "least_conn"  // power of two choices on in-flight requests / weight
	PolicyHash       = "hash"        // consistent hash ring on Hash.Key with bounded load
	PolicyIPHash     = "ip_hash"     // weighted rendezvous hash on the client IP
	PolicyFirst      = "first"       // first available origin in configuration order
)

// Config is the `proxy:` section.
type Config struct {
	// Listen is the plain HTTP listen address. Default "127.0.0.1:8080".
	Listen string `mapstructure:"listen"`
	// TLSListen is an optional HTTPS listen address; it needs CertFile and KeyFile. Default "" (off).
	TLSListen string `mapstructure:"tls_listen"`
	// CertFile and KeyFile are PEM files for TLSListen: the default
	// certificate, served when no pair of Certs matches the name the client
	// asked for (SNI).
	CertFile string `mapstructure:"cert_file"`
	KeyFile  string `mapstructure:"key_file"`
	// Certs are more certificate pairs for TLSListen, each served to
	// clients asking for a name it covers (SNI), the first that matches.
	Certs []CertPair `mapstructure:"certs"`
	// TLSMinVersion is the lowest TLS version TLSListen accepts: "1.2"
	// (default) or "1.3".
	TLSMinVersion string `mapstructure:"tls_min_version"`
	// AccessLog writes one JSON line per request: "stdout", "stderr" or a
	// file path (appended to, created with mode 0640, reopened on every
	// reload). Default "" (off).
	AccessLog string `mapstructure:"access_log"`
	// AccessLogQuery adds the query string to access log lines (it can hold
	// tokens). Default false.
	AccessLogQuery bool `mapstructure:"access_log_query"`
	// H2C makes Listen also take HTTP/2 with prior knowledge (h2c: a
	// connection opening with the HTTP/2 preface), for gRPC clients without
	// TLS. Default false.
	H2C bool `mapstructure:"h2c"`
	// ClientCAFile, when set, makes TLSListen ask clients for a certificate
	// and verify it against the PEM CA certificates in this file (mutual
	// TLS); origins get the verified certificate in
	// X-Forwarded-Client-Cert. Read at start and on every reload. Default
	// "" (no client certificates asked for).
	ClientCAFile string `mapstructure:"client_ca_file"`
	// ClientAuth is "require" (a client without a certificate that
	// verifies fails the handshake) or "optional" (a client may send none;
	// one it sends must verify). Only with ClientCAFile. Default "require".
	ClientAuth string `mapstructure:"client_auth"`
	// ClientCRLFile, with ClientCAFile, is a file of certificate revocation
	// lists (PEM "X509 CRL" blocks, or one DER CRL), each signed by a CA of
	// ClientCAFile: a client certificate one lists fails the handshake, and
	// a connection made before a reload that revoked its certificate gets
	// 403 (crl.go). Read at start and on every reload. Default "" (no
	// revocation check).
	ClientCRLFile string `mapstructure:"client_crl_file"`
	// RedirectHTTPS answers every request on Listen for a host and path a
	// pool serves with 308 Permanent Redirect to the same URL on TLSListen
	// (Caddy's default; nginx's `return 301 https://…`). Default false.
	RedirectHTTPS bool `mapstructure:"redirect_https"`
	// HSTSMaxAge, when set, adds Strict-Transport-Security: max-age=<seconds>
	// to answers on TLSListen whose origin sent none. Default 0 (off).
	HSTSMaxAge time.Duration `mapstructure:"hsts_max_age"`
	// HSTSIncludeSubdomains adds includeSubDomains to that header. Default false.
	HSTSIncludeSubdomains bool `mapstructure:"hsts_include_subdomains"`

	clientCAs *x509.CertPool // ClientCAFile, loaded by ValidateAndSetDefaults
	// clientRoots are the DER of each certificate of ClientCAFile: a
	// verified chain must still end in one of them.
	clientRoots map[string]bool
	clientCRL   *clientCRL // ClientCRLFile, loaded by ValidateAndSetDefaults
	// servedCerts are CertFile and Certs as ValidateAndSetDefaults loaded
	// them, for the expiry warnings (certexpiry.go).
	servedCerts []servedCert
	hsts        []string // the Strict-Transport-Security value, nil when off
	// RequestID is the header that carries each request's ID to the origin
	// and back to the client (and into the access log and the failed-try
	// log). Default X-Request-Id; "off" sends none.
	RequestID string `mapstructure:"request_id"`
	// RequestIDFromClient keeps a well-formed ID the client sent (an edge
	// or CDN in front that sets one) instead of replacing it. Default false.
	RequestIDFromClient bool   `mapstructure:"request_id_from_client"`
	ridKey              string // RequestID canonical, "" when off
	// RequestIDInAnswers sends the request's ID back to the client, in
	// RequestID, on every answer. Default (nil) true; false keeps it to
	// the origin and the logs, and takes a field of that name the origin
	// sends out of its answers too (an answer a CDN caches then carries no
	// ID to every user served it).
	RequestIDInAnswers *bool `mapstructure:"request_id_in_answers"`
	ridAnswers         bool  // RequestIDInAnswers resolved
	// Via is this proxy's name in the Via field (RFC 9110 §7.6.3) of the
	// requests it sends to origins ("Via: 1.1 NAME"): a request that
	// arrives already carrying it went round a loop (vigil → nginx →
	// vigil) and is answered 508 Loop Detected. A token or host[:port];
	// every proxy of a chain needs its own. Default: this host's name and
	// a random suffix drawn when the process starts (web1-3fa29c1b), kept
	// across reloads. "off" sends none and detects no loops.
	Via string `mapstructure:"via"`

	// AdminToken guards drain/undrain (Authorization: Bearer …). The loader
	// copies agent.admin_token here when it is empty. Empty: every admin write
	// is refused.
	AdminToken string `mapstructure:"admin_token"`
	// MaxHeaderBytes bounds the request header block. Default 64KiB.
	MaxHeaderBytes units.ByteSize `mapstructure:"max_header_bytes"`
	// MaxBody bounds the request body; larger bodies get 413. Default 10MiB.
	MaxBody units.ByteSize `mapstructure:"max_body"`
	// RequestBuffering is the pools' default for PoolConfig.RequestBuffering:
	// "on" (default) or "off".
	RequestBuffering string `mapstructure:"request_buffering"`
	// BodyTempDir is the directory request bodies larger than a pool's
	// retry.max_buffered_body are spooled to (request_buffering, reqbuf.go):
	// each in a file created with mode 0600 and unlinked at once, so none
	// outlives its request, nor the process. It must exist. Default
	// os.TempDir() ($TMPDIR, else /tmp).
	BodyTempDir string `mapstructure:"body_temp_dir"`
	// ReadHeaderTimeout bounds reading a request's headers (slow clients). Default 10s.
	ReadHeaderTimeout time.Duration `mapstructure:"read_header_timeout"`
	// IdleTimeout closes idle client keep-alive connections. Default 60s.
	IdleTimeout time.Duration `mapstructure:"idle_timeout"`
	// ReadTimeout bounds reading a whole request, WriteTimeout writing a whole
	// response. Default 0 (none) so long uploads and streams work.
	ReadTimeout  time.Duration `mapstructure:"read_timeout"`
	WriteTimeout time.Duration `mapstructure:"write_timeout"`
	// SendTimeout bounds each write of an answer to a client that makes no
	// progress: a client that reads nothing for this long is cut off, and
	// the origin connection and max_conns slot it held are freed. It is
	// reset whenever bytes go out, so long streams and large downloads that
	// keep moving are not limited (nginx's send_timeout). Over HTTP/2 it
	// bounds each stream's writes (streamSend): the stuck stream is reset,
	// the connection's others go on. Default 60s.
	SendTimeout time.Duration `mapstructure:"send_timeout"`
	// ProxyProtocol makes both listeners take connections only from
	// ProxyProtocolFrom, each starting with a PROXY protocol header (v1 or
	// v2) from a TCP load balancer in front, whose client address becomes
	// the connection's (proxyproto.go). Default false.
	ProxyProtocol bool `mapstructure:"proxy_protocol"`
	// ProxyProtocolFrom lists the addresses (CIDRs or single IPs) of the
	// load balancers that send PROXY protocol headers; required with
	// ProxyProtocol, as a header from anyone else could claim any address.
	ProxyProtocolFrom []string       `mapstructure:"proxy_protocol_from"`
	ppFrom            []netip.Prefix // ProxyProtocolFrom parsed
	// TrustedProxies lists the addresses (CIDRs or single IPs) of the
	// proxies and CDN edges in front whose ClientIPHeader is believed: a
	// request from one of them is taken to come from the client that
	// header names (realClientIP), and the scheme, host and port it says
	// the client used go on to origins in X-Forwarded-Proto/-Host/-Port
	// and Forwarded (withTrustedForwarding). Default none.
	TrustedProxies []string `mapstructure:"trusted_proxies"`
	// ClientIPHeader is the header a trusted proxy names the client in:
	// X-Forwarded-For (the rightmost address not in TrustedProxies) or a
	// one-address header such as CF-Connecting-IP. Default
	// X-Forwarded-For.
	ClientIPHeader string         `mapstructure:"client_ip_header"`
	trusted        []netip.Prefix // TrustedProxies parsed
	clientIPKey    string         // ClientIPHeader canonical
	// KeepaliveTime is how long one client connection serves requests: the
	// answer to the first request after it closes the connection
	// (HTTP/1: Connection: close; HTTP/2: a graceful GOAWAY), as nginx's
	// keepalive_time. Default 1h; an explicit 0 turns the limit off.
	KeepaliveTime time.Duration `mapstructure:"keepalive_time"`
	// KeepaliveRequests is how many requests one client connection serves
	// (HTTP/2: streams); the answer to the last one closes it, as nginx's
	// keepalive_requests. Default 0: no limit.
	KeepaliveRequests int `mapstructure:"keepalive_requests"`
	// MaxClientConns bounds the client connections open at once, over both
	// listeners, WebSocket tunnels included (nginx's worker_connections,
	// HAProxy's maxconn): past it new connections wait in the kernel's
	// accept queue until one closes. Default 10000.
	MaxClientConns int `mapstructure:"max_client_conns"`
	// MaxConnsPerClient bounds the connections one client address (the
	// TCP peer; an IPv6 address's /64) holds open at once, as nginx's
	// limit_conn: past it its new connections are closed at accept
	// (clientlimit.go). Peers in TrustedProxies and ProxyProtocolFrom are
	// not limited. Default max_client_conns / 10, at least 100 (1000 with
	// the default max_client_conns); an explicit 0 turns it off.
	MaxConnsPerClient int `mapstructure:"max_conns_per_client"`
	// VerdictPoll is how often the verdict source is read. Default 2s.
	VerdictPoll time.Duration `mapstructure:"verdict_poll"`
	// SignalWindow is the passive observation window published as
	// reporting.Signal per origin. Default 10s.
	SignalWindow time.Duration `mapstructure:"signal_window"`
	// Region and Vantage label published signals (this proxy's location and
	// instance name). Unset, the config file's agent.region and agent.vantage.
	Region  string `mapstructure:"region"`
	Vantage string `mapstructure:"vantage"`
	// Engine serves HTTP/1.1 on the plain and TLS listeners: "fast" (vigil's
	// own HTTP/1.1 engine; upgrades, CONNECT and absolute-form requests are
	// handed to net/http's request parser) or "stdlib" (net/http's server).
	// HTTP/2 on the TLS listener is always net/http's. Default "fast".
	Engine string `mapstructure:"engine"`
	// Pools route requests by Host and path prefix.
	Pools []PoolConfig `mapstructure:"pools"`

	// set holds the keys the file set, relative to the section (see SetKeys).
	set units.KeySet
}

// SetKeys records which keys the config file set, relative to the
// section ("listen", "pools[0].max_ejected"), so that validation tells an
// explicit 0 from an omitted key: an omitted key takes its default; an
// explicit 0 is an error where 0 has no meaning of its own
// (pools[].retry.tries, pools[].origins[].weight, …), is kept where it has
// one (pools[].max_ejected: 0% never ejects; read_timeout, write_timeout,
// slow_start, failure_rate, latency_p95 and max_conns default to 0), and
// send_timeout: 0 still reads as the default. Without SetKeys every 0
// reads as omitted.
func (c *Config) SetKeys(keys []string) { c.set = units.NewKeySet(keys) }

// explicitZeros rejects keys the file set to 0 where 0 has no meaning and
// an omitted key takes a non-zero default (tries: 0 used to mean 3).
func (c *Config) explicitZeros() []error {
	if c.set == nil {
		return nil
	}
	key := units.Zero
	keys := []units.ZeroKey{
		key("max_header_bytes", c.MaxHeaderBytes == 0, "64KiB"),
		key("max_body", c.MaxBody == 0, "10MiB"),
		key("read_header_timeout", c.ReadHeaderTimeout == 0, "10s"),
		key("idle_timeout", c.IdleTimeout == 0, "60s"),
		key("max_client_conns", c.MaxClientConns == 0, "10000"),
		key("verdict_poll", c.VerdictPoll == 0, "2s"),
		key("signal_window", c.SignalWindow == 0, "10s"),
	}
	for i := range c.Pools {
		p := &c.Pools[i]
		k := fmt.Sprintf("pools[%d].", i)
		keys = append(keys,
			key(k+"hash.bounded_load", p.Hash.BoundedLoad == 0, "1.25"),
			key(k+"verdicts.quorum", p.Verdicts.Quorum == 0, "1"),
			key(k+"verdicts.max_age", p.Verdicts.MaxAge == 0, "60s"),
			key(k+"passive.consecutive_5xx", p.Passive.Consecutive5xx == 0, "5; -1 turns the rule off"),
			key(k+"passive.window", p.Passive.Window == 0, "30s"),
			key(k+"passive.min_requests", p.Passive.MinRequests == 0, "20"),
			key(k+"passive.success_rate_stdev", p.Passive.SuccessRateStdev == 0, "1.9; -1 turns the rule off"),
			key(k+"passive.success_rate_min_hosts", p.Passive.SuccessRateMinHosts == 0, "3"),
			key(k+"passive.success_rate_min_requests", p.Passive.SuccessRateMinRequests == 0, "100 (min_requests when that is higher)"),
			key(k+"passive.ejection", p.Passive.Ejection == 0, "30s"),
			key(k+"passive.max_ejection", p.Passive.MaxEjection == 0, "300s"),
			key(k+"passive.return_probe_interval", p.Passive.ReturnProbeInterval == 0, "1s"),
			key(k+"retry.tries", p.Retry.Tries == 0, "3; 1 sends each request to one origin only"),
			key(k+"retry.try_timeout", p.Retry.TryTimeout == 0, "15s"),
			key(k+"retry.budget", p.Retry.Budget == 0, "30s"),
			key(k+"retry.retry_budget", p.Retry.RetryBudget == 0, "20%"),
			key(k+"retry.max_buffered_body", p.Retry.MaxBufferedBody == 0, "64KiB"),
			key(k+"connect_timeout", p.ConnectTimeout == 0, "2s"),
			key(k+"tunnel_idle_timeout", p.TunnelIdleTimeout == 0, "10m"),
			key(k+"body_timeout", p.BodyTimeout == 0, "60s"),
			key(k+"origin_idle_timeout", p.OriginIdleTimeout == 0, "50s"),
		)
		for j := range p.Origins {
			keys = append(keys, key(fmt.Sprintf("%sorigins[%d].weight", k, j), p.Origins[j].Weight == 0,
				"1; to send an origin no new requests, drain it with POST /api/v1/origins/{name}/drain"))
		}
	}
	return c.set.ExplicitZeros(keys)
}

// RequestIDOff is Config.RequestID's value for no request ID.
const RequestIDOff = "off"

// ViaOff turns Via and loop detection off (Config.Via).
const ViaOff = "off"

// Engine names accepted in Config.Engine.
const (
	EngineFast   = "fast"
	EngineStdlib = "stdlib"
)

// DefaultTunnelIdleTimeout is pools[].tunnel_idle_timeout when omitted.
const DefaultTunnelIdleTimeout = 10 * time.Minute

// DefaultMaxClientConns is max_client_conns when omitted.
const DefaultMaxClientConns = 10000

// DefaultQueueTimeout is pools[].queue_timeout when omitted.
const DefaultQueueTimeout = 500 * time.Millisecond

// DefaultConnectTimeout is pools[].connect_timeout when omitted.
const DefaultConnectTimeout = 2 * time.Second

// DefaultBodyTimeout is pools[].body_timeout when omitted.
const DefaultBodyTimeout = 60 * time.Second

// CertPair is a PEM certificate (followed by its intermediates) and its
// key for the TLS listener.
type CertPair struct {
	CertFile string `mapstructure:"cert_file"`
	KeyFile  string `mapstructure:"key_file"`
}

// DefaultOriginIdleTimeout is pools[].origin_idle_timeout when omitted.
const DefaultOriginIdleTimeout = 50 * time.Second

// Values of request_buffering (Config.RequestBuffering, PoolConfig.RequestBuffering).
const (
	RequestBufferingOn  = "on"
	RequestBufferingOff = "off"
)

// ErrRequestBuffering is returned for a request_buffering other than on or off.
var ErrRequestBuffering = errors.New("want on or off")

// ErrUnknownEngine is returned for a Config.Engine other than fast or stdlib.
var ErrUnknownEngine = errors.New("unknown engine (want fast or stdlib)")

// PoolConfig is one entry of `proxy.pools`.
type PoolConfig struct {
	// Name labels metrics and logs. Required, unique.
	Name string `mapstructure:"name"`
	// Hosts matched against the request Host (port ignored, case-insensitive):
	// exact "www.example.com", suffix wildcard "*.example.com", or "*" for any
	// host. Default ["*"].
	Hosts []string `mapstructure:"hosts"`
	// PathPrefix routes by path; the longest matching prefix wins. Default "/".
	PathPrefix string `mapstructure:"path_prefix"`
	// Policy is the balancer: round_robin (default), least_conn, hash, ip_hash, first.
	Policy string `mapstructure:"policy"`
	// Hash configures the hash policy.
	Hash HashConfig `mapstructure:"hash"`
	// Origins of the pool, 1..64.
	Origins []OriginConfig `mapstructure:"origins"`
	// Verdicts selects which canary verdicts can take an origin out.
	Verdicts VerdictConfig `mapstructure:"verdicts"`
	// Passive configures the outlier detector on live traffic.
	Passive PassiveConfig `mapstructure:"passive"`
	// MaxEjected caps the share of the pool that verdicts and the passive
	// detector together may take out (drained origins do not count). Default 50%
	// when omitted; an explicit "0%" (Config.SetKeys) never ejects: verdicts
	// and the passive detector only log, as with Envoy's
	// max_ejection_percent: 0. "100%" allows every origin to be ejected.
	MaxEjected units.Percent `mapstructure:"max_ejected"`
	// Retry bounds failover.
	Retry RetryConfig `mapstructure:"retry"`
	// SlowStart ramps a returning origin's weight from 10% to 100% over this
	// duration (round_robin and least_conn). Default 0 (off).
	SlowStart time.Duration `mapstructure:"slow_start"`
	// ConnectTimeout bounds TCP connect plus TLS handshake to an origin. Default 2s.
	ConnectTimeout time.Duration `mapstructure:"connect_timeout"`
	// TunnelIdleTimeout closes a WebSocket (upgraded) tunnel through which
	// no byte went either way for this long; the tunnel holds its origin's
	// in-flight count (max_conns) until then. Default 10m.
	TunnelIdleTimeout time.Duration `mapstructure:"tunnel_idle_timeout"`
	// BodyTimeout bounds each wait for the next bytes of an origin's
	// answer body once its head arrived (nginx's proxy_read_timeout,
	// HAProxy's timeout server): an origin silent for this long mid-body
	// fails the try (cause timeout) and the client's answer is cut off.
	// Default 60s.
	BodyTimeout time.Duration `mapstructure:"body_timeout"`
	// OriginIdleTimeout is how long an idle keep-alive connection to an
	// origin is kept for reuse (nginx's upstream keepalive_timeout,
	// Envoy's idle_timeout). Set it below the origins' own keep-alive
	// timeout, so that the proxy never reuses a connection the origin is
	// closing: a request with a body that meets such a close is not sent
	// again. Default 50s.
	OriginIdleTimeout time.Duration `mapstructure:"origin_idle_timeout"`
	// TLS configures the connections to the pool's https:// origins.
	TLS OriginTLSConfig `mapstructure:"tls"`
	// OriginProtocol is the HTTP version spoken to the pool's origins:
	// "http1" (HTTP/1.1) or "http2" (HTTP/2: negotiated by ALPN with
	// https:// origins, prior knowledge (h2c) with http:// ones), for gRPC
	// services and origins that speak only HTTP/2. Default "http1".
	OriginProtocol string `mapstructure:"origin_protocol"`
	// OriginHost is the Host (HTTP/2 :authority) sent to every origin of
	// the pool in place of the client's, as nginx's proxy_set_header Host,
	// Envoy's host_rewrite_literal and Caddy's header_up Host: for
	// virtual-hosted object stores and CDNs that serve a name of their own
	// (bucket.s3.example). For https origins it is also the TLS server name
	// (SNI) sent and verified, unless tls.server_name is set. Origins still
	// get the client's host in X-Forwarded-Host. Default "": the client's
	// Host.
	OriginHost string `mapstructure:"origin_host"`
	// QueueTimeout is how long a request waits for a free slot when every
	// origin it could go to is at its max_conns (HAProxy's timeout queue),
	// before it gets 503. It counts toward retry.budget. Default 500ms; an
	// explicit 0 answers 503 at once.
	QueueTimeout time.Duration `mapstructure:"queue_timeout"`
	// RequestBuffering "on" receives a request body larger than
	// retry.max_buffered_body whole, into a file in body_temp_dir, before
	// an origin is chosen or dialled (nginx's proxy_request_buffering on):
	// a slow upload holds no origin connection and no max_conns slot.
	// gRPC calls and upgrades always stream. "off" streams such bodies to
	// the origin as they arrive (for uploads the origin must see as they
	// come). Default: the proxy's request_buffering, itself "on".
	RequestBuffering string `mapstructure:"request_buffering"`
	// RequestHeaders changes the fields of every request sent to the
	// pool's origins, after the proxy set its own (X-Forwarded-*, the
	// request ID): nginx's proxy_set_header, Envoy's
	// request_headers_to_add/remove, Caddy's header_up.
	RequestHeaders RequestHeadersConfig `mapstructure:"request_headers"`

	hosts   []hostPattern
	hashKey hashKey
	// anyHost: hosts was not given, so it is ["*"].
	anyHost bool
	// spool: request bodies over retry.max_buffered_body are spooled to
	// spoolDir (RequestBuffering on; "" is os.TempDir()).
	spool    bool
	spoolDir string
	checkSet map[string]bool
	tierSet  map[string]bool
	// noEject records an explicit max_ejected: 0% (Config.SetKeys).
	noEject bool
	// connectDefault records that ConnectTimeout was omitted (for error
	// messages).
	connectDefault bool
}

// OriginConfig is one origin. Either URL is set directly, or Target names an
// entry of the top-level `targets:` list and the loader fills URL from it.
// Target is also the name verdicts are matched on (reporting.Verdict.Target);
// an origin without Target is never taken out by verdicts.
type OriginConfig struct {
	// Target is the target name (verdict matching, metrics, admin API).
	Target string `mapstructure:"target"`
	// URL is the origin's base URL, http:// or https://; a path is not allowed.
	URL string `mapstructure:"url"`
	// Weight for round_robin, least_conn and ip_hash, 1..1000. Default 1.
	Weight int `mapstructure:"weight"`
	// MaxConns caps the requests in flight to this origin; a full origin
	// takes no new try (not even as a last resort) until one finishes, and
	// when every origin of the pool is full the client gets 503. 0 (the
	// default): no cap.
	MaxConns int `mapstructure:"max_conns"`

	u *url.URL
}

// Name is the origin's name in metrics and the admin API: Target, or the
// URL's host:port when Target is empty.
func (o OriginConfig) Name() string {
	if o.Target != "" {
		return o.Target
	}
	if o.u != nil {
		return o.u.Host
	}
	return o.URL
}

// RequestHeadersConfig sets and removes request fields on the way to a
// pool's origins. Names are case-insensitive; hop-by-hop fields, Host (see
// origin_host) and the framing fields Content-Length and Transfer-Encoding
// cannot be named.
type RequestHeadersConfig struct {
	// Set replaces a field (every value the client sent) with this value;
	// an empty value sends the field empty.
	Set map[string]string `mapstructure:"set"`
	// Remove deletes fields; applied before Set.
	Remove []string `mapstructure:"remove"`

	set    map[string][]string // canonical name → the one value
	remove []string            // canonical names
}

// validate checks the names and values and compiles them.
func (c *RequestHeadersConfig) validate() error {
	var errs []error
	bad := func(k string) string {
		switch {
		case !isToken(k):
			return "not a field name (a token: no spaces, colons or quotes)"
		case isHop(http.CanonicalHeaderKey(k)):
			return "a hop-by-hop field: it is for one connection, not for the origin"
		case strings.EqualFold(k, "Host"):
			return "use origin_host to set the Host sent to origins"
		case strings.EqualFold(k, "Content-Length"):
			return "the proxy frames the request body itself"
		case strings.EqualFold(k, "Via"):
			return "the proxy sets Via itself (see via), to detect request loops"
		}
		return ""
	}
	c.set, c.remove = nil, nil
	for _, k := range slices.Sorted(maps.Keys(c.Set)) {
		if why := bad(k); why != "" {
			errs = append(errs, fmt.Errorf("set: %q: %s", k, why))
			continue
		}
		v := c.Set[k]
		if !httpguts.ValidHeaderFieldValue(v) {
			errs = append(errs, fmt.Errorf("set: %q: the value holds a control character (CR, LF or NUL)", k))
			continue
		}
		if c.set == nil {
			c.set = map[string][]string{}
		}
		c.set[http.CanonicalHeaderKey(k)] = []string{v}
	}
	for i, k := range c.Remove {
		if why := bad(k); why != "" {
			errs = append(errs, fmt.Errorf("remove[%d]: %q: %s", i, k, why))
			continue
		}
		c.remove = append(c.remove, http.CanonicalHeaderKey(k))
	}
	return errors.Join(errs...)
}

// HashConfig configures the hash policy.
type HashConfig struct {
	// Key is header:NAME, cookie:NAME, path (the path as the client
	// wrote it, percent-decoded, without the query), uri (path and query,
	// as nginx's $request_uri) or client_ip. header:Host hashes the
	// request's host without its port, lower-cased (nginx's $host).
	// Default client_ip.
	Key string `mapstructure:"key"`
	// BoundedLoad caps an origin's in-flight requests at this factor of the
	// pool average before the key moves to the next origin on the ring
	// ("consistent hashing with bounded loads"). Default 1.25; must be ≥ 1.
	BoundedLoad float64 `mapstructure:"bounded_load"`
}

// VerdictConfig selects the canary verdicts that can mark an origin down.
type VerdictConfig struct {
	// Checks lists check names that count. With Tiers, a verdict counts when
	// its check is listed or its tier is. Both empty: every check counts.
	Checks []string `mapstructure:"checks"`
	// Tiers lists tiers (shallow, deep, synthetic) that count.
	Tiers []string `mapstructure:"tiers"`
	// Quorum is how many distinct regions must report a fresh unhealthy
	// verdict for a counted check before the origin is verdict-down. Default 1.
	Quorum int `mapstructure:"quorum"`
	// MaxAge is how long a verdict counts, from when the proxy first saw
	// it (its own clock, so a canary's clock skew does not matter), and
	// never past its Expires: stale means unknown means ignored. Default 60s.
	MaxAge time.Duration `mapstructure:"max_age"`
}

// PassiveConfig configures the outlier detector. A rule whose threshold is
// zero is off unless a default is stated.
type PassiveConfig struct {
	// Consecutive5xx ejects after this many consecutive gateway failures (5xx
	// answers, connection errors, timeouts). Default 5; -1 turns the rule off.
	Consecutive5xx int `mapstructure:"consecutive_5xx"`
	// FailureRate ejects when failures reach this share of requests in Window
	// (with at least MinRequests). Default 0 (off).
	FailureRate units.Percent `mapstructure:"failure_rate"`
	// Window is the sliding window of the rate, outlier and latency rules. Default 30s.
	Window time.Duration `mapstructure:"window"`
	// MinRequests is the least number of requests in Window before the
	// failure-rate and latency rules judge an origin. Default 20.
	MinRequests int `mapstructure:"min_requests"`
	// SuccessRateStdev ejects an origin whose success rate is more than this
	// many standard deviations (and at least 5 points) below the pool
	// median, and whose failures chance does not explain: Fisher's exact
	// test against the other origins' failures must give p below 0.001
	// divided by the number of origins judged. Only origins with
	// SuccessRateMinRequests are judged and counted, and the rule runs only
	// with SuccessRateMinHosts of them. Default 1.9; -1 turns the rule off.
	SuccessRateStdev float64 `mapstructure:"success_rate_stdev"`
	// SuccessRateMinHosts is the least number of origins with
	// SuccessRateMinRequests in Window for the success-rate rule to run
	// (Envoy's success_rate_minimum_hosts). Default 3, the least: the
	// median and spread of two origins cannot single one out.
	SuccessRateMinHosts int `mapstructure:"success_rate_min_hosts"`
	// SuccessRateMinRequests is the least number of requests in Window for
	// an origin to be judged by, and counted in, the success-rate rule
	// (Envoy's success_rate_request_volume). Default 100, or MinRequests
	// when that is higher: at 20 requests, 2 failures made an outlier.
	SuccessRateMinRequests int `mapstructure:"success_rate_min_requests"`
	// LatencyP95 ejects when the origin's p95 response-header latency in Window
	// exceeds it. Default 0 (off).
	LatencyP95 time.Duration `mapstructure:"latency_p95"`
	// Ejection is the base ejection time; the n-th ejection lasts n × Ejection.
	// Default 30s.
	Ejection time.Duration `mapstructure:"ejection"`
	// MaxEjection caps one ejection. Default 300s.
	MaxEjection time.Duration `mapstructure:"max_ejection"`
	// GRPCFailureStatuses lists the grpc-status codes (names such as
	// "UNAVAILABLE", or numbers) with which an origin's answer to a gRPC
	// call counts as a failed try for the passive rules, as a 5xx does.
	// Default ["UNAVAILABLE"]; [] counts none.
	GRPCFailureStatuses []string `mapstructure:"grpc_failure_statuses"`
	// ReturnProbe is the path of the probe a passively ejected origin must
	// pass before it returns when its ejection time is up: one GET, answered
	// within retry.try_timeout with a status below 500 (what the passive
	// rules count as a success). After a failed probe it stays out and is
	// probed again ReturnProbeInterval later. Default "/"; "off" returns it
	// without a probe, live traffic being the test (Envoy's outlier
	// detection, nginx's max_fails).
	ReturnProbe string `mapstructure:"return_probe"`
	// ReturnProbeInterval is how long after a failed return probe the next
	// one goes out. Default 1s.
	ReturnProbeInterval time.Duration `mapstructure:"return_probe_interval"`
	// ReturnProbeHost is the Host of return probes. Default: the pool's
	// origin_host, else its first exact host, or the origin's host:port when the pool names only
	// wildcards (an origin serving several names may answer its own
	// address with a 404 or a default site).
	ReturnProbeHost string `mapstructure:"return_probe_host"`

	grpcFail uint32 // bit n: grpc-status n is a failure
}

// Defaults of passive.success_rate_min_hosts and
// passive.success_rate_min_requests (the latter raised to min_requests when
// that is higher).
const (
	DefaultSuccessRateMinHosts    = 3
	DefaultSuccessRateMinRequests = 100
)

// ReturnProbeOff is passive.return_probe's value for no probe;
// ReturnProbeGRPC asks the gRPC health service (origin_protocol http2).
const (
	ReturnProbeOff  = "off"
	ReturnProbeGRPC = "grpc"
)

// probeName names the return probe in logs: "GET /healthz", "gRPC health".
func (p *PassiveConfig) probeName() string {
	if p.ReturnProbe == ReturnProbeGRPC {
		return "gRPC " + grpchealth.Path
	}
	return "GET " + p.ReturnProbe
}

// probing reports whether a passive ejection ends with a return probe.
func (p *PassiveConfig) probing() bool { return p.ReturnProbe != ReturnProbeOff }

// parsePrefixes parses key's list of IP addresses and CIDRs (an address
// is a prefix of its full length; IPv4-mapped IPv6 is read as IPv4).
func parsePrefixes(key string, list []string) ([]netip.Prefix, []error) {
	var out []netip.Prefix
	var errs []error
	for i, v := range list {
		pfx, err := netip.ParsePrefix(strings.TrimSpace(v))
		if err != nil {
			a, aerr := netip.ParseAddr(strings.TrimSpace(v))
			if aerr != nil || a.Zone() != "" {
				errs = append(errs, fmt.Errorf("%s[%d]: %q: want an IP address or a CIDR (10.0.0.0/8, 2001:db8::/32)", key, i, v))
				continue
			}
			pfx = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		if pfx.Addr().Is4In6() {
			pfx = netip.PrefixFrom(pfx.Addr().Unmap(), pfx.Bits()-96)
		}
		out = append(out, pfx.Masked())
	}
	return out, errs
}

// grpcFailed reports whether v, a grpc-status value, is one of
// grpc_failure_statuses.
func (p *PassiveConfig) grpcFailed(v string) bool {
	if len(v) == 0 || len(v) > 2 {
		return false
	}
	n := 0
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return false
		}
		n = n*10 + int(v[i]-'0')
	}
	return n < 32 && p.grpcFail&(1<<n) != 0
}

// RetryConfig bounds failover for one request.
type RetryConfig struct {
	// Tries is the most origins one request is sent to (first try included). Default 3.
	Tries int `mapstructure:"tries"`
	// TryTimeout bounds one try until response headers. Default 15s.
	TryTimeout time.Duration `mapstructure:"try_timeout"`
	// Budget bounds all tries together until response headers; when it runs
	// out the client gets 504. Default 30s.
	Budget time.Duration `mapstructure:"budget"`
	// RetryBudget caps retries after a sent request (5xx, timeout, reset) at
	// this share of the pool's requests over the last 10s (at least 10 are
	// always allowed). Retries after connection failures, where nothing reached
	// the origin, are not counted against it. Default 20%.
	RetryBudget units.Percent `mapstructure:"retry_budget"`
	// MaxBufferedBody is the largest request body buffered so a replay-safe
	// request can be retried after a 5xx. Default 64KiB.
	MaxBufferedBody units.ByteSize `mapstructure:"max_buffered_body"`
	// OnEjection is what happens to the replay-safe tries still waiting for
	// an answer's head from an origin that is taken out of rotation
	// (verdict-down, passively ejected): "resend" (default) cuts them and
	// sends the request to another origin (cause ejected), "wait" leaves
	// them waiting until try_timeout.
	OnEjection string `mapstructure:"on_ejection"`

	tryDefault bool // TryTimeout was omitted (for error messages)
}

// Warnings lists what the section allows but weakens, each led by its key;
// call after ValidateAndSetDefaults succeeded: a client_crl_file CRL past
// its next update (it still applies, see loadClientCRL), a pool's
// tls.insecure_skip_verify (the proxy carries user traffic to its origins),
// a certificate of the TLS listener that has expired or expires within 14
// days (certexpiry.go).
func (c *Config) Warnings() []string {
	var out []string
	for _, sc := range c.servedCerts {
		if note, _ := expiryNote(sc.cert, time.Now()); note != "" {
			out = append(out, fmt.Sprintf("%s: %s: %s", sc.key, sc.file, note))
		}
	}
	if c.clientCRL != nil {
		for _, s := range c.clientCRL.staleLists(time.Now()) {
			out = append(out, fmt.Sprintf("client_crl_file: %s: %s: the certificates it lists stay refused, the others are served; publish a new CRL and reload", c.ClientCRLFile, s))
		}
	}
	out = append(out, c.redirectWarnings()...)
	out = append(out, c.successRateWarnings()...)
	for i, p := range c.Pools {
		if p.TLS.InsecureSkipVerify {
			out = append(out, fmt.Sprintf("pools[%d].tls.insecure_skip_verify: true: certificates are not verified "+
				"(the user traffic the proxy sends to this pool's https origins can be read and changed on the way)", i))
		}
	}
	return out
}

// successRateWarnings names each pool whose file sets a success-rate key
// (success_rate_stdev, success_rate_min_hosts, success_rate_min_requests)
// but has fewer origins than success_rate_min_hosts: the rule set up there
// can never run. A pool that sets none is left out: pools of one or two
// origins are common, and the README says the rule needs three.
func (c *Config) successRateWarnings() []string {
	var out []string
	for i, p := range c.Pools {
		k := fmt.Sprintf("pools[%d].passive.", i)
		pc := p.Passive
		if pc.SuccessRateStdev <= 0 || len(p.Origins) >= pc.SuccessRateMinHosts ||
			!(c.set[k+"success_rate_stdev"] || c.set[k+"success_rate_min_hosts"] || c.set[k+"success_rate_min_requests"]) {
			continue
		}
		out = append(out, fmt.Sprintf("%ssuccess_rate_min_hosts: %d, but pool %s has %d origin(s): the success_rate rule never runs there "+
			"(consecutive_5xx still ejects, and failure_rate when set); set success_rate_stdev: -1 to turn it off",
			k, pc.SuccessRateMinHosts, p.Name, len(p.Origins)))
	}
	return out
}

// redirectWarnings names, with redirect_https, each host of a pool that no
// served certificate covers: its plain-HTTP requests get a permanent 308 to
// https://, which browsers cache, and then a certificate error. A wildcard
// host is looked at through one name it matches. A "*" pool is left out:
// its hosts are redirected only when a certificate covers them.
func (c *Config) redirectWarnings() []string {
	if !c.RedirectHTTPS || len(c.servedCerts) == 0 {
		return nil
	}
	covered := func(name string) bool {
		for _, sc := range c.servedCerts {
			if l := sc.cert.Leaf; l != nil && l.VerifyHostname(name) == nil {
				return true
			}
		}
		return false
	}
	var out []string
	for i, p := range c.Pools {
		for j, hp := range p.hosts {
			name := hp.exact
			if hp.suffix != "" {
				name = "vigil-check" + hp.suffix
			}
			if name == "" || covered(name) {
				continue
			}
			out = append(out, fmt.Sprintf("pools[%d].hosts[%d]: %q (pool %s): redirect_https sends its plain-HTTP requests to https:// with a permanent 308, which browsers cache, but no certificate of cert_file or certs covers it: they would get a certificate error; add a certificate for it, or serve this pool on a listener without redirect_https",
				i, j, p.Hosts[j], p.Name))
		}
	}
	return out
}

// ValidateAndSetDefaults fills defaults and validates the section.
func (c *Config) ValidateAndSetDefaults() error {
	errs := c.explicitZeros()
	for i := range c.Pools {
		c.Pools[i].noEject = c.set[fmt.Sprintf("pools[%d].max_ejected", i)] && c.Pools[i].MaxEjected == 0
	}
	if c.Listen == "" {
		c.Listen = "127.0.0.1:8080"
	}
	if err := checkListen(c.Listen); err != nil {
		errs = append(errs, fmt.Errorf("listen: %w", err))
	}
	if c.TLSListen != "" {
		if err := checkListen(c.TLSListen); err != nil {
			errs = append(errs, fmt.Errorf("tls_listen: %w", err))
		}
		if c.CertFile == "" {
			errs = append(errs, errors.New("cert_file: required with tls_listen"))
		}
		if c.KeyFile == "" {
			errs = append(errs, errors.New("key_file: required with tls_listen"))
		}
		// Loaded here, so that validate and a reload refuse a pair the
		// listener could not start with (nginx -t loads them too).
		c.servedCerts = nil
		if c.CertFile != "" && c.KeyFile != "" {
			if pair, err := loadPair(c.CertFile, c.KeyFile); err != nil {
				errs = append(errs, fmt.Errorf("cert_file: %w", err))
			} else {
				c.servedCerts = append(c.servedCerts, servedCert{"cert_file", c.CertFile, pair})
			}
		}
		for i, cp := range c.Certs {
			switch {
			case cp.CertFile == "" || cp.KeyFile == "":
				errs = append(errs, fmt.Errorf("certs[%d]: cert_file and key_file are both required", i))
			default:
				pair, err := loadPair(cp.CertFile, cp.KeyFile)
				if err != nil {
					errs = append(errs, fmt.Errorf("certs[%d].cert_file: %w", i, err))
					break
				}
				c.servedCerts = append(c.servedCerts, servedCert{fmt.Sprintf("certs[%d].cert_file", i), cp.CertFile, pair})
				if len(pair.Leaf.DNSNames) == 0 && len(pair.Leaf.IPAddresses) == 0 {
					// Chosen by SNI name, which is matched against the
					// certificate's DNS names only (as clients check it).
					errs = append(errs, fmt.Errorf("certs[%d].cert_file: %s names no DNS name (subject alternative name; a common name alone is not matched), so no client would get it", i, cp.CertFile))
				}
			}
		}
		switch c.TLSMinVersion {
		case "", "1.2", "1.3":
		default:
			errs = append(errs, fmt.Errorf("tls_min_version: %q: want \"1.2\" or \"1.3\"", c.TLSMinVersion))
		}
		errs = append(errs, c.clientCertsAndHSTS()...)
	} else {
		if len(c.Certs) > 0 {
			errs = append(errs, errors.New("certs: only with tls_listen"))
		}
		if c.TLSMinVersion != "" {
			errs = append(errs, errors.New("tls_min_version: only with tls_listen"))
		}
		for _, k := range []struct {
			key string
			set bool
		}{
			{"client_ca_file", c.ClientCAFile != ""}, {"client_auth", c.ClientAuth != ""},
			{"client_crl_file", c.ClientCRLFile != ""},
			{"redirect_https", c.RedirectHTTPS}, {"hsts_max_age", c.HSTSMaxAge != 0},
			{"hsts_include_subdomains", c.HSTSIncludeSubdomains},
		} {
			if k.set {
				errs = append(errs, fmt.Errorf("%s: only with tls_listen", k.key))
			}
		}
	}
	if v := c.Via; v != "" && v != ViaOff && !isToken(v) && !validOriginHost(v) {
		errs = append(errs, fmt.Errorf("via: %q: want a name (a token: letters, digits, - . _) or host[:port], or %q", v, ViaOff))
	}
	c.ridAnswers = c.RequestIDInAnswers == nil || *c.RequestIDInAnswers
	switch c.RequestID {
	case "":
		c.RequestID = "X-Request-Id"
		c.ridKey = c.RequestID
	case RequestIDOff:
		c.ridKey = ""
	default:
		k := textproto.CanonicalMIMEHeaderKey(c.RequestID)
		switch {
		case !isToken(c.RequestID):
			errs = append(errs, fmt.Errorf("request_id: %q is not a header name (want X-Request-Id, or %q for none)", c.RequestID, RequestIDOff))
		case isHop(k) || k == "Host" || k == "Content-Length" || k == "Content-Type" || strings.HasPrefix(k, "X-Forwarded-") ||
			k == "Forwarded" || k == "X-Real-Ip" || k == "Cookie" || k == "Set-Cookie" || k == "Authorization":
			errs = append(errs, fmt.Errorf("request_id: %s is a header the proxy or HTTP itself uses; name another (X-Request-Id, X-Correlation-Id)", k))
		default:
			c.ridKey = k
		}
	}
	switch v := strings.ToLower(strings.TrimSpace(c.AccessLog)); {
	case c.AccessLog == "", c.AccessLog == "stdout", c.AccessLog == "stderr":
	case v == "stdout" || v == "stderr":
		errs = append(errs, fmt.Errorf("access_log: %q: write %s (lower case, no spaces) for the standard stream, or a file path", c.AccessLog, v))
	default:
		if fi, err := os.Stat(filepath.Dir(c.AccessLog)); err != nil || !fi.IsDir() {
			errs = append(errs, fmt.Errorf("access_log: %s: its directory %s does not exist", c.AccessLog, filepath.Dir(c.AccessLog)))
			break
		}
		// Opened (and created) as the proxy will, so a config that
		// validates also starts (nginx -t opens its logs too).
		f, err := os.OpenFile(c.AccessLog, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
		if err != nil {
			errs = append(errs, fmt.Errorf("access_log: %w", err))
		} else {
			f.Close()
		}
	}
	if c.AccessLogQuery && c.AccessLog == "" {
		errs = append(errs, errors.New("access_log_query: only with access_log"))
	}
	if c.MaxHeaderBytes == 0 {
		c.MaxHeaderBytes = 64 << 10
	}
	if c.MaxBody == 0 {
		c.MaxBody = 10 << 20
	}
	if c.ReadHeaderTimeout == 0 {
		c.ReadHeaderTimeout = 10 * time.Second
	}
	switch c.RequestBuffering {
	case "":
		c.RequestBuffering = RequestBufferingOn
	case RequestBufferingOn, RequestBufferingOff:
	default:
		errs = append(errs, fmt.Errorf("request_buffering: %q: %w", c.RequestBuffering, ErrRequestBuffering))
	}
	if c.BodyTempDir != "" {
		if fi, err := os.Stat(c.BodyTempDir); err != nil {
			errs = append(errs, fmt.Errorf("body_temp_dir: %w", err))
		} else if !fi.IsDir() {
			errs = append(errs, fmt.Errorf("body_temp_dir: %s: not a directory", c.BodyTempDir))
		}
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = 60 * time.Second
	}
	var perrs []error
	c.ppFrom, perrs = parsePrefixes("proxy_protocol_from", c.ProxyProtocolFrom)
	errs = append(errs, perrs...)
	c.trusted, perrs = parsePrefixes("trusted_proxies", c.TrustedProxies)
	errs = append(errs, perrs...)
	c.clientIPKey = "X-Forwarded-For"
	switch ch := c.ClientIPHeader; {
	case ch == "":
	case !isToken(ch) || isHop(textproto.CanonicalMIMEHeaderKey(ch)):
		errs = append(errs, fmt.Errorf("client_ip_header: %q: want a header field name (X-Forwarded-For, CF-Connecting-IP, True-Client-IP, …)", ch))
	case len(c.TrustedProxies) == 0:
		errs = append(errs, errors.New("client_ip_header: only with trusted_proxies (the addresses allowed to set it)"))
	default:
		c.clientIPKey = textproto.CanonicalMIMEHeaderKey(ch)
	}
	switch {
	case c.ProxyProtocol && len(c.ProxyProtocolFrom) == 0:
		errs = append(errs, errors.New("proxy_protocol_from: required with proxy_protocol: the addresses of the load balancers that send PROXY protocol headers (a header from anyone else could claim any client address)"))
	case !c.ProxyProtocol && len(c.ProxyProtocolFrom) > 0:
		errs = append(errs, errors.New("proxy_protocol_from: only with proxy_protocol: true"))
	}
	switch {
	case c.KeepaliveTime < 0:
		errs = append(errs, fmt.Errorf("keepalive_time: %s: must not be negative (unset: 1h; 0 turns the limit off)", c.KeepaliveTime))
	case c.KeepaliveTime == 0 && !c.set.Has("keepalive_time"):
		c.KeepaliveTime = DefaultKeepaliveTime
	}
	if c.KeepaliveRequests < 0 {
		errs = append(errs, fmt.Errorf("keepalive_requests: %d: must not be negative (unset: 0, no limit)", c.KeepaliveRequests))
	}
	switch {
	case c.MaxClientConns == 0:
		c.MaxClientConns = DefaultMaxClientConns
	case c.MaxClientConns < 0:
		errs = append(errs, fmt.Errorf("max_client_conns: %d: must be positive (unset: %d)", c.MaxClientConns, DefaultMaxClientConns))
	}
	switch {
	case c.MaxConnsPerClient < 0:
		errs = append(errs, fmt.Errorf("max_conns_per_client: %d: must not be negative (unset: max_client_conns / 10, at least 100; 0 turns it off)", c.MaxConnsPerClient))
	case c.MaxConnsPerClient == 0 && !c.set.Has("max_conns_per_client"):
		c.MaxConnsPerClient = max(100, c.MaxClientConns/10)
	}
	if c.VerdictPoll == 0 {
		c.VerdictPoll = 2 * time.Second
	}
	switch {
	case c.SendTimeout == 0:
		c.SendTimeout = 60 * time.Second
	case c.SendTimeout < 0:
		// There is no "off": a client that never reads would hold its
		// origin connection for good.
		errs = append(errs, fmt.Errorf("send_timeout: %s: must be positive (unset: 60s)", c.SendTimeout))
	}
	switch c.Engine {
	case "":
		c.Engine = EngineFast
	case EngineFast, EngineStdlib:
	default:
		errs = append(errs, fmt.Errorf("engine: %q: %w", c.Engine, ErrUnknownEngine))
	}
	if c.SignalWindow == 0 {
		c.SignalWindow = 10 * time.Second
	}
	for k, d := range map[string]time.Duration{"read_header_timeout": c.ReadHeaderTimeout,
		"idle_timeout": c.IdleTimeout, "read_timeout": c.ReadTimeout, "write_timeout": c.WriteTimeout,
		"verdict_poll": c.VerdictPoll, "signal_window": c.SignalWindow} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("%s: must not be negative", k))
		}
	}
	if len(c.Pools) == 0 {
		errs = append(errs, fmt.Errorf("pools: %w", ErrNoPools))
	}
	names := map[string]bool{}
	type routeOf struct {
		pool, host string // the pool's name and its hosts entry as written
		anyHost    bool   // the pool gives no hosts
	}
	routes := map[string]routeOf{}
	for i := range c.Pools {
		p := &c.Pools[i]
		key := fmt.Sprintf("pools[%d]", i)
		// A pool with an error of its own still has its name, routes and
		// origins checked against the others, so that one run lists every
		// error.
		if err := p.ValidateAndSetDefaults(); err != nil {
			errs = append(errs, units.Prefix(key, err))
		}
		if p.RequestBuffering == "" {
			p.RequestBuffering = c.RequestBuffering
		}
		switch {
		case p.QueueTimeout < 0:
			errs = append(errs, fmt.Errorf("%s.queue_timeout: %s: must not be negative (unset: %s; 0 answers 503 at once)", key, p.QueueTimeout, DefaultQueueTimeout))
		case p.QueueTimeout == 0 && !c.set.Has(key+".queue_timeout"):
			p.QueueTimeout = DefaultQueueTimeout
		}
		p.spool, p.spoolDir = p.RequestBuffering == RequestBufferingOn, c.BodyTempDir
		if p.Name != "" {
			if names[p.Name] {
				errs = append(errs, fmt.Errorf("%s.name: %q: %w pool name", key, p.Name, ErrDuplicate))
			}
			names[p.Name] = true
		}
		for j, h := range p.Hosts {
			hp, err := parseHostPattern(h)
			if err != nil {
				continue // reported by the pool
			}
			// Keyed as requests are matched: case and a trailing dot
			// ignored (hostOf), so "SHOP.test." is "shop.test".
			r := hp.key() + " " + p.PathPrefix
			if other, ok := routes[r]; ok && p.anyHost {
				// The user wrote no hosts: say so rather than name a
				// hosts[0] that is not in the file.
				both := ""
				if other.anyHost {
					both = " (which gives no hosts either)"
				}
				errs = append(errs, fmt.Errorf("%s: %w route: no hosts, so every host (\"*\"), with path_prefix %q, as pool %q%s; this pool would never get a request: give one of the two pools hosts or another path_prefix",
					key, ErrDuplicate, p.PathPrefix, other.pool, both))
				continue
			} else if ok {
				same := ""
				if other.host != h {
					same = fmt.Sprintf(" as %q: host names match in any case and without a trailing dot", other.host)
				}
				errs = append(errs, fmt.Errorf("%s.hosts: %q with path_prefix %q: %w route (pool %q%s); hosts[%d] of this pool would never get a request",
					key, h, p.PathPrefix, ErrDuplicate, other.pool, same, j))
				continue
			}
			routes[r] = routeOf{p.Name, h, p.anyHost}
		}
		for j := range p.Origins {
			o := &p.Origins[j]
			if o.u == nil {
				continue // reported by the pool
			}
			for _, l := range []struct{ key, addr string }{{"listen", c.Listen}, {"tls_listen", c.TLSListen}} {
				if l.addr != "" && isOwnAddress(l.addr, o.u) {
					k := "url"
					if o.Target != "" {
						k = "target"
					}
					errs = append(errs, fmt.Errorf("%s.origins[%d].%s: %q (%s) %w %s %s: a request sent there comes back to the proxy, which sends it there again, until max_client_conns fills; name the origin's own address",
						key, j, k, units.RedactURL(o.URL), o.u.Host, ErrOriginIsProxy, l.key, l.addr))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// ErrOriginIsProxy is returned for an origin whose address is one of the
// proxy's own listeners.
var ErrOriginIsProxy = errors.New("is this proxy's own")

// isOwnAddress reports whether an origin at u reaches the listener at
// listen (listen or tls_listen): the same host and port, or, for a
// listener on every address (0.0.0.0:P, [::]:P, :P), a loopback address,
// an unspecified one or localhost at port P. A listen address that names
// another host (or port 0) never matches: a name other than localhost is
// not resolved here.
func isOwnAddress(listen string, u *url.URL) bool {
	lh, lp, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	lport, err := net.LookupPort("tcp", lp)
	if err != nil || lport == 0 {
		return false
	}
	op := u.Port()
	if op == "" {
		op = "80"
		if u.Scheme == "https" {
			op = "443"
		}
	}
	if n, err := strconv.Atoi(op); err != nil || n != lport {
		return false
	}
	oh := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	lh = strings.ToLower(strings.TrimSuffix(lh, "."))
	if oh == lh {
		return true
	}
	oa, oerr := netip.ParseAddr(oh)
	la, lerr := netip.ParseAddr(lh)
	if oerr == nil && lerr == nil && oa.WithZone("").Unmap() == la.WithZone("").Unmap() {
		return true
	}
	everywhere := lh == "" || lerr == nil && la.IsUnspecified()
	// Connecting to 0.0.0.0 or :: reaches this host too.
	local := oh == "localhost" || oerr == nil && (oa.Unmap().IsLoopback() || oa.IsUnspecified())
	return everywhere && local
}

// ValidateAndSetDefaults fills defaults and validates one pool.
func (p *PoolConfig) ValidateAndSetDefaults() error {
	var errs []error
	if p.Name == "" {
		errs = append(errs, errors.New("name: required"))
	}
	if len(p.Hosts) == 0 || p.anyHost {
		p.Hosts, p.anyHost = []string{"*"}, true
	}
	p.hosts = p.hosts[:0]
	for i, h := range p.Hosts {
		hp, err := parseHostPattern(h)
		if err != nil {
			errs = append(errs, fmt.Errorf("hosts[%d]: %w", i, err))
			continue
		}
		p.hosts = append(p.hosts, hp)
	}
	switch p.RequestBuffering {
	case "", RequestBufferingOn, RequestBufferingOff:
		// "" takes the proxy's request_buffering (Config.ValidateAndSetDefaults
		// sets it, and spool, for every pool).
	default:
		errs = append(errs, fmt.Errorf("request_buffering: %q: %w", p.RequestBuffering, ErrRequestBuffering))
	}
	if p.PathPrefix == "" {
		p.PathPrefix = "/"
	}
	if err := checkPathPrefix(p.PathPrefix); err != nil {
		errs = append(errs, fmt.Errorf("path_prefix: %q: %w", p.PathPrefix, err))
	}
	if p.Policy == "" {
		p.Policy = PolicyRoundRobin
	}
	switch p.Policy {
	case PolicyRoundRobin, PolicyLeastConn, PolicyHash, PolicyIPHash, PolicyFirst:
	default:
		errs = append(errs, fmt.Errorf("policy: %q: %w (want round_robin, least_conn, hash, ip_hash or first)", p.Policy, ErrUnknownPolicy))
	}
	if err := p.Hash.validate(); err != nil {
		errs = append(errs, units.Prefix("hash", err))
	} else {
		p.hashKey = parseHashKey(p.Hash.Key)
	}
	switch {
	case len(p.Origins) == 0:
		errs = append(errs, fmt.Errorf("origins: %w", ErrNoOrigins))
	case len(p.Origins) > 64:
		errs = append(errs, fmt.Errorf("origins: %w", ErrTooManyOrigins))
	}
	seen := map[string]bool{}
	for i := range p.Origins {
		o := &p.Origins[i]
		if err := o.ValidateAndSetDefaults(); err != nil {
			errs = append(errs, units.Prefix(fmt.Sprintf("origins[%d]", i), err))
			continue
		}
		if o.Name() == noOrigin {
			key := "target"
			if o.Target == "" {
				key = "url"
			}
			errs = append(errs, fmt.Errorf("origins[%d].%s: origin name %q %w", i, key, o.Name(), ErrReservedName))
		}
		if seen[o.u.String()] {
			errs = append(errs, fmt.Errorf("origins[%d].url: %q: %w origin in pool", i, o.URL, ErrDuplicate))
		}
		seen[o.u.String()] = true
	}
	if err := p.Verdicts.validate(); err != nil {
		errs = append(errs, units.Prefix("verdicts", err))
	}
	p.checkSet, p.tierSet = toSet(p.Verdicts.Checks), toSet(p.Verdicts.Tiers)
	if err := p.Passive.ValidateAndSetDefaults(); err != nil {
		errs = append(errs, units.Prefix("passive", err))
	}
	if p.MaxEjected == 0 && !p.noEject {
		p.MaxEjected = 50
	}

	if err := p.Retry.ValidateAndSetDefaults(); err != nil {
		errs = append(errs, units.Prefix("retry", err))
	}
	if p.SlowStart < 0 {
		errs = append(errs, errors.New("slow_start: must not be negative"))
	}
	if p.TunnelIdleTimeout == 0 {
		p.TunnelIdleTimeout = DefaultTunnelIdleTimeout
	}
	if p.TunnelIdleTimeout < 0 {
		errs = append(errs, fmt.Errorf("tunnel_idle_timeout: must be positive, got %s", p.TunnelIdleTimeout))
	}
	if p.BodyTimeout == 0 {
		p.BodyTimeout = DefaultBodyTimeout
	}
	if p.BodyTimeout < 0 {
		errs = append(errs, fmt.Errorf("body_timeout: must be positive, got %s", p.BodyTimeout))
	}
	if p.OriginIdleTimeout == 0 {
		p.OriginIdleTimeout = DefaultOriginIdleTimeout
	}
	if p.Passive.ReturnProbe == ReturnProbeGRPC && p.OriginProtocol != OriginHTTP2 {
		errs = append(errs, fmt.Errorf("passive.return_probe: grpc needs origin_protocol: %s (gRPC servers speak HTTP/2)", OriginHTTP2))
	}
	switch p.OriginProtocol {
	case "":
		p.OriginProtocol = OriginHTTP1
	case OriginHTTP1, OriginHTTP2:
	default:
		errs = append(errs, fmt.Errorf("origin_protocol: %q: want %q or %q", p.OriginProtocol, OriginHTTP1, OriginHTTP2))
	}
	if p.OriginIdleTimeout < 0 {
		errs = append(errs, fmt.Errorf("origin_idle_timeout: must be positive, got %s", p.OriginIdleTimeout))
	}
	if p.ConnectTimeout == 0 {
		p.ConnectTimeout = DefaultConnectTimeout
		p.connectDefault = true
	}
	if p.ConnectTimeout < 0 {
		errs = append(errs, errors.New("connect_timeout: must not be negative"))
	}
	if err := p.RequestHeaders.validate(); err != nil {
		errs = append(errs, units.Prefix("request_headers", err))
	}
	p.TLS.hostName = ""
	if h := p.OriginHost; h != "" {
		if !validOriginHost(h) {
			errs = append(errs, fmt.Errorf("origin_host: %q: want a host name or address, with a port if it needs one (bucket.s3.example, example.com:8443, [2001:db8::1]:80)", h))
		} else {
			p.TLS.hostName = hostOf(h)
		}
	}
	if err := p.TLS.validateAndLoad(); err != nil {
		errs = append(errs, units.Prefix("tls", err))
	}
	if p.Retry.TryTimeout > 0 && p.ConnectTimeout > p.Retry.TryTimeout {
		// Says which of the two the file did not set: a user who wrote
		// only try_timeout should not be told of a connect_timeout.
		try := p.Retry.TryTimeout.String()
		if p.Retry.tryDefault {
			try += " (the default)"
		}
		if p.connectDefault {
			errs = append(errs, fmt.Errorf("connect_timeout: %s (the default) is longer than retry.try_timeout %s: raise try_timeout or set connect_timeout", p.ConnectTimeout, try))
		} else {
			errs = append(errs, fmt.Errorf("connect_timeout: %s is longer than retry.try_timeout %s: lower connect_timeout or raise try_timeout", p.ConnectTimeout, try))
		}
	}
	return errors.Join(errs...)
}

// ValidateAndSetDefaults checks the URL and fills the weight.
func (o *OriginConfig) ValidateAndSetDefaults() error {
	var errs []error
	o.u = nil // set again below when URL is valid
	if o.Weight == 0 {
		o.Weight = 1
	}
	if o.Weight < 1 || o.Weight > 1000 {
		errs = append(errs, fmt.Errorf("weight: %d: want 1..1000", o.Weight))
	}
	if o.MaxConns < 0 {
		errs = append(errs, fmt.Errorf("max_conns: %d: must not be negative", o.MaxConns))
	}
	if o.URL == "" {
		errs = append(errs, fmt.Errorf("url: %w", ErrNoURL))
		return errors.Join(errs...)
	}
	u, err := url.Parse(o.URL)
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("url: %q: not a URL", units.RedactURL(o.URL)))
	case u.Scheme != "http" && u.Scheme != "https":
		errs = append(errs, fmt.Errorf("url: %q: want http:// or https://", units.RedactURL(o.URL)))
	case u.Host == "":
		errs = append(errs, fmt.Errorf("url: %q: no host", units.RedactURL(o.URL)))
	case u.User != nil:
		// Quoted with the user info in place (the password as "…"), since
		// that is what is wrong; units.RedactURL would drop it.
		info := "…"
		if _, ok := u.User.Password(); ok {
			info = u.User.Username() + ":…"
		}
		shown := strings.Replace(units.RedactURL(o.URL), "://", "://"+info+"@", 1)
		errs = append(errs, fmt.Errorf("url: %q: user info (user:password@) is not allowed: the proxy sends an origin no credentials of its own (clients' Authorization headers pass through)", shown))
	case u.Path != "" && u.Path != "/", u.RawQuery != "":
		errs = append(errs, fmt.Errorf("url: %q: only scheme://host[:port] is allowed", units.RedactURL(o.URL)))
	default:
		u.Path = ""
		o.u = u
	}
	return errors.Join(errs...)
}

func (h *HashConfig) validate() error {
	var errs []error
	if h.Key == "" {
		h.Key = "client_ip"
	}
	if parseHashKey(h.Key).kind == 0 {
		kind, name, _ := strings.Cut(h.Key, ":")
		if (kind == "header" || kind == "cookie") && name != "" {
			errs = append(errs, fmt.Errorf("key: %q: %q is not a valid %s name (a token: no spaces, colons or quotes): %w", h.Key, name, kind, ErrBadHashKey))
		} else {
			errs = append(errs, fmt.Errorf("key: %q: %w", h.Key, ErrBadHashKey))
		}
	}
	if h.BoundedLoad == 0 {
		h.BoundedLoad = 1.25
	}
	if h.BoundedLoad < 1 {
		errs = append(errs, fmt.Errorf("bounded_load: %g: must be ≥ 1", h.BoundedLoad))
	}
	return errors.Join(errs...)
}

func (v *VerdictConfig) validate() error {
	var errs []error
	if v.Quorum == 0 {
		v.Quorum = 1
	}
	if v.Quorum < 1 {
		errs = append(errs, fmt.Errorf("quorum: %d: must be ≥ 1", v.Quorum))
	}
	if v.MaxAge == 0 {
		v.MaxAge = 60 * time.Second
	}
	if v.MaxAge < 0 {
		errs = append(errs, errors.New("max_age: must not be negative"))
	}
	return errors.Join(errs...)
}

// ValidateAndSetDefaults fills the detector's defaults.
func (p *PassiveConfig) ValidateAndSetDefaults() error {
	var errs []error
	if p.Consecutive5xx == 0 {
		p.Consecutive5xx = 5
	}
	if p.Consecutive5xx < -1 {
		errs = append(errs, errors.New("consecutive_5xx: want ≥ 1, or -1 for off"))
	}
	if p.Window == 0 {
		p.Window = 30 * time.Second
	}
	if p.Window < 0 {
		errs = append(errs, errors.New("window: must not be negative"))
	}
	if p.MinRequests == 0 {
		p.MinRequests = 20
	}
	if p.MinRequests < 1 {
		errs = append(errs, errors.New("min_requests: must be ≥ 1"))
	}
	if p.SuccessRateStdev == 0 {
		p.SuccessRateStdev = 1.9
	}
	if p.SuccessRateStdev < 0 && p.SuccessRateStdev != -1 {
		errs = append(errs, errors.New("success_rate_stdev: want > 0, or -1 for off"))
	}
	if p.SuccessRateMinHosts == 0 {
		p.SuccessRateMinHosts = DefaultSuccessRateMinHosts
	}
	if p.SuccessRateMinHosts < 3 {
		errs = append(errs, fmt.Errorf("success_rate_min_hosts: %d: want ≥ 3 (the median and spread of fewer origins cannot single one out; success_rate_stdev: -1 turns the rule off)", p.SuccessRateMinHosts))
	}
	if p.SuccessRateMinRequests == 0 {
		p.SuccessRateMinRequests = max(DefaultSuccessRateMinRequests, p.MinRequests)
	}
	if p.SuccessRateMinRequests < 1 {
		errs = append(errs, fmt.Errorf("success_rate_min_requests: %d: must be ≥ 1", p.SuccessRateMinRequests))
	}
	if p.LatencyP95 < 0 {
		errs = append(errs, errors.New("latency_p95: must not be negative"))
	}
	if p.Ejection == 0 {
		p.Ejection = 30 * time.Second
	}
	if p.MaxEjection == 0 {
		p.MaxEjection = 300 * time.Second
	}
	if p.Ejection < 0 {
		errs = append(errs, errors.New("ejection: must not be negative"))
	}
	if p.MaxEjection < p.Ejection {
		errs = append(errs, fmt.Errorf("max_ejection: %s is shorter than ejection %s", p.MaxEjection, p.Ejection))
	}
	if p.GRPCFailureStatuses == nil {
		p.GRPCFailureStatuses = []string{"UNAVAILABLE"}
	}
	if p.ReturnProbe == "" {
		p.ReturnProbe = "/"
	}
	if p.ReturnProbeInterval == 0 {
		p.ReturnProbeInterval = time.Second
	}
	if p.ReturnProbeInterval < 0 {
		errs = append(errs, fmt.Errorf("return_probe_interval: must be positive, got %s", p.ReturnProbeInterval))
	}
	if h := p.ReturnProbeHost; h != "" && !validOriginHost(h) {
		errs = append(errs, fmt.Errorf("return_probe_host: %q: want a host name or address, with a port if it needs one (example.com, example.com:8443, [2001:db8::1]:80)", h))
	}
	if p.ReturnProbe != ReturnProbeOff && p.ReturnProbe != ReturnProbeGRPC {
		if u, err := url.ParseRequestURI(p.ReturnProbe); err != nil || !strings.HasPrefix(p.ReturnProbe, "/") || strings.HasPrefix(p.ReturnProbe, "//") ||
			u.Host != "" || strings.ContainsAny(p.ReturnProbe, " #") || strings.IndexByte(u.Path, 0) >= 0 {
			errs = append(errs, fmt.Errorf("return_probe: %q: want a path starting with / (a query is allowed), %q (the gRPC health service), or %q for no probe", p.ReturnProbe, ReturnProbeGRPC, ReturnProbeOff))
		}
	}
	p.grpcFail = 0
	for i, s := range p.GRPCFailureStatuses {
		code := -1
		for n, name := range grpchealth.CodeNames {
			if strings.EqualFold(strings.TrimSpace(s), name) || strings.TrimSpace(s) == strconv.Itoa(n) {
				code = n
			}
		}
		switch code {
		case -1:
			errs = append(errs, fmt.Errorf("grpc_failure_statuses[%d]: %q is not a gRPC status: want a name such as UNAVAILABLE or INTERNAL, or a number 1 to 16", i, s))
		case 0:
			errs = append(errs, fmt.Errorf("grpc_failure_statuses[%d]: OK (0) is success, not a failure", i))
		default:
			p.grpcFail |= 1 << code
		}
	}
	return errors.Join(errs...)
}

// ValidateAndSetDefaults fills the retry defaults.
func (r *RetryConfig) ValidateAndSetDefaults() error {
	var errs []error
	if r.Tries == 0 {
		r.Tries = 3
	}
	if r.Tries < 1 || r.Tries > 64 {
		errs = append(errs, fmt.Errorf("tries: %d: want 1..64", r.Tries))
	}
	if r.TryTimeout == 0 {
		r.TryTimeout = 15 * time.Second
		r.tryDefault = true
	}
	if r.Budget == 0 {
		r.Budget = 30 * time.Second
	}
	if r.TryTimeout < 0 || r.Budget < 0 {
		errs = append(errs, errors.New("try_timeout, budget: must not be negative"))
	}
	if r.Budget < r.TryTimeout {
		errs = append(errs, fmt.Errorf("budget: %s is shorter than try_timeout %s", r.Budget, r.TryTimeout))
	}
	if r.RetryBudget == 0 {
		r.RetryBudget = 20
	}
	if r.MaxBufferedBody == 0 {
		r.MaxBufferedBody = 64 << 10
	}
	if r.MaxBufferedBody < 0 {
		errs = append(errs, errors.New("max_buffered_body: must not be negative"))
	}
	switch r.OnEjection {
	case "":
		r.OnEjection = OnEjectionResend
	case OnEjectionResend, OnEjectionWait:
	default:
		errs = append(errs, fmt.Errorf("on_ejection: %q: want %s or %s", r.OnEjection, OnEjectionResend, OnEjectionWait))
	}
	return errors.Join(errs...)
}

// Values of RetryConfig.OnEjection.
const (
	OnEjectionResend = "resend"
	OnEjectionWait   = "wait"
)

// ErrUncleanPrefix is returned for a path_prefix that no routed request
// path can start with, as written.
var ErrUncleanPrefix = errors.New("not a clean path")

// checkPathPrefix rejects a path_prefix that no request could reach: the
// router matches the decoded path after routePath cleaned it (path
// parameters dropped, dot segments resolved, repeated slashes merged), so
// a prefix must be written that way too ("/v1/../v2" and "/api//" never
// match; "/%61bc" would match only a request for "/%2561bc"). The error
// says what to write instead. A prefix is not rewritten: what the file says
// is what is routed.
func checkPathPrefix(pfx string) error {
	if !strings.HasPrefix(pfx, "/") {
		return errors.New("must start with /")
	}
	want, decoded := unescapeValid(pfx)
	if strings.IndexByte(want, 0) >= 0 {
		return errors.New("%00: a request path with a NUL gets 400, never routed")
	}
	c, ok := routePath(want)
	switch {
	case !ok:
		return fmt.Errorf("%w: a segment that is . or .. once its path parameters (;…) are dropped gets 400, never routed", ErrUncleanPrefix)
	case decoded:
		return fmt.Errorf("%w: percent-encoded, but request paths are matched decoded (and cleaned): write %q", ErrUncleanPrefix, c)
	case c != pfx:
		return fmt.Errorf("%w (request paths are matched after cleaning: path parameters dropped, dot segments resolved, repeated slashes merged): write %q", ErrUncleanPrefix, c)
	}
	return nil
}

// unescapeValid decodes each %XX escape of s (X a hex digit) and keeps a
// '%' that starts none, which can only be a literal '%' of a decoded path;
// decoded reports whether s held an escape.
func unescapeValid(s string) (out string, decoded bool) {
	if strings.IndexByte(s, '%') < 0 {
		return s, false
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && ishex(s[i+1]) && ishex(s[i+2]) {
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
			decoded = true
			continue
		}
		b = append(b, s[i])
	}
	return string(b), decoded
}

func ishex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// checkListen rejects a listen address that net.Listen would refuse:
// not host:port, or a port that is neither 0..65535 nor a known service name.
func checkListen(addr string) error { return units.CheckListen(addr, "") }

func toSet(xs []string) map[string]bool {
	if len(xs) == 0 {
		return nil
	}
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// hostPattern is a compiled Hosts entry.
type hostPattern struct {
	any    bool   // "*"
	suffix string // ".example.com" for "*.example.com"
	exact  string
}

func parseHostPattern(h string) (hostPattern, error) {
	h = strings.ToLower(strings.TrimSpace(h))
	switch {
	case h == "*":
		return hostPattern{any: true}, nil
	case h == "":
		return hostPattern{}, errors.New("empty host")
	case strings.HasPrefix(h, "*."):
		name := h[2:]
		if strings.Contains(name, "*") || name == "" {
			return hostPattern{}, fmt.Errorf("%q: only a leading \"*.\" wildcard is allowed", h)
		}
		if err := hostLabels(h, name); err != nil {
			return hostPattern{}, err
		}
		// A request's host is matched without its trailing dot (hostOf).
		return hostPattern{suffix: "." + strings.TrimSuffix(name, ".")}, nil
	}
	if err := hostLabels(h, h); err != nil {
		return hostPattern{}, err
	}
	return hostPattern{exact: strings.TrimSuffix(h, ".")}, nil
}

// hostLabels rejects a name of a hosts entry h that no request's host
// could match: a port, a scheme, a '*' past the leading "*.", or an empty
// label (a leading dot, "..": validHost refuses such a Host with 400).
// One trailing dot is allowed (the fully qualified form).
func hostLabels(h, name string) error {
	if strings.ContainsAny(name, "*/: ") {
		return fmt.Errorf("%q: want a host name (no port, no scheme), \"*.domain\" or \"*\"", h)
	}
	n := strings.TrimSuffix(name, ".")
	if h == name && len(n) > 1 && n[0] == '.' && n[1] != '.' && !strings.Contains(n, "..") {
		return fmt.Errorf("%q: a leading dot: write %q for its subdomains, or %q for the name itself", h, "*"+n, n[1:])
	}
	if n == "" || n[0] == '.' || strings.Contains(n, "..") {
		return fmt.Errorf("%q: an empty label (a leading dot, \"..\" or a lone dot): no request's Host can match it", h)
	}
	return nil
}

// match reports whether host (lower-case, no port) matches.
func (hp hostPattern) match(host string) bool {
	switch {
	case hp.any:
		return true
	case hp.suffix != "":
		return len(host) > len(hp.suffix) && strings.HasSuffix(host, hp.suffix)
	}
	return host == hp.exact
}

// key is the pattern as it matches: "*", "*.example.com" or "example.com".
func (hp hostPattern) key() string {
	switch {
	case hp.any:
		return "*"
	case hp.suffix != "":
		return "*" + hp.suffix
	}
	return hp.exact
}

// rank orders patterns: exact before wildcard before "*".
func (hp hostPattern) rank() int {
	switch {
	case hp.any:
		return 0
	case hp.suffix != "":
		return 1 + len(hp.suffix)
	}
	return 1 << 20
}

// validOriginHost reports whether h can be sent as an origin's Host: a
// host name or address with an optional port, no wildcard, path or user.
func validOriginHost(h string) bool {
	return httpguts.ValidHostHeader(h) && !strings.ContainsAny(h, "/*@?#") && strings.TrimSpace(h) == h && validHost(h)
}

// hashKey is a compiled HashConfig.Key.
type hashKey struct {
	// 0 invalid, 1 header, 2 cookie, 3 path, 4 client_ip, 5 uri, 6 host
	// (header:Host: Go keeps the request's host in r.Host, not r.Header)
	kind int
	name string
}

// parseHashKey compiles a hash.key; kind 0 when it is not one. A header
// or cookie name must be a token (RFC 9110 §5.1, RFC 6265 §4.1.1): a
// name with a space or a colon matches no field, and every request would
// be spread at random.
func parseHashKey(k string) hashKey {
	switch {
	case k == "path":
		return hashKey{kind: 3}
	case k == "uri":
		return hashKey{kind: 5}
	case k == "client_ip":
		return hashKey{kind: 4}
	case strings.HasPrefix(k, "header:") && isToken(k[7:]):
		if strings.EqualFold(k[7:], "Host") {
			return hashKey{kind: 6}
		}
		return hashKey{kind: 1, name: k[7:]}
	case strings.HasPrefix(k, "cookie:") && isToken(k[7:]):
		return hashKey{kind: 2, name: k[7:]}
	}
	return hashKey{}
}

// OriginTLSConfig configures TLS to a pool's https:// origins. Verification
// is on by default against the system's CAs and the origin URL's host.
type OriginTLSConfig struct {
	// CAFile is a PEM file of CAs to trust instead of the system pool (an
	// internal CA).
	CAFile string `mapstructure:"ca_file"`
	// ServerName is the SNI name sent and the name verified. Default: the
	// origin URL's host (for origins addressed by IP behind one name).
	ServerName string `mapstructure:"server_name"`
	// InsecureSkipVerify turns off chain and name verification.
	InsecureSkipVerify bool `mapstructure:"insecure_skip_verify"`
	// MinVersion is the lowest TLS version accepted: "1.2" (default) or "1.3".
	MinVersion string `mapstructure:"min_version"`
	// CertFile and KeyFile are a PEM client certificate and key presented to
	// origins that require one (mutual TLS). Both or neither.
	CertFile string `mapstructure:"cert_file"`
	KeyFile  string `mapstructure:"key_file"`

	roots  *x509.CertPool
	minVer uint16
	// hostName is the server name when ServerName is empty: the pool's
	// origin_host without port, else "" (the origin URL's host).
	hostName string
	certs    []tls.Certificate
}

// validateAndLoad reads the CA file and checks the version.
func (c *OriginTLSConfig) validateAndLoad() error {
	var errs []error
	switch c.MinVersion {
	case "", "1.2":
		c.minVer = tls.VersionTLS12
	case "1.3":
		c.minVer = tls.VersionTLS13
	default:
		errs = append(errs, fmt.Errorf("min_version: %q: want \"1.2\" or \"1.3\"", c.MinVersion))
	}
	c.roots = nil
	if c.CAFile != "" {
		var err error
		if c.roots, _, err = loadCAPool("ca_file", c.CAFile); err != nil {
			errs = append(errs, err)
		}
	}
	c.certs = nil
	switch {
	case c.CertFile != "" && c.KeyFile == "":
		errs = append(errs, errors.New("key_file: required with cert_file"))
	case c.CertFile == "" && c.KeyFile != "":
		errs = append(errs, errors.New("cert_file: required with key_file"))
	case c.CertFile != "":
		pair, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("cert_file: %s with key_file %s: %w", c.CertFile, c.KeyFile, err))
		} else {
			c.certs = []tls.Certificate{pair}
		}
	}
	return errors.Join(errs...)
}

// clientConfig is the tls.Config for a connection to host (the origin
// URL's host without port).
func (c *OriginTLSConfig) clientConfig(host string, h2 bool) *tls.Config {
	name := c.ServerName
	if name == "" {
		name = c.hostName
	}
	if name == "" {
		name = host
	}
	minVer := c.minVer
	if minVer == 0 {
		minVer = tls.VersionTLS12
	}
	protos := []string{"http/1.1"}
	if h2 {
		// An origin without h2 picks http/1.1 (one that enforces ALPN
		// would refuse a handshake offering h2 alone).
		protos = []string{"h2", "http/1.1"}
	}
	return &tls.Config{ServerName: name, RootCAs: c.roots, InsecureSkipVerify: c.InsecureSkipVerify,
		Certificates: c.certs, NextProtos: protos, MinVersion: minVer}
}

// clientCertsAndHSTS validates and loads client_ca_file, client_auth,
// client_crl_file and the HSTS keys (tls_listen is set).
func (c *Config) clientCertsAndHSTS() []error {
	var errs []error
	c.clientCAs, c.hsts = nil, nil
	c.clientRoots, c.clientCRL = nil, nil
	if c.ClientCAFile != "" {
		var err error
		if c.clientCAs, c.clientRoots, err = loadCAPool("client_ca_file", c.ClientCAFile); err != nil {
			errs = append(errs, err)
		}
	}
	switch {
	case c.ClientCRLFile != "" && c.ClientCAFile == "":
		errs = append(errs, errors.New("client_crl_file: only with client_ca_file (the CAs whose revoked client certificates it lists)"))
	case c.ClientCRLFile != "" && c.clientRoots != nil:
		var cas []*x509.Certificate
		for der := range c.clientRoots {
			if ca, err := x509.ParseCertificate([]byte(der)); err == nil {
				cas = append(cas, ca)
			}
		}
		var err error
		if c.clientCRL, err = loadClientCRL(c.ClientCRLFile, c.ClientCAFile, cas); err != nil {
			errs = append(errs, err)
		}
	}
	switch c.ClientAuth {
	case "", ClientAuthRequire, ClientAuthOptional:
		if c.ClientAuth != "" && c.ClientCAFile == "" {
			errs = append(errs, errors.New("client_auth: only with client_ca_file (the CA certificates client certificates are checked against)"))
		}
	default:
		errs = append(errs, fmt.Errorf("client_auth: %q: want %q or %q", c.ClientAuth, ClientAuthRequire, ClientAuthOptional))
	}
	if c.ClientCAFile != "" && c.ClientAuth == "" {
		c.ClientAuth = ClientAuthRequire
	}
	switch {
	case c.HSTSMaxAge < 0:
		errs = append(errs, fmt.Errorf("hsts_max_age: %s is negative", c.HSTSMaxAge))
	case c.HSTSMaxAge > 0 && c.HSTSMaxAge%time.Second != 0:
		errs = append(errs, fmt.Errorf("hsts_max_age: %s: whole seconds only (max-age counts seconds)", c.HSTSMaxAge))
	case c.HSTSMaxAge > 0:
		v := "max-age=" + strconv.FormatInt(int64(c.HSTSMaxAge/time.Second), 10)
		if c.HSTSIncludeSubdomains {
			v += "; includeSubDomains"
		}
		c.hsts = []string{v}
	case c.HSTSIncludeSubdomains:
		errs = append(errs, errors.New("hsts_include_subdomains: only with hsts_max_age"))
	}
	return errs
}

// pools[].origin_protocol values.
const (
	OriginHTTP1 = "http1"
	OriginHTTP2 = "http2"
)

// client_auth values.
const (
	ClientAuthRequire  = "require"
	ClientAuthOptional = "optional"
)

// loadCAPool reads a PEM file of CA certificates named by key, as
// x509.CertPool.AppendCertsFromPEM reads one (blocks that are not a
// certificate, or do not parse, are skipped), and returns the pool and the
// DER of each certificate in it. An error names the key and the file when
// it is unreadable or holds none.
func loadCAPool(key, path string) (*x509.CertPool, map[string]bool, error) {
	rest, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", key, err)
	}
	pool, ders := x509.NewCertPool(), map[string]bool{}
	for {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type != "CERTIFICATE" || len(b.Headers) != 0 {
			continue
		}
		cert, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			continue
		}
		pool.AddCert(cert)
		ders[string(cert.Raw)] = true
	}
	if len(ders) == 0 {
		return nil, nil, fmt.Errorf("%s: %s: no PEM certificate in it", key, path)
	}
	return pool, ders, nil
}
