package scripts

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/vigil-synthetics/vigil/checks"
)

// runHTTP sends an HTTP step's request with the run's cookie jar and
// variables, then extracts its variables.
//
// When the step fails before all of its variables are extracted, every
// variable it extracts is unset: a later step (an `always` cleanup, an
// expr) that uses one fails naming it rather than using a value an earlier
// step extracted.
func (r *run) runHTTP(ctx context.Context, i int, s *Step) (o outcome) {
	extracted := false
	defer func() {
		if o.err != nil && !extracted {
			for name := range s.extract {
				r.vars.unset(name)
			}
		}
	}()
	for _, rf := range s.refs {
		if _, ok := r.vars.lookup(rf); !ok {
			if rf.env {
				return outcome{cause: checks.CauseAgent, err: &EnvUnsetError{Name: rf.name}}
			}
			return failf("variable %s is not set (the step that extracts it did not run or failed)", rf.name)
		}
	}
	h := r.runner.https[i]
	res, resp := h.RunWith(ctx, r.target, checks.RunOptions{
		Jar: r.jar,
		Expand: func(s string) string {
			v, err := r.vars.expand(s)
			if err != nil {
				return s
			}
			return v
		},
		KeepBody: true,
	})
	o = outcome{
		status:     res.StatusCode,
		ttfb:       res.Phases.TTFB,
		phases:     res.Phases,
		assertions: res.Assertions,
		metrics:    phaseMetrics(res.Phases),
	}
	if resp != nil {
		o.url = resp.URL
		r.setLast(resp, res.Phases.Total)
	}
	if !res.OK {
		o.cause = res.Cause
		o.err = fmt.Errorf("%s", res.Err)
		if res.Err == "" {
			o.err = fmt.Errorf("http: %s", res.Cause)
		}
		// A response that only missed a speed target (ttfb, duration) is
		// otherwise good: the run goes on after it (see Run), so its
		// variables are extracted for the steps that follow.
		if !slowOnly(res) || resp == nil {
			return o
		}
	}
	if resp == nil {
		if len(s.extract) > 0 {
			o.cause, o.err = checks.CauseInternal, fmt.Errorf("http: no response to extract from")
		}
		return o
	}
	names := make([]string, 0, len(s.extract))
	for name := range s.extract {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		v, err := s.extract[name].from(resp, r.jar)
		if err != nil {
			err = fmt.Errorf("extract %s: %w", name, err)
			if o.err != nil { // slow as well
				err = fmt.Errorf("%w; %s", err, o.err)
			}
			o.cause, o.err = checks.CauseScript, err
			return o
		}
		e := s.extract[name]
		r.vars.set(name, v, e.secret(name))
		if e.Header != "" && e.secret(name) {
			r.vars.addHeaderCookies(e.Header, v)
		}
	}
	extracted = true
	return o
}

// secret reports whether the value the extractor takes into the variable
// name is a secret of the run (see Extract.Secret).
func (e *Extract) secret(name string) bool {
	return e.Secret || e.Cookie != "" || checks.SensitiveName(name) ||
		(e.Header != "" && checks.SensitiveName(e.Header)) || (e.JSON != "" && checks.SensitiveName(e.JSON))
}

// slowOnly reports whether a failed http step's response only missed a
// speed target: its cause is ttfb or duration and every assertion that
// failed is one of those (checks ranks the speed causes last, so any other
// failed assertion would be the cause).
func slowOnly(res checks.Result) bool {
	if res.OK || !res.Cause.SLO() {
		return false
	}
	for _, a := range res.Assertions {
		if !a.OK && a.Name != string(checks.CauseTTFB) && a.Name != string(checks.CauseDuration) {
			return false
		}
	}
	return true
}

// utf8BOM is the byte-order mark some servers (.NET, Windows tools) put
// before a UTF-8 JSON document. RFC 8259 §8.1 lets a parser ignore it, and
// a browser's Response.json() does, so the json extractor and last.json
// skip it too.
var utf8BOM = []byte("\xef\xbb\xbf")

// from extracts the value from a response.
func (e *Extract) from(resp *checks.Response, jar http.CookieJar) (string, error) {
	switch {
	case e.JSON != "":
		body := bytes.TrimPrefix(resp.Body, utf8BOM)
		if !gjson.ValidBytes(body) {
			return "", fmt.Errorf("json %s: body is not JSON", e.JSON)
		}
		v := gjson.GetBytes(body, e.jsonPath)
		if !v.Exists() {
			return "", fmt.Errorf("json %s: no such path in the body", e.JSON)
		}
		if v.IsObject() || v.IsArray() {
			return v.Raw, nil
		}
		return v.String(), nil
	case e.re != nil:
		m := e.re.FindSubmatch(resp.Body)
		if m == nil {
			return "", fmt.Errorf("regex /%s/: no match in the body", e.Regex)
		}
		if len(m) > 1 {
			return string(m[1]), nil
		}
		return string(m[0]), nil
	case e.Header != "":
		vs := resp.Header.Values(e.Header)
		if len(vs) == 0 {
			return "", fmt.Errorf("header %s: not in the response", e.Header)
		}
		return vs[0], nil
	case e.Cookie != "":
		hr := http.Response{Header: resp.Header}
		for _, c := range hr.Cookies() {
			if c.Name == e.Cookie {
				return c.Value, nil
			}
		}
		if jar != nil {
			if u, err := url.Parse(resp.URL); err == nil {
				for _, c := range jar.Cookies(u) {
					if c.Name == e.Cookie {
						return c.Value, nil
					}
				}
			}
		}
		return "", fmt.Errorf("cookie %s: not set", e.Cookie)
	}
	return "", fmt.Errorf("no extractor")
}

// setLast records the response for expression steps.
func (r *run) setLast(resp *checks.Response, d time.Duration) {
	l := lastResponse{
		StatusCode: resp.StatusCode,
		Headers:    map[string]string{},
		Body:       string(resp.Body),
		URL:        resp.URL,
		DurationMS: float64(d) / float64(time.Millisecond),
	}
	for k, vs := range resp.Header {
		if len(vs) > 0 {
			l.Headers[strings.ToLower(k)] = vs[0]
		}
	}
	var v any
	if json.Unmarshal(bytes.TrimPrefix(resp.Body, utf8BOM), &v) == nil {
		l.JSON = v
	}
	r.last = l
}

// phaseMetrics turns request phases into step metrics in milliseconds.
func phaseMetrics(p checks.Phases) map[string]float64 {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	m := map[string]float64{}
	for k, d := range map[string]time.Duration{
		"dns_ms": p.DNS, "connect_ms": p.Connect, "tls_ms": p.TLS,
		"ttfb_ms": p.TTFB, "transfer_ms": p.Transfer, "total_ms": p.Total,
	} {
		if d > 0 {
			m[k] = ms(d)
		}
	}
	return m
}
