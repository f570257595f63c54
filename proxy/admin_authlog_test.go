package proxy

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestAdminAuthFailuresLoggedAndCounted: admin writes refused for a missing
// or wrong token are counted in vigil_proxy_admin_auth_failures_total and
// logged with the reason, method, path and client (never the token), the
// first at once and then at most one line a minute; they left no trace.
func TestAdminAuthFailuresLoggedAndCounted(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	cfg := pool1(PolicyRoundRobin, urls(a, b)...)
	cfg.AdminToken = "t0ken-right"
	logs := &tryLogs{}
	h := startLog(t, cfg, nil, false, testEngine(), slog.New(slog.NewTextHandler(logs, nil)))
	admin := httptest.NewServer(h.p.AdminHandler())
	defer admin.Close()
	post := func(auth string) int {
		req, _ := http.NewRequest("POST", admin.URL+"/api/v1/origins/o0/drain", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, auth := range []string{"Bearer guess-one", "", "Bearer guess-two"} {
		if code := post(auth); code != http.StatusUnauthorized {
			t.Fatalf("auth %q: %d", auth, code)
		}
	}
	if v, _ := h.metric("vigil_proxy_admin_auth_failures_total", nil); v != 3 {
		t.Errorf("admin_auth_failures_total = %v, want 3", v)
	}
	lines := logs.lines("admin request refused")
	if len(lines) != 1 || !strings.Contains(lines[0], `reason="wrong bearer token" method=POST path=/api/v1/origins/o0/drain remote=127.0.0.1:`) {
		t.Fatalf("want one rate-limited line naming reason, method, path and client, got %q", lines)
	}
	if strings.Contains(logs.String(), "guess") || strings.Contains(logs.String(), "t0ken") {
		t.Fatalf("a token reached the log: %s", logs.String())
	}
	if code := post("Bearer t0ken-right"); code != http.StatusOK {
		t.Fatalf("right token: %d", code)
	}
}
