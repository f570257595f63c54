package scripts

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// An http step that the check's timeout cuts short says the time it had
// was what was left of the check's timeout, as sleep and eval do; one
// that its own timeout ends does not.
func TestHTTPStepCutByCheckTimeoutSaysSo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d := 5 * time.Second
		if r.URL.Path == "/wait" {
			d = 300 * time.Millisecond
		}
		select {
		case <-r.Context().Done():
		case <-time.After(d):
		}
	}))
	defer srv.Close()
	run := func(src string, timeout time.Duration) checks.Result {
		r, err := New(mustScript(t, src), Options{Check: "c", Timeout: timeout})
		if err != nil {
			t.Fatal(err)
		}
		return r.Run(context.Background(), checks.Target{Name: "t", URL: srv.URL})
	}

	start := time.Now()
	res := run(`
- http: {path: /wait}
- http: {path: /hang}
`, time.Second)
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("run took %s with a 1s timeout", took)
	}
	want := regexp.MustCompile(`^step 1 \(http\): timeout: no response within [0-9]+ms \(what was left of the check's 1s timeout\)$`)
	if res.Cause != checks.CauseTimeout || !want.MatchString(res.Err) {
		t.Errorf("cause %s, err %q; want timeout matching %s", res.Cause, res.Err, want)
	}

	// The step's own timeout.
	res = run(`
- http: {path: /hang}
  timeout: 200ms
`, 5*time.Second)
	if res.Cause != checks.CauseTimeout || res.Err != "step 0 (http): timeout: no response within 200ms" || strings.Contains(res.Err, "what was left") {
		t.Errorf("cause %s, err %q; want the step's own 200ms", res.Cause, res.Err)
	}
}
