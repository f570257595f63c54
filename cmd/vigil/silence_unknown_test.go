package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestSilenceUnknownCheckRefused: on a running agent, a silence of a
// check the config does not have (a typo) or of a target not of that
// check is a 400 naming it, since it would silence nothing; the
// configured check × target is taken.
func TestSilenceUnknownCheckRefused(t *testing.T) {
	const token = "admin-token-0123456789abcdef"
	data := t.TempDir()
	path := writeConfig(t, fmt.Sprintf(`
agent: {region: alerter, data_dir: %s, admin_token: %s}
targets: [{name: origin-a, url: "http://127.0.0.1:1/"}, {name: origin-b, url: "http://127.0.0.1:1/"}]
checks:
  - {name: multi, targets: [origin-a], http: {path: /asset.bin}}
  - {name: asset, targets: [origin-b], http: {path: /asset.bin}}
alerting: {evaluation_interval: 1h, dead_man: {disabled: true}, quorum_lost: {disabled: true}}
`, data, token))
	a, stop := startApp(t, path, roles{alerter: true})
	defer stop()
	call := silenceCaller(t, "http://"+a.Addr(), token)
	post := func(body string) (int, string) {
		t.Helper()
		return call("POST", "/api/v1/silences", body)
	}
	if code, body := post(`{"check":"mutli","for":"1h","by":"alice","why":"deploy"}`); code != http.StatusBadRequest ||
		!strings.Contains(body, `check: \"mutli\": not a configured check`) || !strings.Contains(body, `did you mean \"multi\"?`) {
		t.Errorf("POST check mutli: %d %s, want 400 naming it", code, body)
	}
	if code, body := post(`{"check":"multi","target":"origin-b","for":"1h","by":"alice","why":"deploy"}`); code != http.StatusBadRequest ||
		!strings.Contains(body, `target: \"origin-b\": not a target of check \"multi\"`) {
		t.Errorf("POST multi × origin-b: %d %s, want 400 naming the target", code, body)
	}
	if code, body := post(`{"check":"multi","target":"origin-a","for":"1d","by":"alice","why":"deploy"}`); code != http.StatusCreated {
		t.Errorf("POST multi × origin-a for 1d: %d %s, want 201", code, body)
	}
}
