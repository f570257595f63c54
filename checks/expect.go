package checks

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-synthetics/vigil/reporting/units"
)

// Expect is the assertion vocabulary (config key `expect:`). Every field is
// optional; an unset field asserts nothing, except Status, which defaults to
// "200-399" for http checks, and RCode, which defaults to NOERROR for dns
// checks. Which keys a check kind accepts: http — all but the dns ones
// (rcode, answer, authority, additional); tcp — ttfb, duration, and
// cert_min_days with tcp.tls; tls — cert_min_days, duration; dns — rcode,
// answer, authority, additional, ttfb, duration; grpc — ttfb, duration,
// and cert_min_days over TLS.
//
// When several assertions fail, Result.Cause is the first failing one in this
// fixed order: protocol (http.http2: required, fail_if_not_ssl,
// fail_if_ssl), status, header (headers, not_headers and content_type),
// body, json, checksum, size, cert (cert_min_days), ttfb, duration. The
// service-level causes ttfb and duration come last so that a hard failure is never hidden
// behind a slow one. All assertions are evaluated and listed in
// Result.Assertions whenever a response arrived.
type Expect struct {
	// Status lists the accepted status codes: codes, ranges and classes,
	// as a YAML list ([200, 304], ["2xx", 304]) or comma-separated in one
	// string ("200-299,304", "2xx"); an element may itself hold several,
	// comma-separated. A YAML int (200) arrives as "200". Default for http
	// checks: "200-399".
	Status StatusList `mapstructure:"status"`
	// Headers maps a response header name (any case) to a matcher: an exact
	// value, "~regex", "present" or "absent" (keywords in any case; "=text"
	// forces an exact match). A list in place of the map is a config error,
	// and so is an empty value ("" or "="): "present" is any value, "~^$"
	// an empty one.
	Headers HeaderMatchers `mapstructure:"headers"`
	// Body holds substring and regex assertions on the response body (the
	// first http.body_limit bytes, after gzip or deflate Content-Encoding is
	// decoded).
	Body BodyExpect `mapstructure:"body"`
	// JSON holds assertions on the response body parsed as JSON.
	JSON []JSONExpect `mapstructure:"json"`
	// Checksum is the expected digest of the whole body, computed while
	// streaming: "sha256:<64 hex>", "sha1:<40 hex>", "md5:<32 hex>" or
	// "crc32:<8 hex>" (IEEE). It covers the decoded content when the body
	// came with Content-Encoding gzip or deflate (the bytes of the published
	// file), else the bytes served. A body longer than http.body_limit fails
	// it, and so does an encoding vigil does not decode (br, zstd, …).
	Checksum string `mapstructure:"checksum"`
	// Size bounds the body length in bytes.
	Size SizeExpect `mapstructure:"size"`
	// TTFB is the maximum time from the start of the run to the first
	// response byte (tcp: first byte read). 0 = no limit; the config
	// loader rejects an explicit 0s (canary.Config.SetKeys).
	TTFB time.Duration `mapstructure:"ttfb"`
	// Duration is the maximum total run time. 0 = no limit; the config
	// loader rejects an explicit 0s.
	Duration time.Duration `mapstructure:"duration"`
	// CertMinDays is the minimum number of whole days left before the
	// NotAfter of the earliest-expiring certificate of the best verified
	// chain, or with nothing verified of the certificates presented (https
	// and tls checks; see certexpiry.go). 0 = not checked.
	CertMinDays int `mapstructure:"cert_min_days"`
	// ContentType is the expected media type of the Content-Type header,
	// compared case-insensitively with parameters ignored
	// ("application/json" matches "application/json; charset=utf-8");
	// "text/*" matches any subtype. Its failure cause is `header`.
	ContentType string `mapstructure:"content_type"`
	// NotHeaders maps a response header name (any case) to a matcher that
	// must not hold, as blackbox_exporter's fail_if_header_matches: an
	// exact value, "~regex" (unanchored) or "present" (the header must be
	// missing). A header that is missing passes every entry. "absent" is
	// a config error (write headers: {Name: present}). Its failure cause
	// is `header`, and values of sensitive headers are masked as for
	// Headers. Default: none.
	NotHeaders HeaderMatchers `mapstructure:"not_headers"`
	// FailIfNotSSL fails the run with cause protocol when the final
	// response (the last hop, with http.follow_redirects) did not come
	// over TLS, as blackbox_exporter's fail_if_not_ssl: it catches a
	// redirect from https:// down to http://. Default false.
	FailIfNotSSL bool `mapstructure:"fail_if_not_ssl"`
	// FailIfSSL fails the run with cause protocol when the final response
	// came over TLS (blackbox_exporter's fail_if_ssl). Excludes
	// FailIfNotSSL. Default false.
	FailIfSSL bool `mapstructure:"fail_if_ssl"`
	// RCode lists the DNS response codes accepted (dns checks), by name
	// (NOERROR, NXDOMAIN, SERVFAIL, REFUSED, … in any case) or number,
	// as a YAML list or comma-separated in one string, as
	// blackbox_exporter's valid_rcodes. Its failure cause is `status`.
	// Default (dns checks): NOERROR.
	RCode []string `mapstructure:"rcode"`
	// Answer, Authority and Additional assert on the records of a DNS
	// answer's sections (dns checks; see RecordExpect). Their failure
	// cause is `body`. Default: none.
	Answer     RecordExpect `mapstructure:"answer"`
	Authority  RecordExpect `mapstructure:"authority"`
	Additional RecordExpect `mapstructure:"additional"`

	compiled    bool
	rcodes      []int // nil: NOERROR
	status      StatusRanges
	headers     []headerExpect
	notHeaders  []headerExpect
	bodyRegex   []*regexp.Regexp
	bodyNotRe   []*regexp.Regexp
	json        []jsonExpect
	sum         *checksum
	contentType string
}

// StatusList is expect.status as written, one string per YAML list element.
// The config loader's weakly typed decoding turns a single value (200,
// "200,304") into a one-element list. nil, or one empty string, is unset.
type StatusList []string

// String joins the elements with commas, as a single-string status reads.
func (l StatusList) String() string { return strings.Join(l, ",") }

// isSet reports whether the list holds anything but one empty string.
func (l StatusList) isSet() bool {
	return l != nil && !(len(l) == 1 && strings.TrimSpace(l[0]) == "")
}

// BodyExpect asserts on the response body text (config key `expect.body`).
// An empty string in any list is a config error (it would match every
// body). When the body is longer than http.body_limit only the first
// body_limit bytes are searched: a match found there passes, a miss fails
// saying the body was cut, and not_contains always fails (absence from the
// rest cannot be shown). Lists no body passes together (a string in both
// contains and not_contains) are config errors: see BodyExpect.conflicts.
type BodyExpect struct {
	// Contains lists substrings that must all occur in the body.
	Contains []string `mapstructure:"contains"`
	// NotContains lists substrings that must not occur in the body.
	NotContains []string `mapstructure:"not_contains"`
	// Regex lists Go regular expressions that must all match the body.
	Regex []string `mapstructure:"regex"`
	// NotRegex lists Go regular expressions none of which may match the
	// body (blackbox_exporter's fail_if_body_matches_regexp). A body cut
	// at body_limit fails them when nothing matched in the part read, as
	// not_contains does.
	NotRegex []string `mapstructure:"not_regex"`
}

// JSONExpect is one assertion on a JSON body (config key `expect.json[]`).
// With none of Equals, Exists, Regex and the bounds set it asserts that
// Path exists. Entries on the same path are judged together at load:
// assertions no value passes together are config errors (see
// jsonConflicts).
type JSONExpect struct {
	// Path selects a value with gjson syntax ("ok", "items.0.id",
	// "items.#", `items.#(id==2).name`), checked at load (an unclosed
	// bracket, quote or query is an error, see compileJSONPath). A leading
	// "$." is dropped, and after it JSONPath's [1] and ['key'] are read as
	// gjson's .1 and .key ("$.a.b[1]" is "a.b.1").
	Path string `mapstructure:"path"`
	// Equals is the expected value, compared as JSON: 1 equals 1.0, "1" does
	// not equal 1, numbers compare as exact decimals (12345678901234567890
	// does not equal 12345678901234567891). Objects and arrays compare by
	// content. YAML null (`equals: null`, `~` or empty) asserts JSON null:
	// the loader's DecodeHook turns it into JSONNull{}; a nil Equals is
	// unset.
	Equals any `mapstructure:"equals"`
	// Exists asserts that the path exists (true) or does not (false).
	Exists *bool `mapstructure:"exists"`
	// Regex must match the selected value's text (a string's contents, or
	// the raw JSON of any other value).
	Regex string `mapstructure:"regex"`
	// GT, GTE, LT and LTE bound a number: the value must be a JSON number
	// greater than, at least, less than, at most the bound (compared as
	// float64). A string, even "42", fails. Unset = no bound.
	GT  *float64 `mapstructure:"gt"`
	GTE *float64 `mapstructure:"gte"`
	LT  *float64 `mapstructure:"lt"`
	LTE *float64 `mapstructure:"lte"`
}

// SizeExpect bounds the body size (config key `expect.size`), in bytes with
// a unit ("1KiB"). A Min of 0 is no bound; a Max of 0 is no bound unless
// MaxSet, when it asserts an empty body.
type SizeExpect struct {
	Min units.ByteSize `mapstructure:"min"`
	Max units.ByteSize `mapstructure:"max"`
	// MaxSet makes Max a bound even when it is 0 (`max: 0B`: the body must
	// be empty). The config loader sets it for every max the file writes
	// (canary.Config.SetKeys); an omitted max is no bound.
	MaxSet bool `mapstructure:"-"`
}

// HasMax reports whether Max is a bound.
func (s SizeExpect) HasMax() bool { return s.Max > 0 || s.MaxSet }

type headerExpect struct {
	name string // canonical
	m    HeaderMatcher
}

type jsonExpect struct {
	path   string // gjson path
	name   string // as written
	equals []byte // canonical JSON, nil when unset
	exists *bool
	re     *regexp.Regexp
	bounds []numBound
}

// numBound is one of json[].gt, gte, lt, lte.
type numBound struct {
	op string // ">", ">=", "<", "<="
	n  float64
}

// holds reports whether x satisfies the bound.
func (b numBound) holds(x float64) bool {
	switch b.op {
	case ">":
		return x > b.n
	case ">=":
		return x >= b.n
	case "<":
		return x < b.n
	}
	return x <= b.n
}

func (b numBound) String() string { return b.op + " " + strconv.FormatFloat(b.n, 'f', -1, 64) }

// ValidateAndSetDefaults validates every key and compiles status ranges,
// header matchers, regexes, JSON assertions and the checksum. Errors start
// with the key relative to `expect`, are joined with errors.Join and wrap a
// sentinel (ErrBadStatus, ErrBadRegex, ErrBadChecksum, ErrBadValue).
func (e *Expect) ValidateAndSetDefaults() error {
	var errs []error
	e.status = nil
	switch {
	case e.Status != nil && len(e.Status) == 0:
		errs = append(errs, errorf(ErrBadValue, "status: empty list (omit the key for the default %s)", DefaultStatus))
	case e.Status.isSet():
		// One element (a scalar in YAML) is named "status", as it always
		// was; elements of a longer list by index: "status[1]".
		for i, el := range e.Status {
			key := "status"
			if len(e.Status) > 1 {
				key = fmt.Sprintf("status[%d]", i)
			}
			rs, err := ParseStatusRanges(el)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", key, err))
				continue
			}
			e.status = append(e.status, rs...)
		}
	}

	var herrs []error
	e.headers, herrs = compileHeaderExpects("headers", e.Headers, e.headers[:0], nil)
	errs = append(errs, herrs...)
	e.notHeaders, herrs = compileHeaderExpects("not_headers", e.NotHeaders, e.notHeaders[:0], func(k string, m HeaderMatcher) error {
		if m.Kind == MatchAbsent {
			// "must not be absent" is headers' present, said twice over.
			return errorf(ErrBadValue, "not_headers.%s: %q would fail when the header is missing; write headers: {%s: present}", k, e.NotHeaders[k], k)
		}
		return nil
	})
	errs = append(errs, herrs...)
	errs = append(errs, headerConflicts(e.headers, e.notHeaders)...)
	if e.FailIfSSL && e.FailIfNotSSL {
		errs = append(errs, errorf(ErrConflict, "fail_if_ssl: set either fail_if_ssl or fail_if_not_ssl, not both (no response passes both)"))
	}

	for _, l := range []struct {
		key  string
		list []string
	}{{"contains", e.Body.Contains}, {"not_contains", e.Body.NotContains}, {"regex", e.Body.Regex}, {"not_regex", e.Body.NotRegex}} {
		for i, s := range l.list {
			if s == "" {
				errs = append(errs, errorf(ErrBadValue, "body.%s[%d]: empty string (it matches every body)", l.key, i))
			}
		}
	}
	e.bodyRegex = e.bodyRegex[:0]
	for i, src := range e.Body.Regex {
		if src == "" {
			continue
		}
		re, err := compileRegex(src)
		if err != nil {
			errs = append(errs, fmt.Errorf("body.regex[%d]: %w", i, err))
			continue
		}
		e.bodyRegex = append(e.bodyRegex, re)
	}
	e.bodyNotRe = e.bodyNotRe[:0]
	for i, src := range e.Body.NotRegex {
		if src == "" {
			continue
		}
		re, err := compileRegex(src)
		if err != nil {
			errs = append(errs, fmt.Errorf("body.not_regex[%d]: %w", i, err))
			continue
		}
		e.bodyNotRe = append(e.bodyNotRe, re)
	}

	errs = append(errs, e.Body.conflicts()...)

	e.json = e.json[:0]
	if e.JSON != nil && len(e.JSON) == 0 {
		errs = append(errs, errorf(ErrBadValue, "json: empty list (omit the key, or list {path: …} assertions)"))
	}
	jsonOK := true
	for i, j := range e.JSON {
		c, err := j.compile()
		if err != nil {
			errs = append(errs, fmt.Errorf("json[%d].%w", i, err))
			jsonOK = false
			continue
		}
		e.json = append(e.json, c)
	}
	if jsonOK {
		errs = append(errs, jsonConflicts(e.json)...)
	}

	e.sum = nil
	if e.Checksum != "" {
		c, err := parseChecksum(e.Checksum)
		if err != nil {
			errs = append(errs, fmt.Errorf("checksum: %w", err))
		}
		e.sum = c
	}

	if e.Size.Min < 0 || e.Size.Max < 0 {
		errs = append(errs, errorf(ErrBadValue, "size: sizes must not be negative"))
	} else if e.Size.HasMax() && e.Size.Min > e.Size.Max {
		errs = append(errs, errorf(ErrBadValue, "size: min %s is above max %s", e.Size.Min, e.Size.Max))
	}
	if e.TTFB < 0 {
		errs = append(errs, errorf(ErrBadValue, "ttfb: must not be negative"))
	}
	if e.Duration < 0 {
		errs = append(errs, errorf(ErrBadValue, "duration: must not be negative"))
	}
	if e.CertMinDays < 0 {
		errs = append(errs, errorf(ErrBadValue, "cert_min_days: must not be negative"))
	}

	var rerrs []error
	e.rcodes, rerrs = compileRcodes(e.RCode)
	errs = append(errs, rerrs...)
	errs = append(errs, e.Answer.compile("answer")...)
	errs = append(errs, e.Authority.compile("authority")...)
	errs = append(errs, e.Additional.compile("additional")...)

	e.contentType = ""
	if e.ContentType != "" {
		mt, _, err := mime.ParseMediaType(e.ContentType)
		if err != nil || !strings.Contains(mt, "/") {
			errs = append(errs, errorf(ErrBadValue, "content_type: %q is not a media type", e.ContentType))
		}
		e.contentType = mt
	}
	err := errors.Join(errs...)
	e.compiled = err == nil
	return err
}

// compileHeaderExpects compiles the matchers of the map under key
// (headers, not_headers) in name order onto out; check, when set, refuses
// a matcher the key does not take.
func compileHeaderExpects(key string, in map[string]string, out []headerExpect, check func(string, HeaderMatcher) error) ([]headerExpect, []error) {
	var errs []error
	names := make([]string, 0, len(in))
	for k := range in {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !validToken(k) {
			errs = append(errs, errorf(ErrBadValue, "%s.%s: not a header name", key, k))
			continue
		}
		m, err := ParseHeaderMatcher(in[k])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.%s: %w", key, k, err))
			continue
		}
		if m.Kind == MatchExact && m.Value == "" {
			// "" reads as "any value" to some and "an empty value" to
			// others; both are written another way.
			errs = append(errs, errorf(ErrBadValue, "%s.%s: empty value: %s", key, k, emptyHeaderHint[key]))
			continue
		}
		if check != nil {
			if err := check(k, m); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		out = append(out, headerExpect{name: http.CanonicalHeaderKey(k), m: m})
	}
	return out, errs
}

// emptyHeaderHint says, per key, how to write what an empty matcher
// may have meant.
var emptyHeaderHint = map[string]string{
	"headers":     `write present for any value, or "~^$" for an empty one`,
	"not_headers": `write present to fail when the header is sent, or "~^$" to fail when it is sent empty`,
}

// ValidateFor reports the keys set that a check of kind ("http", "tcp",
// "tls", "dns", "grpc", "icmp") does not use, as ErrUnsupported errors relative
// to `expect` ("status: tcp checks do not use it"). NewTCP, NewTLS, NewDNS
// and NewGRPC call it; a config validator can call it before compiling.
func (e *Expect) ValidateFor(kind string) error {
	switch kind {
	case "http":
		return e.onlyKeys("http", httpExpectKeys...)
	case "tcp":
		// cert_min_days needs tcp.tls, which NewTCP checks.
		return e.onlyKeys("tcp", "ttfb", "duration", "cert_min_days")
	case "tls":
		return e.onlyKeys("tls", "cert_min_days", "duration")
	case "dns":
		return e.onlyKeys("dns", "rcode", "answer", "authority", "additional", "ttfb", "duration")
	case "grpc":
		// cert_min_days needs TLS, which NewGRPC checks.
		return e.onlyKeys("grpc", "ttfb", "duration", "cert_min_days")
	case "icmp":
		return e.onlyKeys("icmp", "ttfb", "duration")
	}
	return nil
}

// httpExpectKeys are the keys an http check (and a script's http step)
// uses: all but the dns ones.
var httpExpectKeys = []string{"status", "headers", "body", "json", "checksum", "size", "ttfb", "duration",
	"cert_min_days", "content_type", "not_headers", "fail_if_not_ssl", "fail_if_ssl"}

// Keys returns the keys set, sorted ("body", "status"): none for an
// Expect that asserts nothing.
func (e *Expect) Keys() []string {
	var keys []string
	for k, v := range e.setKeys() {
		if v {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// setKeys maps every key to whether it is set.
func (e *Expect) setKeys() map[string]bool {
	return map[string]bool{
		"status":          e.Status.isSet(),
		"headers":         len(e.Headers) > 0,
		"body":            len(e.Body.Contains)+len(e.Body.NotContains)+len(e.Body.Regex)+len(e.Body.NotRegex) > 0,
		"json":            len(e.JSON) > 0,
		"checksum":        e.Checksum != "",
		"size":            e.Size != (SizeExpect{}),
		"ttfb":            e.TTFB != 0,
		"duration":        e.Duration != 0,
		"cert_min_days":   e.CertMinDays != 0,
		"content_type":    e.ContentType != "",
		"not_headers":     len(e.NotHeaders) > 0,
		"fail_if_not_ssl": e.FailIfNotSSL,
		"fail_if_ssl":     e.FailIfSSL,
		"rcode":           e.RCode != nil,
		"answer":          e.Answer.isSet(),
		"authority":       e.Authority.isSet(),
		"additional":      e.Additional.isSet(),
	}
}

// onlyKeys returns an ErrUnsupported error for each set key not in allowed.
func (e *Expect) onlyKeys(kind string, allowed ...string) error {
	set := e.setKeys()
	for _, a := range allowed {
		delete(set, a)
	}
	keys := make([]string, 0, len(set))
	for k, v := range set {
		if v {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var errs []error
	for _, k := range keys {
		errs = append(errs, errorf(ErrUnsupported, "%s: %s checks do not use it", k, kind))
	}
	return errors.Join(errs...)
}

func (j JSONExpect) compile() (jsonExpect, error) {
	c := jsonExpect{name: j.Path, exists: j.Exists}
	p, err := compileJSONPath(j.Path)
	if err != nil {
		if strings.TrimSpace(j.Path) == "" {
			return c, errorf(ErrBadValue, "path: %v", err)
		}
		return c, errorf(ErrBadValue, "path: %q: %v", j.Path, err)
	}
	c.path = p
	if j.Equals != nil {
		b, err := json.Marshal(j.Equals)
		if err != nil {
			return c, errorf(ErrBadValue, "equals: %v", err)
		}
		c.equals = canonicalJSON(b)
	}
	if j.Regex != "" {
		re, err := compileRegex(j.Regex)
		if err != nil {
			return c, fmt.Errorf("regex: %w", err)
		}
		c.re = re
	}
	if j.GT != nil && j.GTE != nil {
		return c, errorf(ErrConflict, "gte: set either gt or gte, not both")
	}
	if j.LT != nil && j.LTE != nil {
		return c, errorf(ErrConflict, "lte: set either lt or lte, not both")
	}
	for _, b := range []struct {
		op string
		n  *float64
	}{{">", j.GT}, {">=", j.GTE}, {"<", j.LT}, {"<=", j.LTE}} {
		if b.n != nil {
			c.bounds = append(c.bounds, numBound{b.op, *b.n})
		}
	}
	if lo, hi := firstBound(c.bounds, ">"), firstBound(c.bounds, "<"); lo != nil && hi != nil &&
		(lo.n > hi.n || lo.n == hi.n && (lo.op == ">" || hi.op == "<")) {
		return c, errorf(ErrConflict, "%s: no number is %s and %s", keyOf(*lo), lo, hi)
	}
	if j.Exists != nil && !*j.Exists && (c.equals != nil || c.re != nil || len(c.bounds) > 0) {
		return c, errorf(ErrConflict, "exists: false cannot be combined with equals, regex, gt, gte, lt or lte")
	}
	if c.equals == nil && c.re == nil && c.exists == nil && len(c.bounds) == 0 {
		t := true
		c.exists = &t
	}
	return c, nil
}

// firstBound is the bound whose operator starts with op (">" or "<").
func firstBound(bs []numBound, op string) *numBound {
	for i := range bs {
		if strings.HasPrefix(bs[i].op, op) {
			return &bs[i]
		}
	}
	return nil
}

// keyOf is the config key of a bound.
func keyOf(b numBound) string {
	return map[string]string{">": "gt", ">=": "gte", "<": "lt", "<=": "lte"}[b.op]
}

// canonicalJSON re-encodes a JSON document so that equal values compare
// byte-equal: object keys sorted, no insignificant space, and every number
// rewritten by canonicalNumber, so 1, 1.0 and 1e0 compare equal while
// integers above 2^53 keep every digit (12345678901234567890 and
// 12345678901234567891 differ; float64 would make them equal).
func canonicalJSON(b []byte) []byte {
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return b
	}
	out, err := json.Marshal(canonicalNumbers(v))
	if err != nil {
		return b
	}
	return out
}

// canonicalNumbers rewrites every json.Number in a decoded value with
// canonicalNumber.
func canonicalNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		return json.Number(canonicalNumber(string(x)))
	case map[string]any:
		for k, e := range x {
			x[k] = canonicalNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = canonicalNumbers(e)
		}
	}
	return v
}

// canonicalNumber writes a JSON number as an exact decimal in one form per
// value: no leading zeros, no trailing fractional zeros, no exponent unless
// the plain form would need more than 21 zeros ("1.0" → "1", "1e2" →
// "100", "-0" → "0", "1.5e-3" → "0.0015", "1e40" → "1e40"). A string that
// is not a JSON number is returned as it is.
func canonicalNumber(s string) string {
	neg := strings.HasPrefix(s, "-")
	t := strings.TrimPrefix(s, "-")
	mant, expStr, hasExp := strings.Cut(strings.ToLower(t), "e")
	exp := 0
	if hasExp {
		n, err := strconv.Atoi(strings.TrimPrefix(expStr, "+"))
		if err != nil {
			return s
		}
		exp = n
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return s
	}
	exp -= len(frac) // value = digits × 10^exp
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return "0"
	}
	for strings.HasSuffix(digits, "0") {
		digits = digits[:len(digits)-1]
		exp++
	}
	var out string
	switch {
	case exp >= 0 && exp <= 21:
		out = digits + strings.Repeat("0", exp)
	case exp < 0 && -exp < len(digits):
		out = digits[:len(digits)+exp] + "." + digits[len(digits)+exp:]
	case exp < 0 && -exp-len(digits) <= 21:
		out = "0." + strings.Repeat("0", -exp-len(digits)) + digits
	default:
		out = digits + "e" + strconv.Itoa(exp)
	}
	if neg {
		out = "-" + out
	}
	return out
}

// checksumLen maps an algorithm to its digest length in bytes.
var checksumLen = map[string]int{"sha256": 32, "sha1": 20, "md5": 16, "crc32": 4}

type checksum struct {
	algo string
	want []byte
}

func parseChecksum(s string) (*checksum, error) {
	algo, hx, ok := strings.Cut(strings.TrimSpace(s), ":")
	algo = strings.ToLower(algo)
	n, known := checksumLen[algo]
	if !ok || !known {
		return nil, errorf(ErrBadChecksum, "want \"sha256:<64 hex>\" (or sha1, md5, crc32), got %s", algoOnly(s))
	}
	b, err := hex.DecodeString(hx)
	if err != nil || len(b) != n {
		return nil, errorf(ErrBadChecksum, "want \"%s:<%d hex>\", got %d characters after %q", algo, 2*n, len(hx), algo+":")
	}
	return &checksum{algo: algo, want: b}, nil
}

// algoOnly shows the algorithm part of a checksum value and nothing of the
// digest, which may come from a secret: "sha257:…" or "no algorithm prefix".
func algoOnly(s string) string {
	if i := strings.IndexByte(s, ':'); i >= 0 && i <= 10 {
		return strconv.Quote(s[:i+1] + "…")
	}
	return "no algorithm prefix"
}

// abbrev shortens s to n bytes plus "…".
func abbrev(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
