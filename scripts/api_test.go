package scripts

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

func apiScript(t *testing.T, src string) *Runner {
	t.Helper()
	r, err := New(mustScript(t, src), Options{Check: "api", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return r
}

func TestAPITransactionPasses(t *testing.T) {
	o := newAPIOrigin(t)
	t.Setenv("DEMO_PASSWORD", demoPassword)
	r := apiScript(t, `
- name: login
  http: {method: POST, path: /login, json: {user: demo, password: "${env:DEMO_PASSWORD}"}}
  expect: {status: 200, json: [{path: token, exists: true}]}
  extract: {token: {json: token}, sid: {cookie: sid}, etag: {header: ETag}, order: {regex: "order=(\\d+)"}}
- name: me
  http: {path: /api/me, headers: {authorization: "Bearer ${token}"}}
  expect: {status: 200, json: [{path: user, equals: demo}, {path: sid, equals: sess-1}]}
- expr: 'vars.token == "tok-4711" && vars.sid == "sess-1" && vars.order == "42" && vars.etag == "\"v1\"" && last.status_code == 200 && last.json.user == "demo"'
- name: cleanup
  always: true
  http: {method: DELETE, path: /cart}
  expect: {status: 204}
`)
	res := r.Run(context.Background(), checks.Target{Name: "demo", URL: o.URL})
	if !res.OK {
		t.Fatalf("run failed: cause %s: %s\n%+v", res.Cause, res.Err, res.Steps)
	}
	if len(res.Steps) != 4 {
		t.Fatalf("%d steps", len(res.Steps))
	}
	for _, s := range res.Steps {
		if !s.OK || s.Skipped || s.Duration <= 0 {
			t.Errorf("step %+v", s)
		}
	}
	if res.Steps[1].StatusCode != 200 || res.Steps[1].TTFB <= 0 || res.Steps[1].Metrics["ttfb_ms"] <= 0 {
		t.Errorf("me step: %+v", res.Steps[1])
	}
	if got := o.lastAuth.Load(); got != "Bearer "+demoToken {
		t.Errorf("authorization sent %q", got)
	}
	if o.cleanups.Load() != 1 {
		t.Errorf("cleanups %d", o.cleanups.Load())
	}
	if res.Phases.Total <= 0 || res.Phases.TTFB <= 0 {
		t.Errorf("phases %+v", res.Phases)
	}
}

func TestAPIFailingMiddleStepRunsCleanup(t *testing.T) {
	o := newAPIOrigin(t)
	t.Setenv("DEMO_PASSWORD", demoPassword)
	r := apiScript(t, `
- name: login
  http: {method: POST, path: /login, json: {user: demo, password: "${env:DEMO_PASSWORD}"}}
  extract: {token: {json: token}}
- name: checkout
  http: {method: POST, path: /fail}
  expect: {status: 200}
- name: me
  http: {path: /api/me, headers: {authorization: "Bearer ${token}"}}
- name: cleanup
  always: true
  http: {method: DELETE, path: /cart}
`)
	res := r.Run(context.Background(), checks.Target{Name: "demo", URL: o.URL})
	if res.OK {
		t.Fatal("run passed")
	}
	if res.Cause != checks.CauseScript {
		t.Errorf("cause %q, want script", res.Cause)
	}
	if !strings.Contains(res.Err, `step 1 "checkout"`) || !strings.Contains(res.Err, "500") {
		t.Errorf("err %q does not say which step failed and why", res.Err)
	}
	st := res.Steps
	if !st[0].OK || st[1].OK || st[1].Cause != checks.CauseStatus || st[1].StatusCode != 500 || !st[2].Skipped || !st[3].OK {
		t.Errorf("steps: %+v", st)
	}
	if o.cleanups.Load() != 1 {
		t.Errorf("cleanup ran %d times, want 1", o.cleanups.Load())
	}
	if res.StatusCode != 500 {
		t.Errorf("status %d", res.StatusCode)
	}
}

func TestAPISecretsAreRedacted(t *testing.T) {
	o := newAPIOrigin(t)
	t.Setenv("DEMO_PASSWORD", "wrong-"+demoPassword)
	r := apiScript(t, `
- http: {method: POST, path: /login, json: {user: demo, password: "${env:DEMO_PASSWORD}"}}
  expect: {status: 200, body: {contains: token}}
`)
	res := r.Run(context.Background(), checks.Target{Name: "demo", URL: o.URL})
	if res.OK {
		t.Fatal("run passed with a wrong password")
	}
	all := res.Err
	for _, s := range res.Steps {
		all += s.Err
		for _, a := range s.Assertions {
			all += a.Got + a.Want
		}
	}
	if strings.Contains(all, demoPassword) {
		t.Errorf("secret leaked: %s", all)
	}
}

func TestAPIConnectionCausePassesThrough(t *testing.T) {
	o := newAPIOrigin(t)
	url := o.URL
	o.Close() // a dead port
	r := apiScript(t, `
- http: {path: /api/me}
- {always: true, http: {method: DELETE, path: /cart}}
`)
	res := r.Run(context.Background(), checks.Target{Name: "dead", URL: url})
	if res.OK || res.Cause != checks.CauseConnectRefused {
		t.Fatalf("cause %q (%s), want connect_refused", res.Cause, res.Err)
	}
	if !res.CouldNotRun() {
		t.Error("a refused connection must be 'could not run'")
	}
}

func TestExprStepFails(t *testing.T) {
	o := newAPIOrigin(t)
	r := apiScript(t, `
- http: {path: /fail}
  expect: {status: 500}
- expr: 'last.status_code == 200'
`)
	res := r.Run(context.Background(), checks.Target{Name: "demo", URL: o.URL})
	if res.OK || res.Cause != checks.CauseScript || res.Steps[1].OK || !strings.Contains(res.Err, "last.status_code=500") {
		t.Fatalf("res %+v", res)
	}
}

// TestExprFailureShowsValues: a false expression's message gives the
// values its comparisons compared (each non-literal operand, evaluated on
// its own), not only the last status code. An operand that reads a
// variable holding a secret (vars.token) shows as ***, also its length.
func TestExprFailureShowsValues(t *testing.T) {
	o := newAPIOrigin(t)
	t.Setenv("DEMO_PASSWORD", demoPassword)
	r := apiScript(t, `
- http: {method: POST, path: /login, json: {user: demo, password: "${env:DEMO_PASSWORD}"}}
  extract: {token: {json: token}}
- http: {path: /api/me, headers: {authorization: "Bearer ${token}"}}
- expr: 'len(vars.token) > 20 || last.json.user == "bob" || last.json.user == vars.token'
`)
	res := r.Run(context.Background(), checks.Target{Name: "demo", URL: o.URL})
	want := `step 2 (expr): expr len(vars.token) > 20 || last.json.user == "bob" || last.json.user == vars.token: ` +
		`false (len(vars.token) = ***, last.json.user = "demo", vars.token = ***; last.status_code=200)`
	if res.OK || res.Cause != checks.CauseScript || res.Err != want {
		t.Fatalf("err %q\nwant %q", res.Err, want)
	}
}

// TestExprVarNamesIgnoreCase: variable names in expressions match
// case-insensitively, as in extract and ${name}: vars.TOKEN is the variable
// extracted as Token, and a false comparison with it fails the step.
func TestExprVarNamesIgnoreCase(t *testing.T) {
	o := newAPIOrigin(t)
	t.Setenv("DEMO_PASSWORD", demoPassword)
	for _, tc := range []struct {
		expr, err string
	}{
		{`vars.TOKEN == "tok-4711" && vars["Token"] == "tok-4711" && "TOKEN" in vars && !("NOPE" in vars)`, ""},
		{`vars.TOKEN == "other"`, `step 1 (expr): expr vars.TOKEN == "other": false (vars.TOKEN = ***; last.status_code=200)`},
	} {
		r := apiScript(t, `
- http: {method: POST, path: /login, json: {user: demo, password: "${env:DEMO_PASSWORD}"}}
  extract: {Token: {json: token}}
- expr: '`+tc.expr+`'
`)
		res := r.Run(context.Background(), checks.Target{Name: "demo", URL: o.URL})
		if tc.err == "" {
			if !res.OK {
				t.Errorf("%s: cause %s: %s", tc.expr, res.Cause, res.Err)
			}
			continue
		}
		if res.OK || res.Cause != checks.CauseScript || res.Err != tc.err {
			t.Errorf("%s: ok %v cause %s err %q; want script, %q", tc.expr, res.OK, res.Cause, res.Err, tc.err)
		}
	}
	// An undefined name is still a config error, whatever its case.
	_, err := New(mustScript(t, `[{http: {path: /}, extract: {token: {json: t}}}, {expr: 'vars.TOKN == "x"'}]`), Options{})
	if want := "script[1].expr: undefined variable vars.tokn: no earlier step extracts it"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

func TestExtractMissingFailsStep(t *testing.T) {
	o := newAPIOrigin(t)
	r := apiScript(t, `
- http: {path: /fail}
  expect: {status: 500}
  extract: {token: {json: token}}
- http: {path: /api/me, headers: {authorization: "Bearer ${token}"}}
`)
	res := r.Run(context.Background(), checks.Target{Name: "demo", URL: o.URL})
	if res.OK || res.Cause != checks.CauseScript || !strings.Contains(res.Steps[0].Err, "extract token") || !res.Steps[1].Skipped {
		t.Fatalf("res %+v", res)
	}
}

func TestAPIConcurrentRunsHaveOwnVariables(t *testing.T) {
	o := newAPIOrigin(t)
	t.Setenv("DEMO_PASSWORD", demoPassword)
	r := apiScript(t, `
- http: {method: POST, path: /login, json: {user: demo, password: "${env:DEMO_PASSWORD}"}}
  extract: {token: {json: token}}
- http: {path: /api/me, headers: {authorization: "Bearer ${token}"}}
  expect: {json: [{path: sid, equals: sess-1}]}
`)
	results := make(chan checks.Result, 8)
	for i := 0; i < 8; i++ {
		go func() { results <- r.Run(context.Background(), checks.Target{Name: "demo", URL: o.URL}) }()
	}
	for i := 0; i < 8; i++ {
		if res := <-results; !res.OK {
			t.Errorf("%s: %s", res.Cause, res.Err)
		}
	}
	// A run without the login has no token and no cookie of another run.
	r2 := apiScript(t, `[{http: {path: /api/me}, expect: {status: 401}}]`)
	if res := r2.Run(context.Background(), checks.Target{Name: "demo", URL: o.URL}); !res.OK {
		t.Errorf("%s: %s", res.Cause, res.Err)
	}
}

// The run's TTFB is the first main step's: when no step before the cleanup
// got a response, the run has none, even though the `always` cleanup did.
func TestRunTTFBIgnoresCleanupSteps(t *testing.T) {
	o := newAPIOrigin(t)
	t.Setenv("VIGIL_TEST_UNSET_PASSWORD", "")
	os.Unsetenv("VIGIL_TEST_UNSET_PASSWORD")
	src := `
- name: login
  http: {method: POST, path: /login, json: {user: demo, password: "${env:VIGIL_TEST_UNSET_PASSWORD}"}}
- name: cleanup
  always: true
  http: {method: DELETE, path: /cart}
  expect: {status: 204}
`
	res := apiScript(t, src).Run(context.Background(), checks.Target{Name: "demo", URL: o.URL})
	if res.OK || !strings.Contains(res.Steps[0].Err, "VIGIL_TEST_UNSET_PASSWORD is not set") {
		t.Fatalf("login step did not fail before sending: %+v", res.Steps)
	}
	if !res.Steps[1].OK || res.Steps[1].TTFB <= 0 {
		t.Fatalf("cleanup step: %+v", res.Steps[1])
	}
	if res.Phases.TTFB != 0 {
		t.Errorf("run TTFB %s taken from the cleanup step; want 0 (no main step got a response)", res.Phases.TTFB)
	}

	// A main step that got a response (even a failing one) sets it.
	res = apiScript(t, `
- http: {path: /fail}
  expect: {status: 200}
- {always: true, http: {method: DELETE, path: /cart}}
`).Run(context.Background(), checks.Target{Name: "demo", URL: o.URL})
	if res.OK || res.Steps[0].TTFB <= 0 || res.Phases.TTFB != res.Steps[0].TTFB {
		t.Errorf("run TTFB %s, want the failed main step's %s", res.Phases.TTFB, res.Steps[0].TTFB)
	}
}
