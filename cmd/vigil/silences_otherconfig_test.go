package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestSilencesOfAnotherConfigMarked: two configs share one data_dir. A
// silence added under the first (check asset, pool web × origin-a) is
// still listed by GET /api/v1/silences under the second, which has neither
// (kept until it ends, as Alertmanager keeps a silence that matches no
// alert), marked unmatched with the reason; the second's own silence is
// not marked. Back under the first config, none is marked. Was: listed as
// if it held something.
func TestSilencesOfAnotherConfigMarked(t *testing.T) {
	const token = "admin-token-0123456789abcdef"
	data := t.TempDir()
	conf := func(check, pool string) string {
		return fmt.Sprintf(`
agent: {region: eu, data_dir: %s, admin_token: %s}
targets: [{name: origin-a, url: "http://127.0.0.1:1/"}]
checks: [{name: %s, targets: [origin-a], http: {path: /}}]
proxy:
  listen: 127.0.0.1:0
  pools: [{name: %s, origins: [{target: origin-a}]}]
alerting: {evaluation_interval: 1h, dead_man: {disabled: true}, quorum_lost: {disabled: true}}
`, data, token, check, pool)
	}
	type listed struct {
		ID, Check, Target, Unmatched string
	}
	list := func(call func(method, path, body string) (int, string)) map[string]listed {
		t.Helper()
		code, body := call("GET", "/api/v1/silences", "")
		if code != http.StatusOK {
			t.Fatalf("GET /api/v1/silences: %d %s", code, body)
		}
		var ls []listed
		if err := json.Unmarshal([]byte(body), &ls); err != nil {
			t.Fatalf("GET /api/v1/silences: %v: %s", err, body)
		}
		out := map[string]listed{}
		for _, l := range ls {
			out[l.Check+"/"+l.Target] = l
		}
		return out
	}
	post := func(call func(method, path, body string) (int, string), body string) {
		t.Helper()
		if code, out := call("POST", "/api/v1/silences", body); code != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", body, code, out)
		}
	}

	first := writeConfig(t, conf("asset", "web"))
	a, stop := startApp(t, first, roles{proxy: true, alerter: true})
	call := silenceCaller(t, "http://"+a.Addr(), token)
	post(call, `{"check":"asset","for":"2h","by":"alice","why":"deploy"}`)
	post(call, `{"check":"web","target":"origin-a","for":"2h","by":"alice","why":"rebuilding origin-a"}`)
	for k, l := range list(call) {
		if l.Unmatched != "" {
			t.Errorf("under the config that added it, %s is marked unmatched: %s", k, l.Unmatched)
		}
	}
	stop()

	second := writeConfig(t, conf("home", "shop"))
	b, stop := startApp(t, second, roles{proxy: true, alerter: true})
	defer func() { stop() }()
	call = silenceCaller(t, "http://"+b.Addr(), token)
	post(call, `{"check":"home","for":"1h","by":"bob","why":"deploy"}`)
	got := list(call)
	if len(got) != 3 {
		t.Fatalf("under the second config: %d silences listed, want 3 (the first's are kept): %v", len(got), got)
	}
	for k, want := range map[string]string{
		"asset/":       `check: "asset": not a configured check, proxy pool nor the check of an active alert`,
		"web/origin-a": `check: "web": not a configured check, proxy pool nor the check of an active alert`,
	} {
		if !strings.HasPrefix(got[k].Unmatched, want) || !strings.Contains(got[k].Unmatched, "it holds nothing under this config") {
			t.Errorf("%s listed with unmatched %q, want it to start %q and say it holds nothing", k, got[k].Unmatched, want)
		}
	}
	if l := got["home/"]; l.ID == "" || l.Unmatched != "" {
		t.Errorf("the second config's own silence: %+v, want it listed, not marked", l)
	}
	stop()

	a, stop = startApp(t, first, roles{proxy: true, alerter: true})
	call = silenceCaller(t, "http://"+a.Addr(), token)
	got = list(call)
	if got["asset/"].Unmatched != "" || got["web/origin-a"].Unmatched != "" || !strings.HasPrefix(got["home/"].Unmatched, `check: "home"`) {
		t.Errorf("back under the first config: %+v, want asset and web × origin-a unmarked, home marked", got)
	}
}
