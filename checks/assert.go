package checks

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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
	// undecoded names a Content-Encoding vigil does not decode ("br"):
	// body holds the encoded bytes, so content assertions fail.
	undecoded string
	digest    []byte // checksum of the bytes read
	ttfb      time.Duration
	total     time.Duration
	// cert is what a TLS run saw of the server's certificates; nil over
	// plain connections.
	cert *certTLS
	now  time.Time
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

// judge ends res with the verdict: its assertions, and its cause and
// error when one failed, else OK.
func (v *verdict) judge(res *Result) {
	res.Assertions = v.list
	if v.cause != "" {
		res.Cause, res.Err = v.cause, v.err
		return
	}
	res.OK = true
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

// fmtOver formats a figure over its limit for "got over limit": got as
// fmtDur, with more digits while it would read the same as the limit
// (202.4ms over 202ms, not 202ms over 202ms).
func fmtOver(got, limit time.Duration) (string, string) {
	g, l := fmtDur(got), fmtDur(limit)
	for _, r := range []time.Duration{100 * time.Microsecond, 10 * time.Microsecond, time.Microsecond, 1} {
		if g != l || got <= limit {
			break
		}
		g = got.Round(r).String()
	}
	return g, l
}

// evalHTTP runs every http assertion over the observation in the fixed
// order status, headers, not_headers, content_type, body, json, checksum, size,
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
		got := shownHeader(h.name, vals)
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

	for _, h := range e.notHeaders {
		vals := o.header.Values(h.name)
		got := shownHeader(h.name, vals)
		ok := !h.m.Match(vals) // on the real values; only got is masked
		var msg string
		switch h.m.Kind {
		case MatchPresent:
			msg = fmt.Sprintf("header %s is present (%q), want it missing (not_headers)", h.name, got)
		case MatchRegex:
			msg = fmt.Sprintf("header %s: %q matches ~%s (not_headers)", h.name, got, h.m.Value)
		default:
			msg = fmt.Sprintf("header %s: got %q, which not_headers forbids", h.name, got)
		}
		v.add(CauseHeader, "not_header "+h.name, ok, got, "not "+h.m.String(), msg)
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
		if o.undecoded != "" {
			v.add(CauseChecksum, "checksum", false, "(body is "+o.undecoded+"-encoded)", want,
				fmt.Sprintf("checksum %s not computed: %s", e.sum.algo, undecodedMsg(o.undecoded)))
		} else if o.truncated {
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
		if e.Size.HasMax() {
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
		evalCertMinDays(e.CertMinDays, o.cert, o.now, v)
	}
	if e.TTFB > 0 {
		ok := o.ttfb > 0 && o.ttfb <= e.TTFB
		got, limit := fmtOver(o.ttfb, e.TTFB)
		if o.ttfb == 0 {
			got = "(no byte received)"
		}
		v.add(CauseTTFB, "ttfb", ok, got, "<= "+limit, fmt.Sprintf("ttfb %s over %s", got, limit))
	}
	if e.Duration > 0 {
		ok := o.total <= e.Duration
		got, limit := fmtOver(o.total, e.Duration)
		v.add(CauseDuration, "duration", ok, got, "<= "+limit, fmt.Sprintf("duration %s over %s", got, limit))
	}
}

// shownHeader is the got text of a response header's values: "(absent)"
// when there are none, masked (maskValues) under a sensitiveName, URLs as
// shownHeaderValues shows them, cut at 200 bytes.
func shownHeader(name string, vals []string) string {
	switch {
	case len(vals) == 0:
		return "(absent)"
	case sensitiveName(name):
		return maskValues(vals)
	}
	return abbrev(joinValues(shownHeaderValues(name, vals)), 200)
}

// sensitiveName reports whether values under a response header or a JSON
// key of this name are masked in an assertion's got and error text, which
// end up on the status page, in the API and in alerts: any name containing
// token, secret, password, credential, session, api-key, api_key, apikey,
// authorization or cookie (case-insensitive) — Set-Cookie, Cookie,
// Authorization, Proxy-Authorization, X-CSRF-Token, access_token,
// clientSecret, …
func sensitiveName(name string) bool {
	n := strings.ToLower(name)
	for _, s := range sensitiveWords {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

var sensitiveWords = []string{"token", "secret", "password", "credential", "session",
	"api-key", "api_key", "apikey", "authorization", "cookie"}

// shownHeaderValues are the values of the response header name as an
// assertion's got shows them: a URL (Location, Content-Location, and the
// url= of Refresh) as every URL vigil shows, without userinfo, query
// values as "…" and the fragment dropped (units.RedactURL), since an
// origin's redirect carries a session or an OAuth access_token there;
// other values as they are.
func shownHeaderValues(name string, vals []string) []string {
	var show func(string) string
	switch {
	case strings.EqualFold(name, "Location"), strings.EqualFold(name, "Content-Location"):
		show = units.RedactURL
	case strings.EqualFold(name, "Refresh"):
		show = redactRefresh
	default:
		return vals
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = show(v)
	}
	return out
}

// redactRefresh is a Refresh header value ("5; url=/next?t=…") with its
// URL as units.RedactURL shows it, quoted as it was.
func redactRefresh(v string) string {
	i := strings.Index(strings.ToLower(v), "url=")
	if i < 0 {
		return v
	}
	u, q := strings.TrimSpace(v[i+len("url="):]), ""
	if len(u) >= 2 && (u[0] == '"' || u[0] == '\'') && u[len(u)-1] == u[0] {
		u, q = u[1:len(u)-1], u[:1]
	}
	return v[:i+len("url=")] + q + units.RedactURL(u) + q
}

// maskValues replaces each value by its length and the first 8 hex digits
// of its HMAC-SHA256 under maskKey, e.g. "[masked: 34 bytes,
// sha256:1f0c9a2e]", so two values can be told apart without showing
// either. The key is drawn when the process starts, so the digest compares
// values within one process's lifetime only, and is no oracle to confirm
// a guessed password offline. A value that holds a secret a Redactor of
// the process hides (a ${NAME} value echoed under a sensitive key) shows
// as Redacted: its length is not shown either.
func maskValues(vals []string) string {
	out := make([]string, len(vals))
	for i, v := range vals {
		if holdsKnownSecret(v) {
			out[i] = Redacted
			continue
		}
		m := hmac.New(sha256.New, maskKey[:])
		m.Write([]byte(v))
		out[i] = fmt.Sprintf("[masked: %d bytes, sha256:%s]", len(v), hex.EncodeToString(m.Sum(nil)[:4]))
	}
	return joinValues(out)
}

// maskKey keys the digests of maskValues; random per process.
var maskKey = func() (k [32]byte) {
	if _, err := rand.Read(k[:]); err != nil {
		panic("checks: no randomness for the mask key: " + err.Error())
	}
	return k
}()

func mediaMatch(want, got string) bool {
	if strings.HasSuffix(want, "/*") {
		return strings.HasPrefix(got, strings.TrimSuffix(want, "*"))
	}
	return want == got
}

func (e *Expect) evalBody(o *observation, v *verdict) {
	if o.undecoded != "" {
		e.evalUndecoded(o, v)
		return
	}
	// A body cut at body_limit: a match in the part read still counts, a
	// miss says the body was cut, and absence cannot be shown at all.
	var cut, over string
	if o.truncated {
		over = fmt.Sprintf("body over body_limit %s (%d bytes read)", units.ByteSize(o.limit), o.size)
		cut = fmt.Sprintf(" (body cut at body_limit %s: only the first %d bytes were read)", units.ByteSize(o.limit), o.size)
	}
	for _, s := range e.Body.Contains {
		ok := bytes.Contains(o.body, []byte(s))
		got := foundStr(ok)
		if !ok && o.truncated {
			got = "not found in the first " + strconv.FormatInt(o.size, 10) + " bytes"
		}
		v.add(CauseBody, fmt.Sprintf("body contains %q", s), ok, got, "found",
			fmt.Sprintf("body does not contain %q%s", s, cut))
	}
	for _, s := range e.Body.NotContains {
		found := bytes.Contains(o.body, []byte(s))
		name := fmt.Sprintf("body not_contains %q", s)
		if !found && o.truncated {
			v.add(CauseBody, name, false, "(unknown: "+over+")", "not found",
				fmt.Sprintf("body not_contains %q cannot be checked: %s, so its absence cannot be shown", s, over))
			continue
		}
		v.add(CauseBody, name, !found, foundStr(found), "not found",
			fmt.Sprintf("body contains %q", s))
	}
	for i, re := range e.bodyRegex {
		ok := matchBody(re, o.body, !o.truncated)
		got := "match"
		if !ok {
			got = "no match in " + bodyExcerpt(o.body)
			if o.truncated {
				got = "no match in the first " + strconv.FormatInt(o.size, 10) + " bytes: " + bodyExcerpt(o.body)
			}
		}
		v.add(CauseBody, "body regex ~"+e.Body.Regex[i], ok, got, "match",
			fmt.Sprintf("body does not match ~%s%s", e.Body.Regex[i], cut))
	}
	for i, re := range e.bodyNotRe {
		name := "body not_regex ~" + e.Body.NotRegex[i]
		loc := re.FindIndex(o.body)
		if loc == nil && o.truncated {
			v.add(CauseBody, name, false, "(unknown: "+over+")", "no match",
				fmt.Sprintf("body not_regex ~%s cannot be checked: %s, so the absence of a match cannot be shown", e.Body.NotRegex[i], over))
			continue
		}
		got := "no match"
		if loc != nil {
			got = "matched " + matchExcerpt(o.body, loc)
		}
		v.add(CauseBody, name, loc == nil, got, "no match",
			fmt.Sprintf("body matches ~%s: %s", e.Body.NotRegex[i], matchExcerpt(o.body, loc)))
	}
	if len(e.json) == 0 {
		return
	}
	if o.truncated {
		for _, j := range e.json {
			v.add(CauseJSON, "json "+j.name, false, "("+over+")", j.want(),
				fmt.Sprintf("json %s: not parsed: %s", j.name, over))
		}
		return
	}
	body := jsonBody(o.body)
	valid := gjson.ValidBytes(body)
	for _, j := range e.json {
		name := "json " + j.name
		want := j.want()
		if !valid {
			v.add(CauseJSON, name, false, "(body is not JSON)", want, "json: body is not valid JSON")
			continue
		}
		r := gjson.GetBytes(body, j.path)
		got := "(missing)"
		if r.Exists() {
			got = jsonGot(body, j.path, r) // only got is masked; the checks below see r
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
		notNumber := ""
		if ok && len(j.bounds) > 0 {
			ok = r.Exists() && r.Type == gjson.Number
			if r.Exists() && !ok {
				notNumber = " (not a number)"
			}
			for _, b := range j.bounds {
				ok = ok && b.holds(r.Num)
			}
		}
		v.add(CauseJSON, name, ok, got, want, fmt.Sprintf("json %s: got %s%s, want %s", j.name, got, notNumber, want))
	}
}

// evalUndecoded fails every body and json assertion of a body whose
// Content-Encoding vigil does not decode: matching the encoded bytes could
// only mislead (not_contains would pass whatever the content).
func (e *Expect) evalUndecoded(o *observation, v *verdict) {
	got := "(body is " + o.undecoded + "-encoded)"
	msg := undecodedMsg(o.undecoded)
	for _, s := range e.Body.Contains {
		v.add(CauseBody, fmt.Sprintf("body contains %q", s), false, got, "found", "body contains: "+msg)
	}
	for _, s := range e.Body.NotContains {
		v.add(CauseBody, fmt.Sprintf("body not_contains %q", s), false, got, "not found", "body not_contains: "+msg)
	}
	for _, s := range e.Body.Regex {
		v.add(CauseBody, "body regex ~"+s, false, got, "match", "body regex: "+msg)
	}
	for _, s := range e.Body.NotRegex {
		v.add(CauseBody, "body not_regex ~"+s, false, got, "no match", "body not_regex: "+msg)
	}
	for _, j := range e.json {
		v.add(CauseJSON, "json "+j.name, false, got, j.want(), fmt.Sprintf("json %s: %s", j.name, msg))
	}
}

// undecodedMsg says why the content of a body was not asserted on.
func undecodedMsg(enc string) string {
	return fmt.Sprintf("body has Content-Encoding %s, which vigil does not decode (gzip and deflate only); send Accept-Encoding: gzip or identity", enc)
}

// jsonGot is the got text of a JSON value the path selected: masked like a
// sensitive header (see maskValues) when any key of the path, or the key
// the value sits under in the body, is a sensitiveName; otherwise its raw
// JSON, with the values of sensitive keys inside an object or array masked
// (the text is then re-written compactly). A masked string's length and
// digest are those of its decoded contents, any other value's those of its
// JSON text; an array's elements are masked one by one; null stays null.
func jsonGot(body []byte, path string, r gjson.Result) string {
	if pathSensitive(path) || sensitiveName(keyBefore(body, r)) {
		return maskJSON(r)
	}
	// sensitiveName(Raw) is a cheap test that some key may be sensitive
	// before the value is walked.
	out := r.Raw
	if (r.IsObject() || r.IsArray()) && sensitiveName(r.Raw) {
		if s, masked := maskNested(r); masked {
			out = s
		}
	}
	// URLs in it shown as everywhere else: a presigned link's signature,
	// a callback's code.
	if h, ok := HideJSONTextURLs(out); ok {
		out = h
	}
	return abbrev(out, 200)
}

// maskJSON masks a whole JSON value.
func maskJSON(r gjson.Result) string {
	text := func(v gjson.Result) string {
		if v.Type == gjson.String {
			return v.Str
		}
		return v.Raw
	}
	if r.Type == gjson.Null {
		return r.Raw // nothing to hide, and "token is null" is worth seeing
	}
	if !r.IsArray() {
		return maskValues([]string{text(r)})
	}
	var vals []string
	r.ForEach(func(_, v gjson.Result) bool {
		vals = append(vals, text(v))
		return true
	})
	if len(vals) == 0 {
		return "[]"
	}
	return maskValues(vals)
}

// maskNested re-writes an object or array with the value of every
// sensitive key masked as a JSON string, and reports whether it masked
// any; other values are returned as they are.
func maskNested(r gjson.Result) (string, bool) {
	if !r.IsObject() && !r.IsArray() {
		return r.Raw, false
	}
	var b strings.Builder
	lb, rb := byte('['), byte(']')
	if r.IsObject() {
		lb, rb = '{', '}'
	}
	b.WriteByte(lb)
	masked, n := false, 0
	r.ForEach(func(k, v gjson.Result) bool {
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		if r.IsObject() {
			b.WriteString(k.Raw)
			b.WriteByte(':')
			if sensitiveName(k.Str) && v.Type != gjson.Null {
				q, _ := json.Marshal(maskJSON(v))
				b.Write(q)
				masked = true
				return true
			}
		}
		s, m := maskNested(v)
		b.WriteString(s)
		masked = masked || m
		return true
	})
	b.WriteByte(rb)
	return b.String(), masked
}

// pathSensitive reports whether any key of a gjson path ("data.token",
// "sessions.0.id", "users.#.api_key") is a sensitiveName. Keys are split
// at unescaped "." and "|"; "\." is a literal dot.
func pathSensitive(path string) bool {
	var key strings.Builder
	for i := 0; i < len(path); i++ {
		switch c := path[i]; {
		case c == '\\' && i+1 < len(path):
			i++
			key.WriteByte(path[i])
		case c == '.' || c == '|':
			if sensitiveName(key.String()) {
				return true
			}
			key.Reset()
		default:
			key.WriteByte(c)
		}
	}
	return sensitiveName(key.String())
}

// keyBefore is the object key the value r sits under in body, read back
// from r.Index ("" when r is not an object member or its place is
// unknown, as for a path with a modifier). It catches a sensitive key
// that a wildcard path ("data.tok*") does not spell out.
func keyBefore(body []byte, r gjson.Result) string {
	i := r.Index
	if i <= 0 || i+len(r.Raw) > len(body) || string(body[i:i+len(r.Raw)]) != r.Raw {
		return ""
	}
	i = skipSpaceBack(body, i)
	if i == 0 || body[i-1] != ':' {
		return ""
	}
	end := skipSpaceBack(body, i-1)
	if end == 0 || body[end-1] != '"' {
		return ""
	}
	for start := end - 2; start >= 0; start-- {
		if body[start] != '"' {
			continue
		}
		bs := 0
		for j := start - 1; j >= 0 && body[j] == '\\'; j-- {
			bs++
		}
		if bs%2 == 0 {
			return gjson.ParseBytes(body[start:end]).Str
		}
	}
	return ""
}

// skipSpaceBack returns the index after the last non-space byte before i.
func skipSpaceBack(b []byte, i int) int {
	for i > 0 && (b[i-1] == ' ' || b[i-1] == '\t' || b[i-1] == '\n' || b[i-1] == '\r') {
		i--
	}
	return i
}

func (j jsonExpect) want() string {
	var parts []string
	if j.exists != nil && (j.equals == nil && j.re == nil && len(j.bounds) == 0 || !*j.exists) {
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
	for _, b := range j.bounds {
		parts = append(parts, b.String())
	}
	return strings.Join(parts, " and ")
}

func foundStr(b bool) string {
	if b {
		return "found"
	}
	return "not found"
}
