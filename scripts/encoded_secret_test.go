package scripts

import (
	"context"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
)

// An origin that echoes a script's ${env:…} password hex-encoded (either
// case), base32-encoded (padded or not), base64url without padding,
// percent-encoded twice, and base64 percent-encoded in a URL, under keys
// and headers that are not sensitive (so nothing is masked by name): the
// failing assertions' got, the step's error and the run's error show each
// as ***, and the values that are not secrets still show.
func TestEncodedEnvSecretHiddenInFailures(t *testing.T) {
	const pw = "Tr0ub?>4dor&3 x/y+z" // &, space, / and + escape differently in each layer; its base64 holds / and +
	encs := map[string]func(string) string{
		"hex":      func(s string) string { return hex.EncodeToString([]byte(s)) },
		"hexupper": func(s string) string { return strings.ToUpper(hex.EncodeToString([]byte(s))) },
		"b32":      func(s string) string { return base32.StdEncoding.EncodeToString([]byte(s)) },
		"b32raw": func(s string) string {
			return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString([]byte(s))
		},
		"b64urlraw": func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) },
		"pct2":      func(s string) string { return url.QueryEscape(url.QueryEscape(s)) },
		"pct2path":  func(s string) string { return url.PathEscape(url.PathEscape(s)) },
		"b64query":  func(s string) string { return "/cb?t=" + url.QueryEscape(base64.StdEncoding.EncodeToString([]byte(s))) },
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Password string }
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &in)
		out := map[string]string{"plain": "visible-value"}
		for k, enc := range encs {
			out[k] = enc(in.Password)
		}
		w.Header().Set("X-Echo", encs["hex"](in.Password))
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	t.Setenv("ENC_PW", pw)

	var js strings.Builder
	for k := range encs {
		js.WriteString(`{path: ` + k + `, equals: "x"}, `)
	}
	r := apiScript(t, `
- name: login
  http: {method: POST, path: /login, json: {password: "${env:ENC_PW}"}}
  expect:
    headers: {X-Echo: "nope"}
    json: [`+js.String()+`{path: plain, equals: "x"}]
`)
	res := r.Run(context.Background(), checks.Target{Name: "t", URL: srv.URL})
	if res.OK || len(res.Steps) != 1 {
		t.Fatalf("want the step to fail: %s", res.Err)
	}
	msgs := []string{res.Err, res.Steps[0].Err}
	shown := map[string]string{}
	for _, a := range append(res.Assertions, res.Steps[0].Assertions...) {
		msgs = append(msgs, a.Got, a.Want)
		shown[a.Name] = a.Got
	}
	all := strings.Join(msgs, "\n")
	for name, enc := range encs {
		if e := enc(pw); strings.Contains(all, e) {
			t.Errorf("%s: the messages show %q:\n%s", name, e, all)
		}
		if g := shown["json "+name]; !strings.Contains(g, "***") {
			t.Errorf("json %s: got %q, want the echoed secret as ***", name, g)
		}
	}
	if g := shown["header X-Echo"]; !strings.Contains(g, "***") {
		t.Errorf("header X-Echo: got %q, want ***", g)
	}
	if g := shown["json plain"]; g != `"visible-value"` {
		t.Errorf("json plain: got %q, want the value shown", g)
	}
}
