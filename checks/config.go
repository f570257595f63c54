package checks

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-synthetics/vigil/reporting/units"
)

// Defaults for HTTPSpec and TCPSpec.
const (
	// DefaultBodyLimit is http.body_limit when unset: 10 MiB.
	DefaultBodyLimit = 10 << 20
	// DefaultReadLimit is tcp.read_limit when unset: 64 KiB.
	DefaultReadLimit = 64 << 10
	// DefaultStatus is expect.status for http checks when unset.
	DefaultStatus = "200-399"
	// DefaultVersion is Options.Version when unset.
	DefaultVersion = "dev"
	// CacheBustParam is the query parameter http.cache_bust adds.
	CacheBustParam = "vigil_cb"
	// CheckHeader names the check on every synthetic request.
	CheckHeader = "X-Vigil-Check"
)

// Values of http.http2 (HTTPSpec.HTTP2).
const (
	// HTTP2Off offers HTTP/1.1 only. The default.
	HTTP2Off = "off"
	// HTTP2Auto offers h2 and http/1.1 by TLS ALPN on https URLs, as
	// browsers do; the server picks.
	HTTP2Auto = "auto"
	// HTTP2Required is HTTP2Auto plus the `protocol` assertion: a response
	// over anything but HTTP/2 fails the run with cause protocol.
	HTTP2Required = "required"
	// HTTP2H2C speaks HTTP/2 over plain http:// with prior knowledge (no
	// HTTP/1.1 upgrade), as gRPC gateways and h2c listeners expect; an
	// origin that does not answer in HTTP/2 fails the run with cause
	// protocol.
	HTTP2H2C = "h2c"
)

// Options are the per-check settings the canary passes in.
type Options struct {
	// Check is the check's name, sent as X-Vigil-Check.
	Check string
	// Version is vigil's version for the User-Agent "vigil/<version>".
	// Default "dev".
	Version string
	// Timeout caps one run in addition to the run's ctx. 0 = ctx only.
	Timeout time.Duration
}

func (o *Options) setDefaults() {
	if o.Version == "" {
		o.Version = DefaultVersion
	}
}

// TLSOptions configure the TLS client of an http check (key `http.tls`).
type TLSOptions struct {
	// InsecureSkipVerify skips chain and hostname verification. Default
	// false. cert_min_days is still checked.
	InsecureSkipVerify bool `mapstructure:"insecure_skip_verify"`
	// CAFile is a PEM file of CA certificates to trust instead of the
	// system pool. Default: the system pool.
	CAFile string `mapstructure:"ca_file"`
	// ServerName is the SNI name and the name verified against the
	// certificate, for connections to the host of the check's URL (any
	// port); a redirect to another host is verified against that host's
	// own name. Default: the host of a Host header (http.headers, without
	// its port), else the host of the request URL.
	ServerName string `mapstructure:"server_name"`
	// MinVersion is the lowest TLS version accepted: "1.0", "1.1", "1.2"
	// or "1.3". Default "1.2".
	MinVersion string `mapstructure:"min_version"`
	// CertFile and KeyFile are a PEM client certificate (optionally
	// followed by its intermediates) and its private key, presented to a
	// server that asks for one (mutual TLS). Both or neither; read when
	// the config loads and again on every reload. Default: none, no client
	// certificate is sent.
	CertFile string `mapstructure:"cert_file"`
	KeyFile  string `mapstructure:"key_file"`

	minVersion uint16
	roots      *x509.CertPool
	clientCert *tls.Certificate
}

// parseMinVersion parses a min_version key; "" is the default, TLS 1.2.
func parseMinVersion(v string) (uint16, error) {
	switch strings.TrimSpace(v) {
	case "", "1.2":
		return tls.VersionTLS12, nil
	case "1.0":
		return tls.VersionTLS10, nil
	case "1.1":
		return tls.VersionTLS11, nil
	case "1.3":
		return tls.VersionTLS13, nil
	}
	return 0, errorf(ErrBadValue, "min_version: %q: want \"1.0\", \"1.1\", \"1.2\" or \"1.3\"", v)
}

// tlsWarnings lists the settings that weaken a TLS client, as "key: value:
// why" relative to the TLS section, for `vigil validate` and the start
// of `vigil run`.
func tlsWarnings(insecure bool, minVersion string) []string {
	var out []string
	if insecure {
		out = append(out, "insecure_skip_verify: true: certificates are not verified")
	}
	switch v := strings.TrimSpace(minVersion); v {
	case "1.0", "1.1":
		out = append(out, fmt.Sprintf("min_version: %q: TLS %s is accepted, which is deprecated (RFC 8996)", v, v))
	}
	return out
}

// Warnings lists the settings of the TLS client that weaken it
// (insecure_skip_verify, a min_version below 1.2), each as
// "key: value: why", keys relative to `tls`.
func (o *TLSOptions) Warnings() []string { return tlsWarnings(o.InsecureSkipVerify, o.MinVersion) }

// warningsAt is Warnings with each key prefixed by at (e.g. "tls."), for
// the TLS options of a probe's key; none when o is nil.
func (o *TLSOptions) warningsAt(at string) []string {
	if o == nil {
		return nil
	}
	var out []string
	for _, w := range o.Warnings() {
		out = append(out, at+w)
	}
	return out
}

// ValidateAndSetDefaults parses min_version and loads ca_file, cert_file
// and key_file.
func (o *TLSOptions) ValidateAndSetDefaults() error {
	var errs []error
	mv, err := parseMinVersion(o.MinVersion)
	if err != nil {
		errs = append(errs, err)
	}
	o.minVersion = mv
	if o.MinVersion == "" {
		o.MinVersion = "1.2"
	}
	o.roots = nil
	if o.CAFile != "" {
		pool, err := loadCAFile(o.CAFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("ca_file: %w", err))
		}
		o.roots = pool
	}
	o.clientCert, err = loadClientCert(o.CertFile, o.KeyFile)
	errs = append(errs, err)
	return errors.Join(errs...)
}

// ErrClientCert: a cert_file or key_file cannot be read, holds no PEM
// certificate or key, or the two do not match.
var ErrClientCert = errors.New("bad client certificate")

// loadClientCert loads a client certificate for mutual TLS; nil, nil when
// neither file is set. Errors name the key and the file.
func loadClientCert(certFile, keyFile string) (*tls.Certificate, error) {
	switch {
	case certFile == "" && keyFile == "":
		return nil, nil
	case keyFile == "":
		return nil, errorf(ErrClientCert, "key_file: required with cert_file")
	case certFile == "":
		return nil, errorf(ErrClientCert, "cert_file: required with key_file")
	}
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, errorf(ErrClientCert, "cert_file: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, errorf(ErrClientCert, "key_file: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	switch {
	case err == nil:
		return &pair, nil
	case strings.Contains(err.Error(), "certificate input"), strings.Contains(err.Error(), "x509:"):
		// No CERTIFICATE block, or one that does not parse.
		return nil, errorf(ErrClientCert, "cert_file: %s: %v", certFile, err)
	case strings.Contains(err.Error(), "does not match"):
		return nil, errorf(ErrClientCert, "key_file: %s does not match cert_file %s: %v", keyFile, certFile, err)
	}
	return nil, errorf(ErrClientCert, "key_file: %s: %v", keyFile, err)
}

func loadCAFile(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, errorf(ErrCAFile, "%w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, errorf(ErrCAFile, "%s: no PEM certificate found", path)
	}
	return pool, nil
}

// config returns a client config whose SNI and verified name is
// serverName ("" = the host dialed). o.ServerName is not applied here: it
// names the check's own host only (see HTTP.ownName), not a host a
// redirect leads to.
func (o *TLSOptions) config(serverName string) *tls.Config {
	c := &tls.Config{
		MinVersion:         o.minVersion,
		RootCAs:            o.roots,
		InsecureSkipVerify: o.InsecureSkipVerify,
		ServerName:         serverName,
	}
	c.GetClientCertificate = clientCertFunc(o.clientCert)
	if c.MinVersion == 0 {
		c.MinVersion = tls.VersionTLS12
	}
	return c
}

// HTTPSpec is one HTTP request (config key `http:`).
type HTTPSpec struct {
	// Method is the request method. Default "GET".
	Method string `mapstructure:"method"`
	// URL is an absolute http(s) URL requested instead of target + path.
	// Default: unset (target URL + Path).
	URL string `mapstructure:"url"`
	// Path is joined to the target's base URL; it may carry a query string.
	// Default "/". Cannot be combined with URL.
	Path string `mapstructure:"path"`
	// Headers are request headers; names keep the file's case and are
	// canonicalised (names differing only in case are a config error). A
	// "host" header sets the Host sent and, unless tls.server_name is set,
	// the TLS name for the check's own host (its host, without the port,
	// as blackbox_exporter does). They override
	// the default User-Agent and X-Vigil-Check.
	Headers map[string]string `mapstructure:"headers"`
	// Body is the request body as text. Default: none.
	Body string `mapstructure:"body"`
	// JSON is any value sent JSON-encoded with Content-Type
	// application/json (unless headers set one). Excludes Body and Form.
	JSON any `mapstructure:"json"`
	// Query are query parameters added after the query of URL or Path (and
	// the target's), names and values percent-encoded as an HTML form
	// encodes them (a space as "+", "&" as "%26"), in name order. In a
	// script step values may hold ${name} and ${env:NAME}, which are
	// encoded after substitution. Default: none.
	Query map[string]string `mapstructure:"query"`
	// Form is sent as an application/x-www-form-urlencoded body (names and
	// values percent-encoded, in name order) with that Content-Type unless
	// headers set one. Excludes Body and JSON. Default: none.
	Form map[string]string `mapstructure:"form"`
	// BasicAuth sends an Authorization: Basic header (RFC 7617) built
	// from a username and a password. Excludes headers.Authorization.
	// Default: none.
	BasicAuth *BasicAuth `mapstructure:"basic_auth"`
	// FollowRedirects follows up to 10 redirects. Default false: a 3xx is
	// the answer asserted on.
	FollowRedirects bool `mapstructure:"follow_redirects"`
	// CacheBust adds a unique query parameter vigil_cb=<random> to every
	// run so caches (CDNs) are bypassed. Default false.
	CacheBust bool `mapstructure:"cache_bust"`
	// RawBody asserts on the body as served: a gzip or deflate body is not
	// decoded before body, json, checksum and size assertions and
	// body_limit. Default false (decoded, as a browser sees it).
	RawBody bool `mapstructure:"raw_body"`
	// ReuseConnections keeps connections alive between runs of this check.
	// Default false: every run opens a fresh connection, so DNS, connect
	// and TLS are measured every time.
	ReuseConnections bool `mapstructure:"reuse_connections"`
	// BodyLimit is how much of the body is read, in bytes with a unit.
	// Reading stops there: body, json and checksum assertions see only the
	// first body_limit bytes (a checksum over a longer body fails, json
	// assertions and body not_contains fail, and a body contains or regex
	// that finds nothing says the body was cut), and expect.size reports the
	// size as "over body_limit". With Content-Encoding gzip or deflate the
	// limit counts decoded bytes. Default "10MiB".
	BodyLimit units.ByteSize `mapstructure:"body_limit"`
	// UserAgent is the User-Agent sent. Default "vigil/<version>".
	UserAgent string `mapstructure:"user_agent"`
	// TLS configures the TLS client for https URLs.
	TLS TLSOptions `mapstructure:"tls"`
	// HTTP2 is whether HTTP/2 is offered on https URLs: "off" (HTTP/1.1
	// only), "auto" (h2 and http/1.1 offered by TLS ALPN; the server picks)
	// or "required" (as auto, and a response that did not come over HTTP/2
	// fails the `protocol` assertion with cause protocol). Plain http://
	// URLs always speak HTTP/1.1: h2 without TLS (h2c) is not offered.
	// Default "off", so upgrading vigil does not change what existing
	// checks measure.
	HTTP2 string `mapstructure:"http2"`
	// ProxyURL sends every request of the check (redirects included)
	// through a proxy, "scheme://[user:password@]host[:port]":
	//   - http:// (port 80) an HTTP proxy spoken to in plain HTTP, https://
	//     (port 443) one spoken to over TLS (verified with ProxyTLS). An
	//     https:// request is tunnelled with CONNECT, so TLS is end to end
	//     with the origin and verified with http.tls as without a proxy; an
	//     http:// request is sent to the proxy in absolute form. The user
	//     and password go in Proxy-Authorization: Basic.
	//   - socks5:// and socks5h:// (port 1080) a SOCKS5 proxy (RFC 1928),
	//     the user and password sent by RFC 1929's method (each at most
	//     255 bytes). socks5h:// sends the origin's name for the proxy to
	//     resolve; socks5:// resolves it here and sends the address.
	// The password is never shown. Default: none, requests go straight to
	// the origin ($HTTP_PROXY, $HTTPS_PROXY and $ALL_PROXY are ignored).
	ProxyURL string `mapstructure:"proxy_url"`
	// ProxyTLS is the TLS client of an https:// ProxyURL's connection to
	// the proxy, with the keys of TLS (insecure_skip_verify, ca_file,
	// server_name, min_version, cert_file, key_file); TLS applies to the
	// origin only. Default (unset or `true`): the proxy's certificate
	// verified against the system pool and the proxy's host, TLS 1.2 or
	// later, no client certificate. Only with an https:// proxy.
	ProxyTLS *TLSOptions `mapstructure:"proxy_tls"`
	// IPProtocol limits the addresses dialled to one family: "ip4" or
	// "ip6" (blackbox_exporter's preferred_ip_protocol). A name without
	// an address of that family fails with cause dns, an IP literal of
	// the other family with cause connect, unless IPProtocolFallback.
	// Default "": both, IPv6 first with a fallback to IPv4 after 300 ms
	// (RFC 6555 Happy Eyeballs, as Go dials).
	IPProtocol string `mapstructure:"ip_protocol"`
	// IPProtocolFallback dials the other family when the name has no
	// address of IPProtocol's (or is a literal of the other family), as
	// blackbox_exporter's ip_protocol_fallback. Requires IPProtocol.
	// Default false.
	IPProtocolFallback bool `mapstructure:"ip_protocol_fallback"`

	compiled bool
	jsonBody []byte      // encoded JSON body
	formBody string      // encoded form body (no variables substituted)
	query    string      // encoded query (no variables substituted)
	headers  http.Header // canonical request headers (without defaults)
	host     string      // Host override
	proxy    *url.URL    // parsed ProxyURL, nil for none
	proxyTLS *TLSOptions // the compiled ProxyTLS of an https:// proxy
}

// Warnings lists the settings of http.tls and http.proxy_tls that weaken
// them (insecure_skip_verify, a min_version below 1.2), each as "key:
// value: why", keys relative to `http`.
func (s *HTTPSpec) Warnings() []string {
	out := s.TLS.warningsAt("tls.")
	out = append(out, s.ProxyTLS.warningsAt("proxy_tls.")...)
	return out
}

// BasicAuth is http.basic_auth: the credentials of an Authorization:
// Basic header. The password may come from the environment (${NAME} in a
// check, ${env:NAME} in a script step); it is never shown.
type BasicAuth struct {
	// Username is required and must not contain ":" (RFC 7617 §2).
	Username string `mapstructure:"username"`
	// Password may be empty.
	Password string `mapstructure:"password"`
}

// ValidateAndSetDefaults sets defaults, canonicalises headers, encodes the
// JSON body, loads tls.ca_file and checks that body/json and url/path are
// not both set. Errors start with the key relative to `http`.
func (s *HTTPSpec) ValidateAndSetDefaults() error {
	var errs []error
	written := s.Method
	s.Method = strings.ToUpper(strings.TrimSpace(s.Method))
	if s.Method == "" {
		s.Method = http.MethodGet
	}
	if !validToken(s.Method) {
		// The value as written: one taken from ${…} is then hidden by the
		// config's redactor, which knows it as written, not upper-cased.
		errs = append(errs, errorf(ErrBadMethod, "method: %q is not an HTTP method", written))
	}
	if s.URL != "" {
		if s.Path != "" {
			errs = append(errs, errorf(ErrConflict, "url: set either url or path, not both"))
		}
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, errorf(ErrBadURL, "url: %q: want an absolute http:// or https:// URL", units.RedactURL(s.URL)))
		} else if p := u.Port(); p != "" {
			// url.Parse takes any run of digits as a port.
			if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
				errs = append(errs, errorf(ErrBadURL, "url: %q: port %q: want a number from 1 to 65535", units.RedactURL(s.URL), p))
			}
		}
	} else if s.Path != "" && !strings.HasPrefix(s.Path, "/") {
		errs = append(errs, errorf(ErrBadURL, "path: %q: must start with \"/\"", s.Path))
	}
	if s.URL != "" {
		if why := badQuery(s.URL); why != "" {
			errs = append(errs, errorf(ErrBadURL, "url: the query %s, which cannot be sent in a request line; put the parameters in query: (they are percent-encoded)", why))
		}
	} else if why := badQuery(s.Path); why != "" {
		errs = append(errs, errorf(ErrBadURL, "path: the query %s, which cannot be sent in a request line; put the parameters in query: (they are percent-encoded)", why))
	}
	if s.Body != "" && s.JSON != nil {
		errs = append(errs, errorf(ErrConflict, "json: set either body or json, not both"))
	}
	if s.Form != nil {
		if s.Body != "" {
			errs = append(errs, errorf(ErrConflict, "form: set either body or form, not both"))
		}
		if s.JSON != nil {
			errs = append(errs, errorf(ErrConflict, "form: set either json or form, not both"))
		}
	}
	s.formBody, s.query = encodeParams(s.Form, nil), encodeParams(s.Query, nil)
	for _, p := range []struct {
		key string
		m   map[string]string
	}{{"query", s.Query}, {"form", s.Form}} {
		for k := range p.m {
			if k == "" {
				errs = append(errs, errorf(ErrBadValue, "%s: empty parameter name", p.key))
			}
		}
	}
	if s.BasicAuth != nil {
		if s.BasicAuth.Username == "" {
			errs = append(errs, errorf(ErrBadValue, "basic_auth.username: required"))
		} else if strings.Contains(s.BasicAuth.Username, ":") && !strings.Contains(s.BasicAuth.Username, "${") {
			errs = append(errs, errorf(ErrBadValue, "basic_auth.username: must not contain \":\" (RFC 7617)"))
		}
		for k := range s.Headers {
			if strings.EqualFold(k, "Authorization") {
				errs = append(errs, errorf(ErrConflict, "basic_auth: set either basic_auth or headers.%s, not both", k))
			}
		}
	}
	s.jsonBody = nil
	if s.JSON != nil {
		b, err := json.Marshal(s.JSON)
		if err != nil {
			errs = append(errs, errorf(ErrBadValue, "json: cannot encode: %v", err))
		}
		s.jsonBody = b
	}
	if s.BodyLimit < 0 {
		errs = append(errs, errorf(ErrBadValue, "body_limit: must not be negative"))
	}
	if s.BodyLimit == 0 {
		s.BodyLimit = DefaultBodyLimit
	}
	s.headers = http.Header{}
	s.host = ""
	names := make([]string, 0, len(s.Headers))
	for k := range s.Headers {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v := s.Headers[k]
		if !validToken(k) {
			errs = append(errs, errorf(ErrBadValue, "headers.%s: not a header name", k))
			continue
		}
		if strings.ContainsAny(v, "\r\n") {
			errs = append(errs, errorf(ErrBadValue, "headers.%s: value contains a line break", k))
			continue
		}
		ck := http.CanonicalHeaderKey(k)
		if ck == "Host" {
			s.host = v
			continue
		}
		s.headers.Set(ck, v)
	}
	if s.JSON != nil && s.headers.Get("Content-Type") == "" {
		s.headers.Set("Content-Type", "application/json")
	}
	if s.Form != nil && s.headers.Get("Content-Type") == "" {
		s.headers.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if err := s.TLS.ValidateAndSetDefaults(); err != nil {
		errs = append(errs, units.Prefix("tls", err))
	}
	errs = append(errs, checkIPProtocol(&s.IPProtocol, s.IPProtocolFallback))
	s.proxy, s.proxyTLS = nil, nil
	if s.ProxyURL != "" {
		u, err := parseProxyURL(s.ProxyURL)
		if err != nil {
			errs = append(errs, err)
		}
		s.proxy = u
	}
	switch {
	case s.proxy != nil && strings.EqualFold(s.proxy.Scheme, "https"):
		s.proxyTLS = s.ProxyTLS
		if s.proxyTLS == nil {
			s.proxyTLS = &TLSOptions{}
		}
		if err := s.proxyTLS.ValidateAndSetDefaults(); err != nil {
			errs = append(errs, units.Prefix("proxy_tls", err))
		}
	case s.ProxyTLS != nil:
		errs = append(errs, errorf(ErrConflict, "proxy_tls: applies to an https:// http.proxy_url only (the TLS with the origin is http.tls)"))
	}
	switch v := strings.ToLower(strings.TrimSpace(s.HTTP2)); v {
	case "", HTTP2Off:
		s.HTTP2 = HTTP2Off
	case HTTP2Auto, HTTP2Required, HTTP2H2C:
		s.HTTP2 = v
		if s.URL != "" {
			errs = append(errs, s.HTTP2Fits(s.URL))
		}
	default:
		hint := ""
		if v == "0" || v == "1" || v == "true" || v == "false" {
			hint = " (not a boolean)"
		}
		errs = append(errs, errorf(ErrBadValue, "http2: %q: want \"auto\", \"off\", \"required\" or \"h2c\"%s", s.HTTP2, hint))
	}
	err := errors.Join(errs...)
	s.compiled = err == nil
	return err
}

// parseProxyURL parses http.proxy_url: an http://, https://, socks5:// or
// socks5h:// proxy. The error starts with the key and shows the URL
// without its userinfo (nor the user or password themselves).
func parseProxyURL(raw string) (*url.URL, error) {
	shown := units.RedactURL(raw)
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" || u.Opaque != "" {
		return nil, errorf(ErrBadURL, "proxy_url: %q: want scheme://[user:password@]host:port (http, https, socks5 or socks5h)", shown)
	}
	scheme := strings.ToLower(u.Scheme)
	switch scheme {
	case "http", "https", "socks5", "socks5h":
	default:
		hint := ""
		if scheme == "socks" || scheme == "socks4" || scheme == "socks4a" {
			hint = " (SOCKS4 is not supported)"
		}
		return nil, errorf(ErrBadURL, "proxy_url: %q: scheme %q: want http://, https://, socks5:// or socks5h://%s", shown, u.Scheme, hint)
	}
	if strings.HasPrefix(scheme, "socks5") && u.User != nil {
		// RFC 1929 §2: one byte of length each; x/net/proxy refuses an
		// empty user. Not checked while ${…} is still in the URL.
		pw, _ := u.User.Password()
		switch name := u.User.Username(); {
		case strings.Contains(raw, "${"):
		case name == "":
			return nil, errorf(ErrBadURL, "proxy_url: %q: a SOCKS5 login needs a user (RFC 1929)", shown)
		case len(name) > 255 || len(pw) > 255:
			return nil, errorf(ErrBadURL, "proxy_url: %q: a SOCKS5 user and password are at most 255 bytes each (RFC 1929)", shown)
		}
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, errorf(ErrBadURL, "proxy_url: %q: port %q: want a number from 1 to 65535", shown, p)
		}
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, errorf(ErrBadURL, "proxy_url: %q: want no path or query (a proxy is host and port)", shown)
	}
	return u, nil
}

// HTTP2Fits reports whether http2 suits a URL the check requests (http.url,
// or the check's url or a target's when http.url is unset): `required`
// needs https:// (h2 is negotiated by TLS ALPN), `h2c` needs plain
// http://. The error (ErrConflict) starts with the key, "http2: ". It may
// be called before or after ValidateAndSetDefaults.
func (s *HTTPSpec) HTTP2Fits(rawURL string) error {
	u := strings.ToLower(rawURL)
	mode := strings.ToLower(strings.TrimSpace(s.HTTP2))
	switch {
	case mode == HTTP2Required && strings.HasPrefix(u, "http://"):
		return errorf(ErrConflict, "http2: required needs an https:// url (h2 is negotiated by TLS ALPN; plain http:// speaks HTTP/1.1)")
	case mode == HTTP2H2C && strings.HasPrefix(u, "https://"):
		return errorf(ErrConflict, "http2: h2c is HTTP/2 over plain http://; an https:// url negotiates h2 with auto or required")
	}
	return nil
}

// validToken reports whether s is an RFC 9110 token: a method or a
// header field name.
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			return false
		}
	}
	return true
}

// TCPSpec is a TCP connect check (config key `tcp:`): connect, optionally
// send a line, optionally expect text back; or hold a conversation of
// expects and sends in order (Query).
type TCPSpec struct {
	// Send is written after connecting, as is (add "\r\n" yourself).
	// Default: nothing.
	Send string `mapstructure:"send"`
	// Expect is a substring, or "~regex", that must appear in what the
	// server sends back within read_limit bytes. A regex is tried on what
	// arrived and on each line of it without its line break (as Query
	// does, so "~^\\+PONG$" matches "+PONG\r\n"); a substring starting
	// with "^" is a config error. Default: nothing is read.
	Expect string `mapstructure:"expect"`
	// Query is a conversation in order, as blackbox_exporter's
	// query_response: each element expects a line from the server, sends
	// text, or both (expect first). It excludes Send and Expect. Expect
	// is matched against each line received (without its line break; a
	// last line the server has not ended yet is tried too), so "~^250 "
	// matches a line that starts with "250 "; lines before the matching
	// one are skipped. Default: none.
	Query []TCPQueryStep `mapstructure:"query"`
	// ReadLimit is how much is read while waiting for Expect (for Query:
	// over the whole conversation), in bytes with a unit. Default "64KiB".
	ReadLimit units.ByteSize `mapstructure:"read_limit"`
	// TLS makes the check speak TLS, with the keys of http.tls
	// (insecure_skip_verify, ca_file, server_name, min_version, cert_file,
	// key_file); `tls: true` is TLS with their defaults (chain and
	// hostname verified against the system pool, TLS 1.2 or later), `tls:
	// false` or no key plain TCP. The handshake follows the connect, or,
	// when a Query step has starttls, happens at that step. server_name
	// defaults to the target's host. Default: nil, plain TCP.
	TLS *TLSOptions `mapstructure:"tls"`
	// IPProtocol limits the addresses dialled to one family: "ip4" or
	// "ip6" (blackbox_exporter's preferred_ip_protocol). A name without
	// an address of that family fails with cause dns, an IP literal of
	// the other family with cause connect, unless IPProtocolFallback.
	// Default "": both, IPv6 first with a fallback to IPv4 after 300 ms
	// (RFC 6555 Happy Eyeballs, as Go dials).
	IPProtocol string `mapstructure:"ip_protocol"`
	// IPProtocolFallback dials the other family when the name has no
	// address of IPProtocol's (or is a literal of the other family), as
	// blackbox_exporter's ip_protocol_fallback. Requires IPProtocol.
	// Default false.
	IPProtocolFallback bool `mapstructure:"ip_protocol_fallback"`

	compiled bool
	re       *regexp.Regexp
	// tls is the compiled TLS client: TLS, or the defaults for a starttls
	// step without TLS; nil for plain TCP.
	tls *TLSOptions
	// startTLS is the index of the Query step with starttls, -1 for none.
	startTLS int
}

// Warnings lists the settings of tcp.tls that weaken it
// (insecure_skip_verify, a min_version below 1.2), each as
// "key: value: why", keys relative to `tcp`.
func (s *TCPSpec) Warnings() []string {
	return s.TLS.warningsAt("tls.")
}

// TCPQueryStep is one element of tcp.query: expect, send, or both.
type TCPQueryStep struct {
	// Expect is a substring, or "~regex", that a line from the server must
	// hold before the conversation goes on.
	Expect string `mapstructure:"expect"`
	// Send is written as is (add "\r\n" yourself), after Expect matched
	// when both are set.
	Send string `mapstructure:"send"`
	// StartTLS upgrades the connection to TLS at this step, after its
	// Expect matched and before its Send, with tcp.tls's settings (or
	// their defaults: verification on), as blackbox_exporter's starttls.
	// At most one step. Default false.
	StartTLS bool `mapstructure:"starttls"`

	re *regexp.Regexp
}

// match reports whether line satisfies the step's expect.
func (q *TCPQueryStep) match(line []byte) bool {
	if q.re != nil {
		return q.re.Match(line)
	}
	return bytes.Contains(line, []byte(q.Expect))
}

// ValidateAndSetDefaults compiles expect and sets read_limit.
func (s *TCPSpec) ValidateAndSetDefaults() error {
	var errs []error
	s.re = nil
	switch {
	case strings.HasPrefix(s.Expect, "^"):
		// A regex habit (blackbox_exporter's expect is one) that, as a
		// substring, could never match what a server sends.
		errs = append(errs, errorf(ErrBadValue, "expect: %q is a substring; write %q for a regular expression", s.Expect, "~"+s.Expect))
	case strings.HasPrefix(s.Expect, "~"):
		re, err := compileRegex(s.Expect[1:])
		if err != nil {
			errs = append(errs, fmt.Errorf("expect: %w", err))
		}
		s.re = re
	}
	if s.Query != nil {
		if len(s.Query) == 0 {
			errs = append(errs, errorf(ErrBadValue, "query: empty list (omit the key, or list {expect: …} and {send: …} steps)"))
		}
		if s.Send != "" || s.Expect != "" {
			errs = append(errs, errorf(ErrConflict, "query: set either query or send/expect, not both (put them in query, in order)"))
		}
	}
	s.startTLS = -1
	for i := range s.Query {
		q := &s.Query[i]
		q.re = nil
		if q.StartTLS {
			if s.startTLS >= 0 {
				errs = append(errs, errorf(ErrConflict, "query[%d].starttls: only one step may start TLS (query[%d] does)", i, s.startTLS))
			} else {
				s.startTLS = i
			}
		}
		if q.Expect == "" && q.Send == "" && !q.StartTLS {
			errs = append(errs, errorf(ErrBadValue, "query[%d]: want expect, send or both (and/or starttls)", i))
			continue
		}
		if strings.HasPrefix(q.Expect, "^") {
			errs = append(errs, errorf(ErrBadValue, "query[%d].expect: %q is a substring; write %q for a regular expression", i, q.Expect, "~"+q.Expect))
			continue
		}
		if strings.HasPrefix(q.Expect, "~") {
			re, err := compileRegex(q.Expect[1:])
			if err != nil {
				errs = append(errs, fmt.Errorf("query[%d].expect: %w", i, err))
			}
			q.re = re
		}
	}
	if s.ReadLimit < 0 {
		errs = append(errs, errorf(ErrBadValue, "read_limit: must not be negative"))
	}
	if s.ReadLimit == 0 {
		s.ReadLimit = DefaultReadLimit
	}
	errs = append(errs, checkIPProtocol(&s.IPProtocol, s.IPProtocolFallback))
	s.tls = s.TLS
	if s.tls == nil && s.startTLS >= 0 {
		s.tls = &TLSOptions{}
	}
	if s.tls != nil {
		if err := s.tls.ValidateAndSetDefaults(); err != nil {
			errs = append(errs, units.Prefix("tls", err))
		}
	}
	err := errors.Join(errs...)
	s.compiled = err == nil
	return err
}

// TLSSpec is a TLS handshake check (config key `tls:`): connect, handshake,
// verify the chain and hostname, report the leaf certificate's expiry.
type TLSSpec struct {
	// ServerName is the SNI name and the name verified. Default: the
	// target's host.
	ServerName string `mapstructure:"server_name"`
	// CAFile is a PEM file of trusted CAs. Default: the system pool.
	CAFile string `mapstructure:"ca_file"`
	// InsecureSkipVerify skips chain and hostname verification (expiry is
	// still reported and cert_min_days still checked). Default false.
	InsecureSkipVerify bool `mapstructure:"insecure_skip_verify"`
	// MinVersion is the lowest TLS version offered: "1.0", "1.1", "1.2" or
	// "1.3". Default "1.2", as for http checks: an origin that speaks only
	// TLS 1.0 or 1.1 fails the handshake unless min_version says so.
	MinVersion string `mapstructure:"min_version"`
	// CertFile and KeyFile are a PEM client certificate and key presented
	// when the server asks for one (mutual TLS), as for http checks. Both
	// or neither; read at load and on every reload. Default: none.
	CertFile string `mapstructure:"cert_file"`
	KeyFile  string `mapstructure:"key_file"`
	// IPProtocol limits the addresses dialled to one family: "ip4" or
	// "ip6" (blackbox_exporter's preferred_ip_protocol). A name without
	// an address of that family fails with cause dns, an IP literal of
	// the other family with cause connect, unless IPProtocolFallback.
	// Default "": both, IPv6 first with a fallback to IPv4 after 300 ms
	// (RFC 6555 Happy Eyeballs, as Go dials).
	IPProtocol string `mapstructure:"ip_protocol"`
	// IPProtocolFallback dials the other family when the name has no
	// address of IPProtocol's (or is a literal of the other family), as
	// blackbox_exporter's ip_protocol_fallback. Requires IPProtocol.
	// Default false.
	IPProtocolFallback bool `mapstructure:"ip_protocol_fallback"`

	compiled   bool
	roots      *x509.CertPool
	minVersion uint16
	clientCert *tls.Certificate
}

// Warnings lists the settings that weaken the check (insecure_skip_verify,
// a min_version below 1.2), each as "key: value: why", keys relative to
// `tls`.
func (s *TLSSpec) Warnings() []string { return tlsWarnings(s.InsecureSkipVerify, s.MinVersion) }

// ValidateAndSetDefaults parses min_version and loads ca_file, cert_file
// and key_file.
func (s *TLSSpec) ValidateAndSetDefaults() error {
	var errs []error
	mv, err := parseMinVersion(s.MinVersion)
	if err != nil {
		errs = append(errs, err)
	}
	s.minVersion = mv
	if s.MinVersion == "" {
		s.MinVersion = "1.2"
	}
	s.roots = nil
	if s.CAFile != "" {
		pool, err := loadCAFile(s.CAFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("ca_file: %w", err))
		}
		s.roots = pool
	}
	s.clientCert, err = loadClientCert(s.CertFile, s.KeyFile)
	errs = append(errs, err, checkIPProtocol(&s.IPProtocol, s.IPProtocolFallback))
	err = errors.Join(errs...)
	s.compiled = err == nil
	return err
}

// checkIPProtocol validates the ip_protocol and ip_protocol_fallback keys
// and writes ip_protocol in lower case.
func checkIPProtocol(p *string, fallback bool) error {
	v := strings.ToLower(strings.TrimSpace(*p))
	switch v {
	case "", "ip4", "ip6":
	default:
		hint := ""
		if v == "ipv4" || v == "ipv6" || v == "4" || v == "6" || v == "tcp4" || v == "tcp6" {
			hint = fmt.Sprintf(" (write %q)", "ip"+v[len(v)-1:])
		}
		return errorf(ErrBadValue, "ip_protocol: %q: want \"ip4\" or \"ip6\"%s", *p, hint)
	}
	*p = v
	if fallback && v == "" {
		return errorf(ErrBadValue, "ip_protocol_fallback: needs ip_protocol (without it both families are dialled)")
	}
	return nil
}
