package scripts

import (
	"context"
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
)

// The run's status code is the transaction's (its last main step's), not
// the `always` cleanup step's; a cleanup whose failure decides the run
// gives its own.
func TestRunStatusIgnoresCleanupSteps(t *testing.T) {
	o := newAPIOrigin(t)
	t.Setenv("DEMO_PASSWORD", demoPassword)
	res := apiScript(t, `
- name: login
  http: {method: POST, path: /login, json: {user: demo, password: "${env:DEMO_PASSWORD}"}}
  extract: {token: {json: token}}
- name: me
  http: {path: /api/me, headers: {authorization: "Bearer ${token}"}}
- name: cleanup
  always: true
  http: {method: DELETE, path: /cart}
  expect: {status: 204}
`).Run(context.Background(), checks.Target{Name: "demo", URL: o.URL})
	if !res.OK || res.Steps[2].StatusCode != 204 {
		t.Fatalf("run: %s %s %+v", res.Cause, res.Err, res.Steps)
	}
	if res.StatusCode != 200 {
		t.Errorf("run status %d, want 200 (the me step's, not the cleanup's 204)", res.StatusCode)
	}

	// A cleanup that fails decides the run, with its status.
	res = apiScript(t, `
- name: me
  http: {path: /api/me}
  expect: {status: 401}
- name: cleanup
  always: true
  http: {method: DELETE, path: /cart}
  expect: {status: 200}
`).Run(context.Background(), checks.Target{Name: "demo", URL: o.URL})
	if res.OK || res.StatusCode != 204 {
		t.Errorf("failed cleanup: ok=%v status %d, want 204 (the deciding step's)", res.OK, res.StatusCode)
	}
}
