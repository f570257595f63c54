package main

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// A push check in a real `vigil run` (agent listener, embedded store,
// status page, alerter): its job's pings on the agent listener decide its
// verdicts in the API, the status page and the badge; a secret in the
// job's message is hidden; the last ping survives a restart of the agent.
func TestPushAgent(t *testing.T) {
	const token = "push-agent-token-0123456789"
	t.Setenv("BACKUP_PUSH_TOKEN", token)
	dir := t.TempDir()
	path := filepath.Join(dir, "vigil.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(`
agent: {region: test, data_dir: %s}
checks:
  - {name: backup, interval: 200ms, rise: 1, fall: 1, push: {period: 1s, grace: 500ms, token: "${BACKUP_PUSH_TOKEN}"}}
`, dir)), 0o600); err != nil {
		t.Fatal(err)
	}
	a, stop := startApp(t, path, roles{canary: true, alerter: true, page: true})
	base := "http://" + a.Addr()
	ping := func(suffix string) {
		t.Helper()
		if code, body := httpStatus(t, "POST", base+"/api/v1/push/backup"+suffix, token); code != http.StatusOK {
			t.Fatalf("ping %s: %d %s", suffix, code, body)
		}
	}
	verdict := func() reporting.Verdict {
		v, _ := find(verdictsOf(t, base), "backup", "backup")
		return v
	}
	if code, _ := httpStatus(t, "POST", base+"/api/v1/push/backup", ""); code != http.StatusUnauthorized {
		t.Fatalf("ping without the token: %d, want 401", code)
	}
	ping("")
	waitFor(t, 10*time.Second, "healthy after a ping", func() bool { return verdict().State == reporting.StateHealthy })

	// The job fails, and its message quotes the token.
	ping("/fail?msg=" + url.QueryEscape("upload with "+token+" refused"))
	waitFor(t, 10*time.Second, "push_failed", func() bool { return verdict().Cause == "push_failed" })
	if v := verdict(); v.State != reporting.StateUnhealthy || !strings.Contains(v.Err, "upload with *** refused") {
		t.Fatalf("after a fail ping: %s %q", v.State, v.Err)
	}
	for _, p := range []string{"/check/backup", "/badge/backup.svg", "/api/v1/verdicts", "/metrics"} {
		code, body := httpStatus(t, "GET", base+p, "")
		if code != http.StatusOK || strings.Contains(body, token) {
			t.Fatalf("%s: %d, or it shows the token", p, code)
		}
		if p == "/badge/backup.svg" && !strings.Contains(body, "unhealthy") {
			t.Fatalf("badge of a failed push check: %s", body)
		}
		if p == "/check/backup" && !strings.Contains(body, "push_failed") {
			t.Fatalf("check page of a failed push check lacks its cause")
		}
	}

	// A successful ping, then a restart: the ping is remembered, so the
	// check goes missing counting from it, not from the restart.
	ping("")
	waitFor(t, 10*time.Second, "healthy again", func() bool { return verdict().State == reporting.StateHealthy })
	stop()
	a, stop = startApp(t, path, roles{canary: true, alerter: true, page: true})
	defer stop()
	base = "http://" + a.Addr()
	waitFor(t, 10*time.Second, "push_missing after the restart", func() bool { return verdict().Cause == "push_missing" })
	if v := verdict(); !strings.HasPrefix(v.Err, "no push since ") || strings.Contains(v.Err, "the check started") {
		t.Fatalf("after a restart: %q, want the ping before it", v.Err)
	}
}
