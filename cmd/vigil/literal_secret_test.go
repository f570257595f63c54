package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestLiteralCredentialsEchoedHidden: credentials written as they are in
// the config — http.basic_auth.password, the password of http.proxy_url,
// an Authorization or Proxy-Authorization header, in checks and in script
// http steps — are secrets: an origin (or a proxy) that echoes the header
// it got back, in a header and in a JSON body, makes the assertions fail
// with it as got, which `vigil check --json` shows as "Basic ***" or ***,
// never raw nor base64-encoded.
func TestLiteralCredentialsEchoedHidden(t *testing.T) {
	// echo answers every request (the proxy's too: an http:// request
	// goes to an HTTP proxy in absolute form, and its answer is the one
	// asserted on) with the Authorization and Proxy-Authorization it got,
	// in X-Echo-Auth / X-Echo-Pauth and in the body.
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth, pauth := r.Header.Get("Authorization"), r.Header.Get("Proxy-Authorization")
		w.Header().Set("X-Echo-Auth", auth)
		w.Header().Set("X-Echo-Pauth", pauth)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"hdr": auth, "phdr": pauth})
	}))
	defer echo.Close()
	host := strings.TrimPrefix(echo.URL, "http://")
	// A far origin that is never reached: the proxy answers for it.
	const far = "http://127.0.0.1:9/"
	// From the environment, a password is hidden with its user too:
	// "Basic ***", not "Basic cHUyOg***" (the base64 of "pu2:" left).
	t.Setenv("LSX_PXPW", "EnvProxyPw-8180")
	t.Setenv("LSX_BPW", "EnvBasicPw-9190")
	path := filepath.Join(t.TempDir(), "vigil.yaml")
	expect := `{headers: {X-Echo-Auth: nomatch, X-Echo-Pauth: nomatch}, json: [{path: hdr, equals: 1}, {path: phdr, equals: 1}]}`
	if err := os.WriteFile(path, []byte(fmt.Sprintf(`checks:
  - name: basic
    url: "http://%[1]s/"
    http: {basic_auth: {username: bob, password: "BasicLiteralPw42"}}
    expect: %[2]s
  - name: proxy
    url: "%[3]s"
    http: {proxy_url: "http://pu:ProxyPassword888@%[1]s"}
    expect: %[2]s
  - name: proxy-env
    url: "%[3]s"
    http: {proxy_url: "http://pu2:${LSX_PXPW}@%[1]s"}
    expect: %[2]s
  - name: basic-env
    url: "http://%[1]s/"
    http: {basic_auth: {username: bob2, password: "${LSX_BPW}"}}
    expect: %[2]s
  - name: headers
    url: "http://%[1]s/"
    http: {headers: {Authorization: "Bearer LitBearerTok-9911", Proxy-Authorization: "Basic cHg6TGl0UHhIZHJQdy03Nw=="}}
    expect: %[2]s
  - name: script
    url: "http://%[1]s/"
    script:
      - http: {basic_auth: {username: sam, password: "StepLiteralPw-5150"}}
        expect: %[2]s
      - http: {url: "%[3]s", proxy_url: "http://spu:StepProxyPw-6160@%[1]s"}
        expect: %[2]s
        always: true
      - http: {headers: {Authorization: "Token StepHeaderTok-7170"}}
        expect: %[2]s
        always: true
`, host, expect, far)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := runCLI(t, "check", "-c", path, "--json")
	if code != 1 {
		t.Errorf("exit %d, want 1 (the assertions fail)", code)
	}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	for _, sec := range []string{
		"BasicLiteralPw42", b64("bob:BasicLiteralPw42"),
		"ProxyPassword888", b64("pu:ProxyPassword888"),
		"LitBearerTok-9911", "cHg6TGl0UHhIZHJQdy03Nw", "LitPxHdrPw-77",
		"StepLiteralPw-5150", b64("sam:StepLiteralPw-5150"),
		"StepProxyPw-6160", b64("spu:StepProxyPw-6160"),
		"StepHeaderTok-7170", "EnvProxyPw-8180", "EnvBasicPw-9190",
	} {
		if strings.Contains(out, sec) {
			t.Errorf("vigil check shows %q", sec)
		}
	}
	// Each echo is there, hidden: in the header assertion and the body's.
	for _, want := range []string{
		`"got":"Basic ***"`, `"got":"\"Basic ***\""`,
		`"got":"Bearer ***"`, `"got":"\"Bearer ***\""`,
		`"got":"Token ***"`, `"got":"\"Token ***\""`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s", want)
		}
	}
	if m := regexp.MustCompile(`Basic [^*]{4}`).FindString(out); m != "" {
		t.Errorf("a Basic credential shows in part: %q", m)
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}
