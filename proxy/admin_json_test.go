package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestAdminJSONNotHTMLEscaped: the admin API's answers are JSON read with
// curl, never HTML: a refusal's body shows the token it wants as the
// README quotes it, <proxy.admin_token, else agent.admin_token>, not as
// \u003cproxy.admin_token…\u003e.
func TestAdminJSONNotHTMLEscaped(t *testing.T) {
	a := newBackend(t, "a")
	cfg := pool1(PolicyRoundRobin, urls(a)...)
	cfg.AdminToken = "t0ken-right"
	h := start(t, cfg, nil, false)
	admin := httptest.NewServer(h.p.AdminHandler())
	defer admin.Close()
	resp, err := http.Post(admin.URL+"/api/v1/origins/o0/drain", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := `"error": "missing or wrong bearer token (Authorization: Bearer <proxy.admin_token, else agent.admin_token>)"`
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(b), want) {
		t.Errorf("%d %s\nwant 401 with %s", resp.StatusCode, b, want)
	}
}
