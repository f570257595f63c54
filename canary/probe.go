package canary

// probe.go: GET /probe, blackbox_exporter's multi-target endpoint. A
// Prometheus server names a module (a check of the config) and a target;
// vigil runs the check once against the target and answers blackbox's
// metrics. The run is not scheduled, judged or stored: no verdict comes of
// it.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting/units"
)

// Outcomes of a /probe request, the outcome label of
// vigil_probe_requests_total.
const (
	probeSuccess      = "success"      // the run passed (probe_success 1)
	probeFailure      = "failure"      // the run failed (probe_success 0)
	probeForbidden    = "forbidden"    // the target is outside agent.probe.allow (403)
	probeUnauthorized = "unauthorized" // no or a wrong bearer token (401)
	probeBadRequest   = "bad_request"  // no or an unknown module, no or a bad target, a bad timeout header (400)
	probeBusy         = "busy"         // agent.probe.max_concurrent probes were running (503)
	probeDisabled     = "disabled"     // agent.probe.enabled is false (404)
)

// prober serves GET /probe for a canary.
type prober struct {
	c        *Canary
	version  string
	inflight atomic.Int64
	requests *prometheus.CounterVec
}

// ProbeHandler serves GET /probe?module=<check>&target=<target>[&debug=true]
// (agent.probe): it runs the check named module once against target, with
// the check's timeout capped by X-Prometheus-Scrape-Timeout-Seconds minus
// agent.probe.timeout_offset, and answers blackbox_exporter's metrics in
// the Prometheus text format (version 0.0.4); debug=true answers a log of
// the run instead. version goes into the User-Agent (vigil/<version>).
//
// 404 when agent.probe.enabled is false; 401 without the bearer
// agent.admin_token (unless agent.probe.require_token: false); 400 for a
// missing or unknown module (the answer lists the known ones), a script
// or push check, a missing target or one the check cannot take; 403 for a target
// outside agent.probe.allow, before anything is sent to it; 503 when
// agent.probe.max_concurrent probes are running. Requests are counted in
// vigil_probe_requests_total{module,outcome} on the canary's registry.
func (c *Canary) ProbeHandler(version string) http.Handler {
	p := &prober{c: c, version: version}
	p.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vigil_probe_requests_total",
		Help: "GET /probe requests by module (empty when refused before a module was known) and outcome: success, failure, forbidden, unauthorized, bad_request, busy, disabled.",
	}, []string{"module", "outcome"})
	if err := c.reg.Register(p.requests); err != nil {
		// A second handler on the same canary counts in the first's.
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
				p.requests = existing
			}
		} else {
			c.log.Warn("probe: register metrics", "err", err)
		}
	}
	// Refusal counters exist from the start, at 0.
	for _, o := range []string{probeForbidden, probeUnauthorized, probeBadRequest, probeBusy, probeDisabled} {
		p.requests.WithLabelValues("", o)
	}
	return p
}

// probeRequest is what one /probe request asks, read under Canary.mu.
type probeRequest struct {
	cfg     ProbeConfig
	token   string
	check   *CheckConfig // a copy; nil: unknown module
	modules []string     // every check a module may name
	own     []string     // the check's own target URLs: its url and its targets'
}

func (p *prober) snapshot(module string) probeRequest {
	c := p.c
	c.mu.Lock()
	defer c.mu.Unlock()
	pr := probeRequest{cfg: c.cfg.Agent.Probe, token: c.cfg.Agent.AdminToken}
	for i := range c.cfg.Checks {
		ch := &c.cfg.Checks[i]
		if k := ch.Kind(); k == "script" || k == "push" {
			if ch.Name == module {
				cp := *ch
				pr.check = &cp
			}
			continue
		}
		pr.modules = append(pr.modules, ch.Name)
		if ch.Name == module {
			cp := *ch
			pr.check = &cp
			if ch.URL != "" {
				pr.own = append(pr.own, ch.URL)
			}
			for _, name := range ch.Targets {
				for _, t := range c.cfg.Targets {
					if t.Name == name {
						pr.own = append(pr.own, t.URL)
					}
				}
			}
		}
	}
	sort.Strings(pr.modules)
	return pr
}

// probeError answers a refused /probe request in plain text, as
// blackbox_exporter does, and counts it.
func (p *prober) probeError(w http.ResponseWriter, code int, module, outcome, msg string) {
	p.requests.WithLabelValues(module, outcome).Inc()
	w.Header().Set("Cache-Control", "no-store")
	http.Error(w, msg, code)
}

func (p *prober) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	module, target := q.Get("module"), q.Get("target")
	pr := p.snapshot(module)
	if !pr.cfg.Enabled {
		p.probeError(w, http.StatusNotFound, "", probeDisabled, "the probe endpoint is off: set agent.probe.enabled: true and agent.probe.allow")
		return
	}
	if pr.cfg.tokenRequired() {
		if pr.token == "" {
			p.probeError(w, http.StatusForbidden, "", probeUnauthorized, "/probe needs agent.admin_token, which is not set (or set agent.probe.require_token: false)")
			return
		}
		if !units.BearerMatches(r, pr.token) {
			p.c.authFail.Note(p.c.log, r)
			w.Header().Set("WWW-Authenticate", `Bearer realm="vigil"`)
			p.probeError(w, http.StatusUnauthorized, "", probeUnauthorized, "missing or wrong bearer token (Authorization: Bearer <agent.admin_token>; agent.probe.require_token)")
			return
		}
	}
	known := "known modules: " + strings.Join(pr.modules, ", ")
	if len(pr.modules) == 0 {
		known = "the config has no check a probe can run (http, tcp, tls, dns, grpc, icmp)"
	}
	switch {
	case module == "":
		p.probeError(w, http.StatusBadRequest, "", probeBadRequest, "module: required (?module=<check name>&target=<target>); "+known)
		return
	case pr.check == nil:
		p.probeError(w, http.StatusBadRequest, "", probeBadRequest, fmt.Sprintf("module %q: no check of that name; %s", module, known))
		return
	case pr.check.Kind() == "push":
		p.probeError(w, http.StatusBadRequest, "", probeBadRequest, fmt.Sprintf("module %q: %v (its verdicts are in GET /api/v1/verdicts); %s", module, ErrPushNotRunnable, known))
		return
	case pr.check.Kind() == "script":
		p.probeError(w, http.StatusBadRequest, "", probeBadRequest, fmt.Sprintf("module %q: a script check cannot probe a target (its steps name their own URLs); %s", module, known))
		return
	case pr.check.HTTP != nil && pr.check.HTTP.URL != "":
		p.probeError(w, http.StatusBadRequest, "", probeBadRequest, fmt.Sprintf("module %q: its http.url fixes the URL requested, so it cannot probe a target: drop http.url (the target's URL is requested)", module))
		return
	case target == "":
		p.probeError(w, http.StatusBadRequest, module, probeBadRequest, "target: required (?module=<check name>&target=<target>)")
		return
	}
	ch := pr.check
	timeout, err := probeTimeout(r, ch.Timeout, pr.cfg.TimeoutOffset)
	if err != nil {
		p.probeError(w, http.StatusBadRequest, module, probeBadRequest, err.Error())
		return
	}
	raw := probeTargetURL(ch, target)
	if err := validateURL(raw); err != nil {
		p.probeError(w, http.StatusBadRequest, module, probeBadRequest, "target: "+err.Error())
		return
	}
	if err := ch.urlFits(raw); err != nil {
		p.probeError(w, http.StatusBadRequest, module, probeBadRequest, fmt.Sprintf("target %q: %v", units.RedactURL(raw), err))
		return
	}
	if msg := credentialScope(ch, raw, pr.own, p.c.redact); msg != "" {
		p.probeError(w, http.StatusBadRequest, module, probeBadRequest, fmt.Sprintf("module %q: %s", module, msg))
		return
	}
	if n := p.inflight.Add(1); n > int64(pr.cfg.MaxConcurrent) {
		p.inflight.Add(-1)
		w.Header().Set("Retry-After", "1")
		p.probeError(w, http.StatusServiceUnavailable, module, probeBusy, fmt.Sprintf("%d probes are running (agent.probe.max_concurrent): try again", pr.cfg.MaxConcurrent))
		return
	}
	defer p.inflight.Add(-1)

	var logBuf bytes.Buffer
	run := &probeRun{p: p, ch: ch, raw: raw, timeout: timeout, cfg: &pr.cfg,
		log: slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	res, refused := run.do(ctx)
	if refused != "" {
		p.c.log.Info("probe refused", "module", module, "target", units.RedactURL(raw), "why", refused)
		p.probeError(w, http.StatusForbidden, module, probeForbidden, refused)
		return
	}
	outcome := probeFailure
	if res.OK {
		outcome = probeSuccess
	}
	p.requests.WithLabelValues(module, outcome).Inc()
	metrics, err := run.metrics(res)
	if err != nil {
		p.c.log.Warn("probe: encode metrics", "err", err)
		http.Error(w, "encoding metrics failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	if d, _ := strconv.ParseBool(q.Get("debug")); d {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "Logs for the probe:\n%s\n\nMetrics that would have been returned:\n%s\n\nModule configuration:\nname: %s\nkind: %s\ntimeout: %s\n",
			logBuf.String(), metrics, ch.Name, ch.Kind(), timeout)
		return
	}
	w.Header().Set("Content-Type", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	_, _ = w.Write(metrics)
}

// credentialScope returns why the module ch may not probe raw, "" when it
// may: a module that sends credentials (moduleCredentials) sends them
// only to its own targets (own), those of the same scheme, host and port
// as raw. Any other target is refused rather than probed without them: a
// run without its credentials would fail for a reason the caller cannot
// see. A dns check whose target is a name to ask about (not a dns://
// server) sends nothing to it.
func credentialScope(ch *CheckConfig, raw string, own []string, redact func(string) string) string {
	creds := moduleCredentials(ch, redact)
	if len(creds) == 0 {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "" // validateURL parsed it already
	}
	if ch.Kind() == "dns" && u.Scheme != "dns" {
		return ""
	}
	want := originOf(u)
	var shown []string
	for _, o := range own {
		ou, err := url.Parse(o)
		if err != nil {
			continue
		}
		if originOf(ou) == want {
			return ""
		}
		if s := originOf(ou).String(); !slices.Contains(shown, s) {
			shown = append(shown, s)
		}
	}
	return fmt.Sprintf("it sends credentials (%s), which go only to its own targets (%s): target %q is not one of them (scheme, host and port must match one); "+
		"add the target to the check's targets, or probe it with a module that sends no credentials",
		strings.Join(creds, ", "), strings.Join(shown, ", "), want.String())
}

// origin is a URL's scheme, host and port, as credentialScope compares
// them: lower case, an address written canonically, the scheme's port
// when the URL names none.
type origin struct{ scheme, host, port string }

func originOf(u *url.URL) origin {
	o := origin{scheme: strings.ToLower(u.Scheme), host: strings.TrimSuffix(strings.ToLower(u.Hostname()), "."), port: u.Port()}
	if a, err := netip.ParseAddr(o.host); err == nil {
		o.host = a.Unmap().String()
	}
	if o.port == "" {
		o.port = map[string]string{"http": "80", "https": "443", "tls": "443", "dns": "53"}[o.scheme]
	}
	return o
}

func (o origin) String() string {
	host := o.host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if o.port == "" {
		return o.scheme + "://" + host
	}
	return o.scheme + "://" + host + ":" + o.port
}

// moduleCredentials lists, by config key, what the check sends its target
// that is a credential: the value of a header, a query parameter, a form
// field or a json field (at any depth) whose name is sensitive
// (checks.SensitiveName); basic_auth; a client certificate (cert_file);
// and any value sent (path, headers, query, form, json, body, user_agent,
// a tcp send) that holds a secret of the config, as redact, the config's
// redactor, finds: a ${NAME} value, a literal credential of
// Config.Secrets. http.proxy_url and http.proxy_tls are left out: they go
// to the configured proxy whatever the target.
func moduleCredentials(ch *CheckConfig, redact func(string) string) []string {
	var out []string
	add := func(key string) {
		if !slices.Contains(out, key) {
			out = append(out, key)
		}
	}
	secret := func(v string) bool { return redact != nil && v != "" && redact(v) != v }
	val := func(key, v string, sensitive bool) {
		if sensitive || secret(v) {
			add(key)
		}
	}
	named := func(prefix string, m map[string]string) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			val(prefix+"."+k, m[k], checks.SensitiveName(k))
		}
	}
	cert := func(key string, o *checks.TLSOptions) {
		if o != nil && o.CertFile != "" {
			add(key + ".cert_file")
		}
	}
	switch {
	case ch.HTTP != nil:
		h := ch.HTTP
		val("http.path", h.Path, false)
		named("http.headers", h.Headers)
		named("http.query", h.Query)
		named("http.form", h.Form)
		jsonCredentials("http.json", h.JSON, false, val)
		val("http.body", h.Body, false)
		if h.BasicAuth != nil {
			add("http.basic_auth")
		}
		val("http.user_agent", h.UserAgent, false)
		cert("http.tls", &h.TLS)
	case ch.TCP != nil:
		val("tcp.send", ch.TCP.Send, false)
		for i, q := range ch.TCP.Query {
			val(fmt.Sprintf("tcp.query[%d].send", i), q.Send, false)
		}
		cert("tcp.tls", ch.TCP.TLS)
	case ch.TLS != nil:
		if ch.TLS.CertFile != "" {
			add("tls.cert_file")
		}
	case ch.DNS != nil:
		cert("dns.tls", ch.DNS.TLS)
	case ch.GRPC != nil:
		if ch.GRPC.TLS != nil {
			cert("grpc.tls", &ch.GRPC.TLS.TLSOptions)
		}
		val("grpc.user_agent", ch.GRPC.UserAgent, false)
	}
	return out
}

// jsonCredentials calls val with every scalar of the json value v, under
// key, sensitive when its key or one enclosing it is a sensitive name.
func jsonCredentials(key string, v any, sensitive bool, val func(key, v string, sensitive bool)) {
	switch x := v.(type) {
	case nil:
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			jsonCredentials(key+"."+k, x[k], sensitive || checks.SensitiveName(k), val)
		}
	case []any:
		for i, e := range x {
			jsonCredentials(fmt.Sprintf("%s[%d]", key, i), e, sensitive, val)
		}
	case string:
		val(key, x, sensitive)
	default:
		val(key, fmt.Sprint(x), sensitive)
	}
}

// probeTimeout is the run's timeout: the check's, capped as
// blackbox_exporter caps it by Prometheus' scrape timeout minus offset
// (the scrape timeout itself when the offset would leave nothing).
func probeTimeout(r *http.Request, check, offset time.Duration) (time.Duration, error) {
	timeout := check
	if timeout <= 0 {
		timeout = defaultRunTimeout
	}
	v := r.Header.Get("X-Prometheus-Scrape-Timeout-Seconds")
	if v == "" {
		return timeout, nil
	}
	secs, err := strconv.ParseFloat(v, 64)
	if err != nil || secs <= 0 || math.IsInf(secs, 0) || math.IsNaN(secs) {
		return 0, fmt.Errorf("X-Prometheus-Scrape-Timeout-Seconds: %q: want a positive number of seconds", v)
	}
	scrape := time.Duration(secs * float64(time.Second))
	limit := scrape - offset
	if limit <= 0 {
		limit = scrape
	}
	return min(timeout, limit), nil
}

// probeTargetURL writes a target the way targets: entries are written. A
// target without a scheme is taken as blackbox_exporter takes it: a host
// or host:port for the check's kind (http://, tcp://, tls://, dns:// for
// the server asked, icmp://, and for grpc https:// or, with grpc.tls:
// false, http://).
func probeTargetURL(ch *CheckConfig, target string) string {
	if strings.Contains(target, "://") {
		return target
	}
	scheme := "http"
	switch k := ch.Kind(); k {
	case "tcp", "tls", "dns", "icmp":
		scheme = k
	case "grpc":
		scheme = "https"
		if !ch.GRPC.UsesTLS() {
			scheme = "http"
		}
	}
	return scheme + "://" + target
}

// probeRun is one /probe run.
type probeRun struct {
	p       *prober
	ch      *CheckConfig
	cfg     *ProbeConfig
	raw     string // the target as a URL
	timeout time.Duration
	log     *slog.Logger // the debug=true log

	resolve time.Duration // the name's resolution, before the run
	pinned  netip.Addr    // the address dialled (invalid: none pinned)
}

// do checks the target against agent.probe.allow, pins the address it
// resolves to and runs the check. refused is the 403 message when the
// target is outside the allow list (nothing was sent to it).
func (r *probeRun) do(ctx context.Context) (res checks.Result, refused string) {
	shown := units.RedactURL(r.raw)
	r.log.Info("Beginning probe", "module", r.ch.Name, "kind", r.ch.Kind(), "target", shown, "timeout", r.timeout)
	u, err := url.Parse(r.raw)
	if err != nil { // validateURL parsed it already
		return checks.Result{Cause: checks.CauseInternal, Err: err.Error()}, ""
	}
	host := u.Hostname()
	// A dns check of a target that is no dns:// server asks the configured
	// server (or the system resolver) for the target's name: nothing is
	// sent to the target, but the name must still be allowed.
	dial := !(r.ch.Kind() == "dns" && u.Scheme != "dns")
	allowList := ruleList(r.cfg.allow)

	if a, err := netip.ParseAddr(host); err == nil {
		rule, ok := matchAddr(r.cfg.allow, a)
		if !ok {
			return checks.Result{}, fmt.Sprintf("target %q: address %s is outside agent.probe.allow %s", shown, a, allowList)
		}
		r.log.Info("Target allowed", "address", a, "rule", rule.raw)
		r.pinned = a.Unmap()
	} else {
		globRule, byName := matchName(r.cfg.allow, host)
		if !byName && !hasCIDR(r.cfg.allow) {
			return checks.Result{}, fmt.Sprintf("target %q: host %q matches no host glob of agent.probe.allow %s", shown, host, allowList)
		}
		family, fallback := r.ch.ipFamily()
		r.log.Info("Resolving target address", "host", host, "ip_protocol", family)
		start := time.Now()
		addrs, err := resolveOrdered(ctx, host, family, fallback)
		r.resolve = time.Since(start)
		if err != nil {
			r.log.Error("Resolution failed", "err", err)
			return checks.Result{Cause: checks.CauseDNS, Err: err.Error(), Start: start,
				Phases: checks.Phases{DNS: r.resolve, Total: r.resolve}}, ""
		}
		for _, a := range addrs {
			if byName {
				r.pinned = a
				r.log.Info("Target allowed", "host", host, "rule", globRule.raw, "address", a)
				break
			}
			if rule, ok := matchAddr(r.cfg.allow, a); ok {
				r.pinned = a
				r.log.Info("Target allowed", "host", host, "address", a, "rule", rule.raw)
				break
			}
		}
		if !r.pinned.IsValid() {
			return checks.Result{}, fmt.Sprintf("target %q: host %q resolves to %s, outside agent.probe.allow %s", shown, host, addrList(addrs), allowList)
		}
	}

	ch := *r.ch
	ch.Timeout = r.timeout
	t := checks.Target{Name: targetNameForURL(r.raw), URL: r.raw}
	if dial {
		// Pin: the run dials the address just checked, never a second
		// resolution's answer. The name stays the TLS name and the Host.
		pu := *u
		pu.Host = hostPort(r.pinned, u.Port())
		t.URL = pu.String()
		if ch.HTTP != nil && ch.HTTP.FollowRedirects {
			r.log.Info("Not following redirects: a redirect's host would be dialled without the allow check")
		}
		if err := ch.pin(host, u.Host); err != nil {
			r.log.Error("Pinning the address failed", "err", err)
			return checks.Result{Cause: checks.CauseInternal, Err: err.Error()}, ""
		}
		r.log.Info("Pinned", "address", r.pinned, "url", units.RedactURL(t.URL))
	}
	probe, err := ch.compile(CompileOptions{Version: r.p.version})
	if err != nil {
		r.log.Error("Compiling the check failed", "err", err)
		return checks.Result{Cause: checks.CauseInternal, Err: err.Error()}, ""
	}
	if cl, ok := probe.(io.Closer); ok {
		defer cl.Close()
	}
	res = r.runSafe(ctx, probe, t)
	res = r.p.c.redactResult(res)
	for _, a := range res.Assertions {
		r.log.Info("Assertion", "name", a.Name, "ok", a.OK, "got", a.Got, "want", a.Want)
	}
	if res.OK {
		r.log.Info("Probe succeeded", "duration_seconds", r.duration(res).Seconds())
	} else {
		r.log.Error("Probe failed", "cause", string(res.Cause), "err", res.Err, "duration_seconds", r.duration(res).Seconds())
	}
	return res, ""
}

// runSafe runs the check, turning a panic into cause internal.
func (r *probeRun) runSafe(ctx context.Context, probe checks.Check, t checks.Target) (res checks.Result) {
	defer func() {
		if v := recover(); v != nil {
			r.p.c.log.Error("probe panicked", "check", r.ch.Name, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			res = checks.Result{Cause: checks.CauseInternal, Err: fmt.Sprintf("panic: %v", v)}
		}
	}()
	return probe.Run(ctx, t)
}

// duration is the whole probe: the name's resolution and the run.
func (r *probeRun) duration(res checks.Result) time.Duration {
	if res.Phases.Total == 0 && res.Start.IsZero() {
		return r.resolve
	}
	if res.Phases.Total == 0 {
		return r.resolve + time.Since(res.Start)
	}
	return r.resolve + res.Phases.Total
}

// metrics encodes the run as blackbox_exporter's metrics, in the text format.
func (r *probeRun) metrics(res checks.Result) ([]byte, error) {
	reg := prometheus.NewRegistry()
	gauge := func(name, help string, v float64) {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
		g.Set(v)
		reg.MustRegister(g)
	}
	b2f := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	ph := res.Phases
	dns := r.resolve + ph.DNS
	gauge("probe_success", "Whether the probe succeeded.", b2f(res.OK))
	gauge("probe_duration_seconds", "How long the probe took, in seconds.", r.duration(res).Seconds())
	gauge("probe_dns_lookup_time_seconds", "How long the target's name took to resolve, in seconds.", dns.Seconds())
	if r.pinned.IsValid() {
		v := 6.0
		if r.pinned.Is4() {
			v = 4
		}
		gauge("probe_ip_protocol", "The IP protocol of the address probed: 4 or 6.", v)
	}
	switch r.ch.Kind() {
	case "http":
		https := strings.HasPrefix(strings.ToLower(r.raw), "https://")
		gauge("probe_http_status_code", "The response's HTTP status code (0: no response).", float64(res.StatusCode))
		gauge("probe_http_ssl", "Whether the response came over TLS.", b2f(https && res.StatusCode > 0))
		if ver, ok := httpVersion(res.Proto); ok {
			gauge("probe_http_version", "The response's HTTP version.", ver)
		}
		gauge("probe_http_redirects", "The redirects followed (a probe follows none).", 0)
		gauge("probe_failed_due_to_regex", "Whether a body assertion failed (cause body).", b2f(res.Cause == checks.CauseBody))
		hv := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "probe_http_duration_seconds",
			Help: "The request's phases, in seconds: resolve, connect, tls, processing (until the first response byte), transfer."}, []string{"phase"})
		processing := max(0, ph.TTFB-ph.DNS-ph.Connect-ph.TLS)
		if ph.TTFB == 0 {
			processing = 0
		}
		for _, x := range []struct {
			phase string
			d     time.Duration
		}{{"resolve", dns}, {"connect", ph.Connect}, {"tls", ph.TLS}, {"processing", processing}, {"transfer", ph.Transfer}} {
			hv.WithLabelValues(x.phase).Set(x.d.Seconds())
		}
		reg.MustRegister(hv)
	case "icmp":
		iv := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "probe_icmp_duration_seconds",
			Help: "The ping's phases, in seconds: resolve, setup, rtt."}, []string{"phase"})
		rtt := max(0, ph.TTFB-ph.DNS-ph.Connect)
		if ph.TTFB == 0 {
			rtt = 0
		}
		iv.WithLabelValues("resolve").Set(dns.Seconds())
		iv.WithLabelValues("setup").Set(ph.Connect.Seconds())
		iv.WithLabelValues("rtt").Set(rtt.Seconds())
		reg.MustRegister(iv)
	}
	if !res.CertExpiry.IsZero() {
		gauge("probe_ssl_earliest_cert_expiry", "The earliest NotAfter of the certificates presented, as Unix seconds.", float64(res.CertExpiry.Unix()))
	}
	if !res.LastChainExpiry.IsZero() {
		gauge("probe_ssl_last_chain_expiry_timestamp_seconds", "The latest of the verified chains' earliest NotAfter, as Unix seconds.", float64(res.LastChainExpiry.Unix()))
	}
	if !res.OK {
		cv := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vigil_probe_cause",
			Help: "Why the probe failed, as vigil's failure cause (present only on failure)."}, []string{"cause"})
		cause := string(res.Cause)
		if cause == "" {
			cause = string(checks.CauseInternal)
		}
		cv.WithLabelValues(cause).Set(1)
		reg.MustRegister(cv)
	}
	mfs, err := reg.Gather()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// ipFamily is the check's ip_protocol and ip_protocol_fallback.
func (c *CheckConfig) ipFamily() (string, bool) {
	switch {
	case c.HTTP != nil:
		return c.HTTP.IPProtocol, c.HTTP.IPProtocolFallback
	case c.TCP != nil:
		return c.TCP.IPProtocol, c.TCP.IPProtocolFallback
	case c.TLS != nil:
		return c.TLS.IPProtocol, c.TLS.IPProtocolFallback
	case c.DNS != nil:
		return c.DNS.IPProtocol, c.DNS.IPProtocolFallback
	case c.GRPC != nil:
		return c.GRPC.IPProtocol, c.GRPC.IPProtocolFallback
	case c.ICMP != nil:
		return c.ICMP.IPProtocol, c.ICMP.IPProtocolFallback
	}
	return "", false
}

// pin makes the check, whose target URL now names an address instead of
// host, still speak to host: the Host header of an http check (and so
// its TLS name) and the TLS name of the others, unless the check sets
// them. A redirect is not followed: its host would be dialled unchecked.
// The specs are copied; the config's stay as they are.
func (c *CheckConfig) pin(host, hostport string) error {
	tlsFor := func(o *checks.TLSOptions) *checks.TLSOptions {
		var cp checks.TLSOptions
		if o != nil {
			cp = *o
		}
		if cp.ServerName == "" {
			cp.ServerName = host
		}
		return &cp
	}
	switch c.Kind() {
	case "http":
		s := *c.HTTP
		s.Headers = make(map[string]string, len(c.HTTP.Headers)+1)
		hasHost := false
		for k, v := range c.HTTP.Headers {
			s.Headers[k] = v
			hasHost = hasHost || strings.EqualFold(k, "Host")
		}
		if !hasHost {
			s.Headers["Host"] = hostport
		}
		s.FollowRedirects = false
		c.HTTP = &s
		return c.HTTP.ValidateAndSetDefaults()
	case "tcp":
		s := *c.TCP
		s.Query = slices.Clone(c.TCP.Query)
		starttls := false
		for _, q := range s.Query {
			starttls = starttls || q.StartTLS
		}
		if s.TLS != nil || starttls {
			s.TLS = tlsFor(s.TLS)
		}
		c.TCP = &s
		return c.TCP.ValidateAndSetDefaults()
	case "tls":
		s := *c.TLS
		if s.ServerName == "" {
			s.ServerName = host
		}
		c.TLS = &s
		return c.TLS.ValidateAndSetDefaults()
	case "dns":
		s := *c.DNS
		if s.TLS != nil || strings.EqualFold(strings.TrimSpace(s.Transport), checks.DNSTransportTLS) {
			s.TLS = tlsFor(s.TLS)
		}
		c.DNS = &s
		return c.DNS.ValidateAndSetDefaults()
	case "grpc":
		s := *c.GRPC
		if s.UsesTLS() {
			g := checks.GRPCTLS{}
			if s.TLS != nil {
				g = *s.TLS
			}
			if g.ServerName == "" {
				g.ServerName = host
			}
			s.TLS = &g
		}
		c.GRPC = &s
		return c.GRPC.ValidateAndSetDefaults()
	}
	return nil
}

// resolveOrdered resolves host once, addresses of family first (only them
// without fallback), each IPv4-mapped address as the IPv4 address it is.
func resolveOrdered(ctx context.Context, host, family string, fallback bool) ([]netip.Addr, error) {
	if strings.HasSuffix(strings.ToLower(strings.TrimSuffix(host, ".")), ".invalid") {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	for i := range addrs {
		addrs[i] = addrs[i].Unmap()
	}
	if family == "" {
		return addrs, nil
	}
	want4 := family == "ip4"
	var out, other []netip.Addr
	for _, a := range addrs {
		if a.Is4() == want4 {
			out = append(out, a)
		} else {
			other = append(other, a)
		}
	}
	if fallback {
		out = append(out, other...)
	}
	if len(out) == 0 {
		return nil, &net.DNSError{Err: fmt.Sprintf("no IPv%s address (ip_protocol: %s)", family[2:], family), Name: host, IsNotFound: true}
	}
	return out, nil
}

// hostPort writes a as a URL host, with port when there is one.
func hostPort(a netip.Addr, port string) string {
	if port != "" {
		return net.JoinHostPort(a.String(), port)
	}
	if a.Is6() {
		return "[" + a.String() + "]"
	}
	return a.String()
}

func hasCIDR(rules []allowRule) bool {
	for _, r := range rules {
		if r.prefix.IsValid() {
			return true
		}
	}
	return false
}

// ruleList shows the allow list in a 403, at most 10 entries.
func ruleList(rules []allowRule) string {
	var s []string
	for i, r := range rules {
		if i == 10 {
			s = append(s, fmt.Sprintf("… %d more", len(rules)-10))
			break
		}
		s = append(s, r.raw)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

func addrList(addrs []netip.Addr) string {
	s := make([]string, len(addrs))
	for i, a := range addrs {
		s[i] = a.String()
	}
	return strings.Join(s, ", ")
}
