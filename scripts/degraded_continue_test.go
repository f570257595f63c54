package scripts

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// slowOrigin answers /slow after 300ms (a token in JSON), /status/500 with 500, /echo with 200 and counts the
// requests to /echo, /ok with 200.
type slowOrigin struct {
	*httptest.Server
	echoes   atomic.Int64
	lastAuth atomic.Value
}

func newSlowOrigin(t *testing.T) *slowOrigin {
	o := &slowOrigin{}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/slow":
			time.Sleep(300 * time.Millisecond)
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"token":"tok-slow"}`))
		case "/status/500":
			w.WriteHeader(http.StatusInternalServerError)
		case "/echo":
			o.echoes.Add(1)
			o.lastAuth.Store(r.Header.Get("Authorization"))
		case "/ok":
		case "/nocontent":
			w.WriteHeader(http.StatusNoContent)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(o.Close)
	return o
}

// A step that only misses a speed target does not stop the script: the
// steps after it run, a later hard failure decides the run, and a run that
// is only slow stays slow (cause ttfb or duration, degraded in the canary).
func TestSlowStepDoesNotStopScript(t *testing.T) {
	o := newSlowOrigin(t)
	tests := []struct {
		name      string
		src       string
		ok        bool
		cause     checks.Cause
		errPrefix string // the start of Result.Err
		steps     []checks.Cause
		skipped   []bool
		echoes    int64
		status    int // the run's status code (0: not checked)
	}{
		{
			name: "slow then 500 is a hard failure",
			src: `
- {http: {path: /slow}, expect: {ttfb: 100ms}}
- {http: {path: /status/500}}`,
			cause:     checks.CauseScript,
			errPrefix: `step 1 (http): status 500`,
			steps:     []checks.Cause{checks.CauseTTFB, checks.CauseStatus},
			skipped:   []bool{false, false},
		},
		{
			name: "slow then pass is slow",
			src: `
- {http: {path: /slow}, expect: {duration: 100ms}}
- {http: {path: /echo}}`,
			cause:     checks.CauseDuration,
			errPrefix: `step 0 (http): duration `,
			steps:     []checks.Cause{checks.CauseDuration, ""},
			skipped:   []bool{false, false},
			echoes:    1,
		},
		{
			name: "a slow run's status is the slow step's",
			src: `
- {http: {path: /slow}, expect: {ttfb: 100ms}}
- {http: {path: /nocontent}}`,
			cause:     checks.CauseTTFB,
			errPrefix: `step 0 (http): ttfb `,
			steps:     []checks.Cause{checks.CauseTTFB, ""},
			skipped:   []bool{false, false},
			status:    200,
		},
		{
			name: "the first slow step decides a slow run",
			src: `
- {http: {path: /slow}, expect: {ttfb: 100ms}}
- {http: {path: /slow}, expect: {duration: 100ms}}
- {http: {path: /echo}}`,
			cause:     checks.CauseTTFB,
			errPrefix: `step 0 (http): ttfb `,
			steps:     []checks.Cause{checks.CauseTTFB, checks.CauseDuration, ""},
			skipped:   []bool{false, false, false},
			echoes:    1,
		},
		{
			name: "a hard failure after a slow step skips the rest",
			src: `
- {http: {path: /slow}, expect: {ttfb: 100ms}}
- {http: {path: /status/500}}
- {http: {path: /echo}}
- {http: {path: /ok}, always: true}`,
			cause:     checks.CauseScript,
			errPrefix: `step 1 (http): status 500`,
			steps:     []checks.Cause{checks.CauseTTFB, checks.CauseStatus, "", ""},
			skipped:   []bool{false, false, true, false},
		},
		{
			name: "a slow and wrong step is a hard failure",
			src: `
- {http: {path: /slow}, expect: {ttfb: 100ms, status: 201}}
- {http: {path: /echo}}`,
			cause:     checks.CauseScript,
			errPrefix: `step 0 (http): status 200`,
			steps:     []checks.Cause{checks.CauseStatus, ""},
			skipped:   []bool{false, true},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := o.echoes.Load()
			r := apiScript(t, tc.src)
			res := r.Run(context.Background(), checks.Target{Name: "o", URL: o.URL})
			if res.OK != tc.ok || res.Cause != tc.cause || !strings.HasPrefix(res.Err, tc.errPrefix) {
				t.Fatalf("run: ok %v cause %q err %q; want ok %v cause %q err %q…", res.OK, res.Cause, res.Err, tc.ok, tc.cause, tc.errPrefix)
			}
			if len(res.Steps) != len(tc.steps) {
				t.Fatalf("%d steps, want %d: %+v", len(res.Steps), len(tc.steps), res.Steps)
			}
			for i, s := range res.Steps {
				if s.Cause != tc.steps[i] || s.Skipped != tc.skipped[i] || s.OK != (tc.steps[i] == "" && !tc.skipped[i]) {
					t.Errorf("step %d: ok %v cause %q skipped %v; want cause %q skipped %v", i, s.OK, s.Cause, s.Skipped, tc.steps[i], tc.skipped[i])
				}
			}
			// The run's assertions are the deciding step's.
			failing := ""
			for _, a := range res.Assertions {
				if !a.OK {
					failing = a.Name
					break
				}
			}
			if want := string(tc.steps[stepOf(tc.errPrefix)]); failing != want {
				t.Errorf("first failing run assertion %q, want %q (%+v)", failing, want, res.Assertions)
			}
			if tc.status != 0 && res.StatusCode != tc.status {
				t.Errorf("run status %d, want %d (the deciding step's)", res.StatusCode, tc.status)
			}
			if got := o.echoes.Load() - before; got != tc.echoes {
				t.Errorf("/echo requested %d times, want %d", got, tc.echoes)
			}
		})
	}
}

// stepOf is the step index an Err prefix names ("step 1 …").
func stepOf(errPrefix string) int {
	return int(errPrefix[len("step ")] - '0')
}

// A slow step's variables are extracted, so the steps that use them run
// as they would after a fast answer.
func TestSlowStepStillExtracts(t *testing.T) {
	o := newSlowOrigin(t)
	r := apiScript(t, `
- {http: {path: /slow}, expect: {ttfb: 100ms}, extract: {token: {json: token}}}
- {http: {path: /echo, headers: {Authorization: "Bearer ${token}"}}}
- {expr: 'last.status_code == 200 && vars.token == "tok-slow"'}`)
	res := r.Run(context.Background(), checks.Target{Name: "o", URL: o.URL})
	if res.OK || res.Cause != checks.CauseTTFB {
		t.Fatalf("run: ok %v cause %q err %q; want cause ttfb", res.OK, res.Cause, res.Err)
	}
	for i, s := range res.Steps[1:] {
		if !s.OK || s.Skipped {
			t.Errorf("step %d: ok %v skipped %v cause %q err %q", i+1, s.OK, s.Skipped, s.Cause, s.Err)
		}
	}
	if got, _ := o.lastAuth.Load().(string); got != "Bearer tok-slow" {
		t.Errorf("Authorization sent %q, want %q", got, "Bearer tok-slow")
	}
}

// An extractor that finds nothing in a slow answer is a hard failure that
// names both problems.
func TestSlowStepExtractFails(t *testing.T) {
	o := newSlowOrigin(t)
	r := apiScript(t, `
- {http: {path: /slow}, expect: {ttfb: 100ms}, extract: {id: {json: id}}}
- {http: {path: /echo}}`)
	res := r.Run(context.Background(), checks.Target{Name: "o", URL: o.URL})
	if res.OK || res.Cause != checks.CauseScript ||
		!strings.HasPrefix(res.Err, `step 0 (http): extract id: json id: no such path in the body; ttfb `) {
		t.Fatalf("run: ok %v cause %q err %q", res.OK, res.Cause, res.Err)
	}
	if !res.Steps[1].Skipped {
		t.Errorf("step 1 ran after a hard failure: %+v", res.Steps[1])
	}
}
