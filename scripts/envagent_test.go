package scripts

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// A ${env:NAME} the agent's environment does not set is the agent's own
// configuration, not the target's: the run fails with cause agent
// (AgentFault: not counted against the target), names the variable, and
// sends the origin nothing.
func TestUnsetEnvVariableIsAgentFault(t *testing.T) {
	const name = "VIGIL_TEST_UNSET_DEMO_PASSWORD"
	t.Setenv(name, "")
	os.Unsetenv(name)
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte(`{"token":"tok-1"}`))
	}))
	defer srv.Close()

	cases := []struct{ name, src string }{
		{"http json", `
- name: login
  http: {method: POST, path: /login, json: {user: demo, password: "${env:` + name + `}"}}
  extract: {token: {json: token}}
- name: me
  http: {path: /api/me, headers: {Authorization: "Bearer ${token}"}}
`},
		{"second step's header", `
- name: health
  http: {path: /healthz}
- name: me
  http: {path: /api/me, headers: {X-Api-Key: "${env:` + name + `}"}}
`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := hits.Load()
			res := apiScript(t, tc.src).Run(context.Background(), checks.Target{Name: "t", URL: srv.URL})
			if res.OK || res.Cause != checks.CauseAgent || !res.Cause.AgentFault() {
				t.Fatalf("cause %q (AgentFault %v), err %q; want agent", res.Cause, res.Cause.AgentFault(), res.Err)
			}
			for _, want := range []string{"environment variable " + name + " is not set", "the agent's own configuration, not the target's"} {
				if !strings.Contains(res.Err, want) {
					t.Errorf("error %q does not say %q", res.Err, want)
				}
			}
			// Only the steps before the one reading the variable reached the origin.
			sent := hits.Load() - before
			wantSent := int64(0)
			if tc.name == "second step's header" {
				wantSent = 1
			}
			if sent != wantSent {
				t.Errorf("origin got %d requests, want %d (none from the step reading the unset variable)", sent, wantSent)
			}
		})
	}
}

// In a browser step too: the step fails with cause agent before it acts.
func TestUnsetEnvVariableInBrowserStepIsAgentFault(t *testing.T) {
	b := needChromium(t)
	const name = "VIGIL_TEST_UNSET_SHOP_QUERY"
	t.Setenv(name, "")
	os.Unsetenv(name)
	o := newPageOrigin(t)
	r := browserRunner(t, b, "", `
- browser: {navigate: /tiny}
- browser: {navigate: "/tiny?q=${env:`+name+`}"}
`, 10*time.Second)
	res := r.Run(context.Background(), checks.Target{Name: "t", URL: o.URL})
	if res.OK || res.Cause != checks.CauseAgent || !res.Cause.AgentFault() || !strings.Contains(res.Err, "environment variable "+name+" is not set") {
		t.Fatalf("cause %q, err %q; want agent naming %s", res.Cause, res.Err, name)
	}
	if n := o.hits.Load(); n != 1 {
		t.Errorf("origin served %d pages, want 1 (the step reading the unset variable navigates nowhere)", n)
	}
}
