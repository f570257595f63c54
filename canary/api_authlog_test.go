package canary

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestTriggerAuthFailureLogged: a trigger refused for a wrong or missing
// token is logged with the reason, path and client, never the token, and
// at most one line a minute.
func TestTriggerAuthFailureLogged(t *testing.T) {
	o := checktest.NewOrigin()
	t.Cleanup(o.Close)
	cfg := testConfig(t, map[string]string{"o1": o.URL()},
		CheckConfig{Name: "home", Targets: []string{"o1"}, Rise: 1, Interval: time.Hour, HTTP: &checks.HTTPSpec{Path: "/healthz"}})
	cfg.Agent.AdminToken = "s3cret-token"
	var buf checktest.SyncBuffer
	c := start(t, cfg, compile(t, cfg), Options{Log: slog.New(slog.NewTextHandler(&buf, nil))})
	srv := httptest.NewServer(c.Handler(nil))
	t.Cleanup(srv.Close)
	for _, auth := range []string{"Bearer guess-one", "Bearer guess-two"} {
		if code, _ := do(t, "POST", srv.URL+"/api/v1/trigger", auth, `{"check":"home","target":"o1"}`); code != http.StatusUnauthorized {
			t.Fatalf("%q: %d", auth, code)
		}
	}
	var lines []string
	for _, l := range strings.Split(buf.String(), "\n") {
		if strings.Contains(l, "admin request refused") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], `reason="wrong bearer token" method=POST path=/api/v1/trigger remote=127.0.0.1:`) {
		t.Fatalf("want one line naming reason, method, path and client, got %q", lines)
	}
	if strings.Contains(buf.String(), "guess") || strings.Contains(buf.String(), "s3cret") {
		t.Fatalf("a token reached the log: %s", buf.String())
	}
}
