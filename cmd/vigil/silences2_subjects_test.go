package main

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// TestSilenceDisabledCheckAndPoolAhead: on vigil run with the proxy in
// process, a silence may name what has no alert yet but will: a check the
// config has with disabled: true (201, with a note saying it is disabled
// and the silence holds its alerts once it is enabled again) and a proxy
// pool × origin (the check and target of its live_errors alerts), by the
// origin's target or host:port, before any alert of it fires; a reload's
// pools count from then. A target not of that check or pool, and a typo
// of a pool, are still a 400 with "did you mean".
func TestSilenceDisabledCheckAndPoolAhead(t *testing.T) {
	const token = "admin-token-0123456789abcdef"
	data := t.TempDir()
	conf := func(pool string) string {
		return fmt.Sprintf(`
agent: {region: eu, data_dir: %s, admin_token: %s}
targets: [{name: origin-a, url: "http://127.0.0.1:1/"}, {name: origin-b, url: "http://127.0.0.1:1/"}]
checks:
  - {name: asset, targets: [origin-a], http: {path: /asset.bin}}
  - {name: old, disabled: true, targets: [origin-b], http: {path: /old}}
proxy:
  listen: 127.0.0.1:0
  pools: [{name: %s, origins: [{target: origin-a}, {url: "http://127.0.0.1:2"}]}]
alerting: {evaluation_interval: 1h, dead_man: {disabled: true}, quorum_lost: {disabled: true}}
`, data, token, pool)
	}
	path := writeConfig(t, conf("web"))
	a, stop := startApp(t, path, roles{proxy: true, alerter: true})
	defer stop()
	call := silenceCaller(t, "http://"+a.Addr(), token)
	post := func(body string) (int, string) {
		t.Helper()
		return call("POST", "/api/v1/silences", body)
	}
	if code, body := post(`{"check":"old","target":"origin-b","for":"2h","by":"alice","why":"re-enabling old"}`); code != http.StatusCreated ||
		!strings.Contains(body, `"note":"check \"old\" is disabled (disabled: true): it runs and alerts only once enabled again`) {
		t.Errorf("POST disabled check old × origin-b: %d %s, want 201 with a note that it is disabled", code, body)
	}
	if code, body := post(`{"check":"asset","for":"2h","by":"alice","why":"deploy"}`); code != http.StatusCreated || strings.Contains(body, `"note"`) {
		t.Errorf("POST enabled check asset: %d %s, want 201 without a note", code, body)
	}
	for _, body := range []string{
		`{"check":"web","target":"origin-a","for":"1h","by":"alice","why":"rebuilding origin-a"}`,
		`{"check":"web","target":"127.0.0.1:2","for":"1h","by":"alice","why":"rebuilding it"}`,
		`{"check":"web","for":"1h","by":"alice","why":"pool web"}`,
	} {
		if code, out := post(body); code != http.StatusCreated {
			t.Errorf("POST %s before any live_errors alert: %d %s, want 201", body, code, out)
		}
	}
	for _, c := range []struct{ body, want string }{
		{`{"check":"old","target":"origin-a","for":"1h","by":"al","why":"x"}`, `target: \"origin-a\": not a target of check \"old\"`},
		{`{"check":"web","target":"origin-c","for":"1h","by":"al","why":"x"}`, `target: \"origin-c\": not a target of check \"web\" nor of its active alerts (did you mean \"origin-a\"?)`},
		{`{"check":"wbe","for":"1h","by":"al","why":"x"}`, `check: \"wbe\": not a configured check, proxy pool nor the check of an active alert (did you mean \"web\"?)`},
	} {
		if code, out := post(c.body); code != http.StatusBadRequest || !strings.Contains(out, c.want) {
			t.Errorf("POST %s: %d %s, want 400 with %s", c.body, code, out, c.want)
		}
	}
	// A reload renames the pool: the new name is taken, the old one no
	// longer (it has no alert either).
	if err := os.WriteFile(path, []byte(conf("shop")), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "the reloaded pool shop taken", func() bool {
		code, _ := post(`{"check":"shop","target":"origin-a","for":"1h","by":"alice","why":"x"}`)
		return code == http.StatusCreated
	})
	if code, out := post(`{"check":"web","target":"origin-a","for":"1h","by":"alice","why":"x"}`); code != http.StatusBadRequest {
		t.Errorf("POST web × origin-a after the reload removed pool web: %d %s, want 400", code, out)
	}
}
