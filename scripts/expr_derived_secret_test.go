package scripts

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
)

// A false expr shows an operand that reads a secret variable as ***,
// whatever it makes of the value: a slice, a split, a concatenation is not
// the secret's value, so the redaction of the value would not hide it.
// Operands over plain variables are still shown.
func TestExprOperandsDerivedFromSecretsAreMasked(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"t": "tok-SUPERSECRET-12345", "plain": "visible-value"}`))
	}))
	defer srv.Close()
	for _, tc := range []struct{ name, extract, expr string }{
		{"secret: true", `{t: {json: t, secret: true}, p: {json: plain}}`,
			`vars.t[0:6] + "x" == "a" || split(vars.t, "-")[1] == "c" || vars.p == "c"`},
		{"computed name", `{t: {json: t, secret: true}, p: {json: plain}}`,
			`upper(vars["t"])[4:9] == "a" || vars[lower("T")][4:9] == "b" || vars.p == "c"`},
		{"sent as a credential", `{t: {json: t}, p: {json: plain}}`,
			`vars.t[0:6] + "x" == "a" || split(vars.t, "-")[1] == "c" || vars.p == "c"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := `
- http: {path: /}
  extract: ` + tc.extract + `
- expr: '` + tc.expr + `'
`
			if tc.name == "sent as a credential" {
				src += `- {always: true, http: {path: /me, headers: {Authorization: "Bearer ${t}"}}}
`
			}
			res := apiScript(t, src).Run(context.Background(), checks.Target{Name: "t", URL: srv.URL})
			if res.OK || len(res.Steps) < 2 || res.Steps[1].OK {
				t.Fatalf("want the expr to fail: %q", res.Err)
			}
			msg := res.Err
			for _, leak := range []string{"SUPERSECRET", "UPERS", "tok-SU", "SUPER"} {
				if strings.Contains(msg, leak) {
					t.Errorf("message shows %q derived from a secret:\n%s", leak, msg)
				}
			}
			if !strings.Contains(msg, "= ***") {
				t.Errorf("message does not show the masked operands: %s", msg)
			}
			if !strings.Contains(msg, `vars.p = "visible-value"`) {
				t.Errorf("a plain variable's operand is not shown: %s", msg)
			}
		})
	}
}
