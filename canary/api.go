package canary

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-synthetics/vigil/reporting/units"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/vigil-synthetics/vigil/reporting"
)

// API limits.
const (
	// DefaultHistoryLimit is the history endpoint's limit when none is given.
	DefaultHistoryLimit = 1000
	// MaxHistoryLimit caps the history endpoint's limit.
	MaxHistoryLimit = 10000
	// maxTriggerBody caps a trigger request body, bytes.
	maxTriggerBody = 4096
	// triggerUsage says what POST /api/v1/trigger reads, for its 400s.
	triggerUsage = `want a JSON body {"check": "<check>", "target": "<target>"}, form values, or query parameters ?check=<check>&target=<target>`
)

// Handler serves the canary's HTTP API:
//
//	GET  /api/v1/verdicts                 latest verdict per check × target × region (× vantage)
//	                                      ?max_age=30s keeps verdicts whose run is that recent (> 0);
//	                                      ?check=a,b&tier=deep&target=x,y keeps those of a listed
//	                                      check or tier and a listed target (reporting.VerdictFilter);
//	                                      gzipped for Accept-Encoding: gzip
//	GET  /api/v1/checks/{name}/history    ?target=&region=&from=&to=&limit= (needs src); from
//	                                      defaults to an hour before to (or now); from after
//	                                      to, limit above MaxHistoryLimit: 400
//	POST /api/v1/trigger                  {"check":…,"target":…} or ?check=&target=; bearer agent.admin_token
//	                                      (401 missing/wrong token, 403 no admin_token configured)
//	POST /api/v1/push/{check}[/fail]      a push check's ping (also GET, HEAD); ?status=ok|fail&msg=;
//	POST /api/v1/push/{check}/start       …/start: the job started (its next ping gives its run time);
//	                                      bearer push.token or agent.admin_token (401); 404 for a
//	                                      check that is no push check of this agent; 400 for a bad
//	                                      or unknown parameter; cross-origin browser POSTs get 403
//	GET  /healthz                         200 "ok" or 503 with the reasons
//	GET  /metrics                         Prometheus exposition of the canary's registry
//
// src supplies /api/v1/verdicts and history (typically the embedded store,
// which also holds other canaries' verdicts); nil: verdicts come from this
// canary's memory and history answers 501. Verdict states are as of the
// request: an expired verdict reads unknown. /api/v1/verdicts leaves out
// the pairs of this canary's own region and vantage that its config no
// longer runs (see dropRemoved). What src's reads note about their answers
// (reporting.NoteRead) is sent in the reporting.ReadNotesHeader header.
func (c *Canary) Handler(src reporting.HistorySource) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/verdicts", func(w http.ResponseWriter, r *http.Request) {
		c.serveVerdicts(w, r, src)
	})
	mux.HandleFunc("GET /api/v1/checks/{name}/history", func(w http.ResponseWriter, r *http.Request) {
		c.serveHistory(w, r, src)
	})
	mux.HandleFunc("POST /api/v1/trigger", c.serveTrigger)
	// Cron lines ping with a plain `curl URL` (GET), as healthchecks.io
	// takes; a cross-origin browser POST is refused (403), and a browser
	// cannot add the Authorization header across origins without a CORS
	// preflight, which is never granted.
	push := http.NewCrossOriginProtection().Handler(http.HandlerFunc(c.servePush))
	for _, pat := range []string{"GET /api/v1/push/{check}", "POST /api/v1/push/{check}",
		"GET /api/v1/push/{check}/fail", "POST /api/v1/push/{check}/fail",
		"GET /api/v1/push/{check}/start", "POST /api/v1/push/{check}/start"} {
		mux.Handle(pat, push)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err := c.Health(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			for _, e := range splitErrors(err) {
				fmt.Fprintln(w, e.Error())
			}
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(c.reg, promhttp.HandlerOpts{
		ErrorLog: slogPrinter{c}, Registry: c.reg}))
	return mux
}

type slogPrinter struct{ c *Canary }

func (s slogPrinter) Println(v ...any) { s.c.log.Warn("metrics", "err", fmt.Sprint(v...)) }

func splitErrors(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// apiError is the JSON error body: {"error": "..."}.
func apiError(w http.ResponseWriter, code int, msg string) {
	reporting.WriteJSON(w, code, map[string]string{"error": msg})
}

// setReadNotes sets reporting.ReadNotesHeader to what the reads noted (a
// store refusing writes: the latest verdicts include some from memory,
// history misses them), when they noted anything.
func setReadNotes(w http.ResponseWriter, notes *reporting.ReadNotes) {
	if n := notes.String(); n != "" {
		w.Header().Set(reporting.ReadNotesHeader, n)
	}
}

// parseDur reads a duration like 30s, 5m, 2h or 7d; a negative one is an
// error saying so.
func parseDur(s string) (time.Duration, error) {
	if strings.HasSuffix(s, "d") {
		n, err := strconv.ParseFloat(strings.TrimSuffix(s, "d"), 64)
		if err == nil && n < 0 {
			return 0, fmt.Errorf("%q: must be positive", s)
		}
		if err != nil || n*float64(24*time.Hour) > math.MaxInt64 || math.IsNaN(n) {
			return 0, fmt.Errorf("%q: not a duration (use ms, s, m, h or d)", s)
		}
		return time.Duration(n * float64(24*time.Hour)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q: not a duration (use ms, s, m, h or d)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q: must be positive", s)
	}
	return d, nil
}

// maxUnixSeconds is the largest integer parseTime reads as Unix seconds
// (year 5138): a larger one is almost surely milliseconds, which would
// otherwise ask for a range thousands of years ahead and answer [].
const maxUnixSeconds = 1e11

// parseTime reads RFC 3339, Unix seconds (an integer: "0" is 1970, not
// "0s ago") or a duration meaning that long before now.
func parseTime(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n > maxUnixSeconds || n < -maxUnixSeconds {
			return time.Time{}, fmt.Errorf("%q: out of range for Unix seconds (milliseconds? divide by 1000)", s)
		}
		return time.Unix(n, 0), nil
	}
	d, err := parseDur(s)
	if err == nil {
		return now.Add(-d), nil
	}
	if strings.HasSuffix(err.Error(), "must be positive") {
		return time.Time{}, fmt.Errorf("%q: a duration ago must be positive", s)
	}
	return time.Time{}, fmt.Errorf("%q: want RFC 3339, Unix seconds or a duration ago (1h)", s)
}

func (c *Canary) serveVerdicts(w http.ResponseWriter, r *http.Request, src reporting.HistorySource) {
	var maxAge time.Duration
	filter := reporting.ParseVerdictFilter(r.URL.Query())
	if err := filter.Validate(); err != nil {
		apiError(w, http.StatusBadRequest, err.Error())
		return
	}
	if s := r.URL.Query().Get("max_age"); s != "" {
		d, err := parseDur(s)
		if err == nil && d == 0 {
			err = fmt.Errorf("%q: must be positive (leave max_age out for every verdict)", s)
		}
		if err != nil {
			apiError(w, http.StatusBadRequest, "max_age: "+err.Error())
			return
		}
		maxAge = d
	}
	ctx, notes := reporting.WithReadNotes(r.Context())
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var vs []reporting.Verdict
	var err error
	if src != nil {
		vs, err = src.Verdicts(ctx, maxAge)
	} else {
		vs, err = c.Verdicts(ctx, maxAge)
	}
	setReadNotes(w, notes)
	if err != nil {
		c.log.Warn("api verdicts", "err", err)
		apiError(w, http.StatusInternalServerError, "reading verdicts failed")
		return
	}
	vs = filter.Apply(c.dropRemoved(vs))
	now := c.now()
	for i := range vs {
		if cur := vs[i].Current(now); cur != vs[i].State {
			// Expired: unknown since it expired, not since the state
			// it reported.
			vs[i].State, vs[i].Since = cur, vs[i].Expires
		}
	}
	if vs == nil {
		vs = []reporting.Verdict{}
	}
	reporting.WriteJSONGzip(w, r, http.StatusOK, vs)
}

func (c *Canary) serveHistory(w http.ResponseWriter, r *http.Request, src reporting.HistorySource) {
	if src == nil {
		apiError(w, http.StatusNotImplemented, "no history store configured")
		return
	}
	q := r.URL.Query()
	now := c.now()
	hq := reporting.HistoryQuery{Check: r.PathValue("name"), Target: q.Get("target"),
		Region: q.Get("region"), Limit: DefaultHistoryLimit}
	var err error
	if s := q.Get("to"); s != "" {
		if hq.To, err = parseTime(s, now); err != nil {
			apiError(w, http.StatusBadRequest, "to: "+err.Error())
			return
		}
	}
	// Without from: the hour before to (or before now).
	hq.From = now.Add(-time.Hour)
	if !hq.To.IsZero() {
		hq.From = hq.To.Add(-time.Hour)
	}
	if s := q.Get("from"); s != "" {
		if hq.From, err = parseTime(s, now); err != nil {
			apiError(w, http.StatusBadRequest, "from: "+err.Error())
			return
		}
		if !hq.To.IsZero() && hq.From.After(hq.To) {
			apiError(w, http.StatusBadRequest, fmt.Sprintf("from %q (%s) is after to %q (%s)",
				s, hq.From.UTC().Format(time.RFC3339), q.Get("to"), hq.To.UTC().Format(time.RFC3339)))
			return
		}
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			apiError(w, http.StatusBadRequest, fmt.Sprintf("limit: %q: want a positive integer", s))
			return
		}
		if n > MaxHistoryLimit {
			apiError(w, http.StatusBadRequest, fmt.Sprintf("limit: %q: at most %d", s, MaxHistoryLimit))
			return
		}
		hq.Limit = n
	}
	ctx, notes := reporting.WithReadNotes(r.Context())
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	vs, err := src.History(ctx, hq)
	setReadNotes(w, notes)
	if err != nil {
		c.log.Warn("api history", "check", hq.Check, "err", err)
		apiError(w, http.StatusInternalServerError, "reading history failed")
		return
	}
	if len(vs) == 0 && !c.knowsCheck(hq.Check) {
		// An empty answer would read as "no data yet": a misspelt name is
		// an error. A check this agent does not run may still have history
		// from other regions (a shared InfluxDB), so only an unknown name
		// with no history is refused.
		apiError(w, http.StatusNotFound, fmt.Sprintf("no check named %q in this agent's config, and no history for it", hq.Check))
		return
	}
	if vs == nil {
		vs = []reporting.Verdict{}
	}
	reporting.WriteJSON(w, http.StatusOK, vs)
}

// authorized answers a write request that does not carry the admin token
// and reports whether it may go on: 403 when agent.admin_token is empty
// (writes are disabled whatever the request carries), 401 with
// WWW-Authenticate when the bearer token is missing or wrong. The same rule
// holds for the proxy's drain/undrain. The token is compared in constant
// time over SHA-256 digests, so its length does not leak either.
func (c *Canary) authorized(w http.ResponseWriter, r *http.Request) bool {
	c.mu.Lock()
	want := c.cfg.Agent.AdminToken
	c.mu.Unlock()
	if want == "" {
		apiError(w, http.StatusForbidden, "admin writes are disabled: set agent.admin_token")
		return false
	}
	if !units.BearerMatches(r, want) {
		c.authFail.Note(c.log, r)
		w.Header().Set("WWW-Authenticate", `Bearer realm="vigil"`)
		apiError(w, http.StatusUnauthorized, "missing or wrong bearer token (Authorization: Bearer <agent.admin_token>)")
		return false
	}
	return true
}

func (c *Canary) serveTrigger(w http.ResponseWriter, r *http.Request) {
	if !c.authorized(w, r) {
		return
	}
	var req struct {
		Check  string `json:"check"`
		Target string `json:"target"`
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxTriggerBody))
	if err != nil {
		apiError(w, http.StatusBadRequest, fmt.Sprintf("body: %v (at most %d bytes)", err, maxTriggerBody))
		return
	}
	// A body that starts with '{' is JSON whatever its Content-Type says:
	// curl -d sends application/x-www-form-urlencoded unless told otherwise,
	// and the README's own example is curl -d '{"check":…}'. A real form
	// body (check=…&target=…) is read as form values.
	trimmed := bytes.TrimSpace(body)
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch {
	case len(trimmed) == 0:
	case trimmed[0] == '{':
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			apiError(w, http.StatusBadRequest, triggerUsage+": body: "+err.Error())
			return
		}
	case ct == "application/x-www-form-urlencoded":
		form, err := url.ParseQuery(string(trimmed))
		if err != nil {
			apiError(w, http.StatusBadRequest, triggerUsage+": form body: "+err.Error())
			return
		}
		req.Check, req.Target = form.Get("check"), form.Get("target")
	default:
		apiError(w, http.StatusBadRequest, fmt.Sprintf("%s: body is neither a JSON object nor a form (Content-Type %q)", triggerUsage, ct))
		return
	}
	q := r.URL.Query()
	if req.Check == "" {
		req.Check = q.Get("check")
	}
	if req.Target == "" {
		req.Target = q.Get("target")
	}
	if req.Check == "" || req.Target == "" {
		var missing []string
		if req.Check == "" {
			missing = append(missing, "check")
		}
		if req.Target == "" {
			missing = append(missing, "target")
		}
		apiError(w, http.StatusBadRequest, fmt.Sprintf("%s: missing %s", triggerUsage, strings.Join(missing, " and ")))
		return
	}
	v, err := c.TriggerContext(r.Context(), req.Check, req.Target)
	switch {
	case errors.Is(err, ErrUnknownPair):
		apiError(w, http.StatusNotFound, err.Error())
		return
	case err != nil:
		apiError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	reporting.WriteJSON(w, http.StatusOK, v)
}

// knowsCheck reports whether the running config defines a check named name.
func (c *Canary) knowsCheck(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ch := range c.cfg.Checks {
		if ch.Name == name {
			return true
		}
	}
	return false
}
