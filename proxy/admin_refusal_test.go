package proxy

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestAdminRefusalNamesTheToken: a refused admin write says which token
// it wants, and no admin answer may be cached (a cached 401 would outlive
// the fix of a token; the origins' state changes every second), as the
// canary's API answers.
func TestAdminRefusalNamesTheToken(t *testing.T) {
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
	var body struct{ Error string }
	json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	want := "missing or wrong bearer token (Authorization: Bearer <proxy.admin_token, else agent.admin_token>)"
	if resp.StatusCode != http.StatusUnauthorized || body.Error != want {
		t.Errorf("%d %q, want 401 %q", resp.StatusCode, body.Error, want)
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("401: Cache-Control %q, want no-store", cc)
	}
	resp, err = http.Get(admin.URL + "/api/v1/origins")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if cc := resp.Header.Get("Cache-Control"); resp.StatusCode != http.StatusOK || cc != "no-store" {
		t.Errorf("GET /api/v1/origins: %d, Cache-Control %q, want 200 and no-store", resp.StatusCode, cc)
	}
}
