package checks

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/vigil-synthetics/vigil/reporting/units"
)

// observation is what a run saw, the input to the assertions.
type observation struct {
	status    int
	header    http.Header
	body      []byte // first limit bytes, when collected
	size      int64  // bytes read (capped at limit)
	truncated bool   // the body was longer than limit
	limit     int64
	digest    []byte // checksum of the bytes read
	ttfb      time.Duration
	total     time.Duration
	leaf      *x509.Certificate
	now       time.Time
}

var defaultStatus, _ = ParseStatusRanges(DefaultStatus)

// verdict collects assertion results and remembers the first failure in
// cause order.
type verdict struct {
	list  []AssertionResult
	cause Cause
	rank  int
	err   string
}

// causeRank is the documented order in which a failing assertion becomes
// Result.Cause: hard failures first, service-level (ttfb, duration) last.
var causeRank = map[Cause]int{
	CauseProtocol: 1, CauseStatus: 2, CauseHeader: 3, CauseBody: 4, CauseJSON: 5,
	CauseChecksum: 6, CauseSize: 7, CauseCert: 8, CauseTTFB: 9, CauseDuration: 10,
}

func (v *verdict) add(c Cause, name string, ok bool, got, want, errMsg string) {
	v.list = append(v.list, AssertionResult{Name: name, OK: ok, Got: got, Want: want})
	if ok {
		return
	}
	if r := causeRank[c]; v.cause == "" || r < v.rank {
		v.cause, v.rank, v.err = c, r, errMsg
	}
}

// fmtDur formats a duration for display: whole milliseconds above 10 ms,
// 10 µs resolution below.
func fmtDur(d time.Duration) string {
	if d >= 10*time.Millisecond {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(10 * time.Microsecond).String()
}

// evalHTTP runs every http assertion over the observation in the fixed
// order status, headers, content_type, body, json, checksum, size,
// cert_min_days, ttfb, duration.
func (e *Expect) evalHTTP(o *observation, v *verdict) {
	status, want := e.status, DefaultStatus
	if status == nil {
		status = defaultStatus
	} else {
		want = status.String()
	}
	ok := status.Match(o.status)
	v.add(CauseStatus, "status", ok, strconv.Itoa(o.status), want,
		fmt.Sprintf("status %d not in %s", o.status, want))

	for _, h := range e.headers {
		vals := o.header.Values(h.name)
		got := "(absent)"
		if len(vals) > 0 {
			got = abbrev(joinValues(vals), 200)
			if sensitiveHeader(h.name) {
				got = maskValues(vals)
			}
		}
		ok := h.m.Match(vals) // on the real values; only got is masked
		var msg string
		switch h.m.Kind {
		case MatchPresent:
			msg = fmt.Sprintf("header %s is absent, want present", h.name)
		case MatchAbsent:
			msg = fmt.Sprintf("header %s is present (%q), want absent", h.name, got)
		case MatchRegex:
			msg = fmt.Sprintf("header %s: %q does not match ~%s", h.name, got, h.m.Value)
		default:
			msg = fmt.Sprintf("header %s: got %q, want %q", h.name, got, h.m.Value)
		}
		if len(vals) == 0 && h.m.Kind != MatchAbsent && h.m.Kind != MatchPresent {
			msg = fmt.Sprintf("header %s is absent, want %s", h.name, h.m.String())
		}
		v.add(CauseHeader, "header "+h.name, ok, got, h.m.String(), msg)
	}

	if e.contentType != "" {
		raw := o.header.Get("Content-Type")
		mt, _, err := mime.ParseMediaType(raw)
		if err != nil {
			mt = strings.ToLower(strings.TrimSpace(raw))
		}
		ok := mediaMatch(e.contentType, mt)
		got := mt
		if raw == "" {
			got = "(absent)"
		}
		v.add(CauseHeader, "content_type", ok, got, e.contentType,
			fmt.Sprintf("content type %s, want %s", got, e.contentType))
	}

	e.evalBody(o, v)

	if e.sum != nil {
		want := e.sum.algo + ":" + hex.EncodeToString(e.sum.want)
		if o.truncated {
			v.add(CauseChecksum, "checksum", false, "(body over body_limit "+units.ByteSize(o.limit).String()+")", want,
				fmt.Sprintf("checksum %s not computed: body over body_limit %s", e.sum.algo, units.ByteSize(o.limit)))
		} else {
			gotHex := hex.EncodeToString(o.digest)
			ok := bytes.Equal(o.digest, e.sum.want)
			v.add(CauseChecksum, "checksum", ok, e.sum.algo+":"+gotHex, want,
				fmt.Sprintf("checksum %s mismatch: got %s, want %s", e.sum.algo, abbrev(gotHex, 12), abbrev(hex.EncodeToString(e.sum.want), 12)))
		}
	}

	if e.Size != (SizeExpect{}) {
		got := units.ByteSize(o.size).String()
		if o.truncated {
			got = ">" + units.ByteSize(o.limit).String()
		}
		var want []string
		ok := true
		if e.Size.Min > 0 {
			want = append(want, ">= "+e.Size.Min.String())
			ok = ok && (o.truncated || o.size >= int64(e.Size.Min))
		}
		if e.Size.Max > 0 {
			want = append(want, "<= "+e.Size.Max.String())
			ok = ok && !o.truncated && o.size <= int64(e.Size.Max)
		}
		w := strings.Join(want, ", ")
		v.add(CauseSize, "size", ok, got, w, fmt.Sprintf("body size %s, want %s", got, w))
	}
	e.evalCommon(o, v)
}

// evalCommon runs cert_min_days, ttfb and duration.
func (e *Expect) evalCommon(o *observation, v *verdict) {
	if e.CertMinDays > 0 {
		if o.leaf == nil {
			v.add(CauseCert, "cert_min_days", false, "(no certificate)", ">= "+strconv.Itoa(e.CertMinDays)+" days",
				"cert_min_days: no TLS certificate (plain connection)")
		} else {
			left := daysLeft(o.leaf, o.now)
			ok := left >= e.CertMinDays
			v.add(CauseCert, "cert_min_days", ok, strconv.Itoa(left)+" days", ">= "+strconv.Itoa(e.CertMinDays)+" days",
				fmt.Sprintf("certificate expires in %d days (%s), want at least %d", left, o.leaf.NotAfter.UTC().Format(time.DateOnly), e.CertMinDays))
		}
	}
	if e.TTFB > 0 {
		ok := o.ttfb > 0 && o.ttfb <= e.TTFB
		got := fmtDur(o.ttfb)
		if o.ttfb == 0 {
			got = "(no byte received)"
		}
		v.add(CauseTTFB, "ttfb", ok, got, "<= "+fmtDur(e.TTFB), fmt.Sprintf("ttfb %s over %s", got, fmtDur(e.TTFB)))
	}
	if e.Duration > 0 {
		ok := o.total <= e.Duration
		v.add(CauseDuration, "duration", ok, fmtDur(o.total), "<= "+fmtDur(e.Duration),
			fmt.Sprintf("duration %s over %s", fmtDur(o.total), fmtDur(e.Duration)))
	}
}

// daysLeft is the number of whole days until NotAfter (negative once
// expired).
func daysLeft(c *x509.Certificate, now time.Time) int {
	d := c.NotAfter.Sub(now)
	days := int(d / (24 * time.Hour))
	if d < 0 && d%(24*time.Hour) != 0 {
		days--
	}
	return days
}

// sensitiveHeader reports whether a header's values are masked in an
// assertion's got and error text, which end up on the status page, in the
// API and in alerts: Set-Cookie, Cookie, Authorization,
// Proxy-Authorization and any name containing token, secret, password,
// credential, session, api-key, api_key or apikey (case-insensitive).
func sensitiveHeader(name string) bool {
	n := strings.ToLower(name)
	switch n {
	case "set-cookie", "cookie", "authorization", "proxy-authorization":
		return true
	}
	for _, s := range []string{"token", "secret", "password", "credential", "session", "api-key", "api_key", "apikey"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// maskValues replaces each value by its length and the first 8 hex digits
// of its SHA-256, e.g. "[masked: 34 bytes, sha256:1f0c9a2e]", so two values
// can be told apart without showing either.
func maskValues(vals []string) string {
	out := make([]string, len(vals))
	for i, v := range vals {
		sum := sha256.Sum256([]byte(v))
		out[i] = fmt.Sprintf("[masked: %d bytes, sha256:%s]", len(v), hex.EncodeToString(sum[:4]))
	}
	return joinValues(out)
}

func mediaMatch(want, got string) bool {
	if strings.HasSuffix(want, "/*") {
		return strings.HasPrefix(got, strings.TrimSuffix(want, "*"))
	}
	return want == got
}

func (e *Expect) evalBody(o *observation, v *verdict) {
	for _, s := range e.Body.Contains {
		ok := bytes.Contains(o.body, []byte(s))
		v.add(CauseBody, fmt.Sprintf("body contains %q", s), ok, foundStr(ok), "found",
			fmt.Sprintf("body does not contain %q", s))
	}
	for _, s := range e.Body.NotContains {
		found := bytes.Contains(o.body, []byte(s))
		v.add(CauseBody, fmt.Sprintf("body not_contains %q", s), !found, foundStr(found), "not found",
			fmt.Sprintf("body contains %q", s))
	}
	for i, re := range e.bodyRegex {
		ok := re.Match(o.body)
		v.add(CauseBody, "body regex ~"+e.Body.Regex[i], ok, map[bool]string{true: "match", false: "no match"}[ok], "match",
			fmt.Sprintf("body does not match ~%s", e.Body.Regex[i]))
	}
	if len(e.json) == 0 {
		return
	}
	valid := gjson.ValidBytes(o.body)
	for _, j := range e.json {
		name := "json " + j.name
		want := j.want()
		if !valid {
			v.add(CauseJSON, name, false, "(body is not JSON)", want, "json: body is not valid JSON")
			continue
		}
		r := gjson.GetBytes(o.body, j.path)
		got := "(missing)"
		if r.Exists() {
			got = abbrev(r.Raw, 200)
		}
		ok := true
		if j.exists != nil {
			ok = r.Exists() == *j.exists
		}
		if ok && j.equals != nil {
			ok = r.Exists() && bytes.Equal(canonicalJSON([]byte(r.Raw)), j.equals)
		}
		if ok && j.re != nil {
			text := r.Raw
			if r.Type == gjson.String {
				text = r.Str
			}
			ok = r.Exists() && j.re.MatchString(text)
		}
		v.add(CauseJSON, name, ok, got, want, fmt.Sprintf("json %s: got %s, want %s", j.name, got, want))
	}
}

func (j jsonExpect) want() string {
	var parts []string
	if j.exists != nil && (j.equals == nil && j.re == nil || !*j.exists) {
		if *j.exists {
			parts = append(parts, "exists")
		} else {
			parts = append(parts, "absent")
		}
	}
	if j.equals != nil {
		parts = append(parts, string(j.equals))
	}
	if j.re != nil {
		parts = append(parts, "~"+j.re.String())
	}
	return strings.Join(parts, " and ")
}

func foundStr(b bool) string {
	if b {
		return "found"
	}
	return "not found"
}
