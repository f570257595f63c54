package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// TestAlertSilenceAndHistoryAPI: on a running alerter, a silence POSTed
// to /api/v1/silences shows on GET /api/v1/alerts in the next request,
// and GET /api/v1/alerts/history lists the alert's firing and silenced
// transitions, newest first (bad parameters a JSON 400), from
// history.json in agent.data_dir.
func TestAlertSilenceAndHistoryAPI(t *testing.T) {
	const token = "admin-token-0123456789abcdef"
	data := t.TempDir()
	now := time.Now()
	st, err := store.Open(data, store.Options{Log: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	v := reporting.Verdict{Check: "asset", Target: "origin-a", Region: "eu", Vantage: "eu-1", State: reporting.StateUnhealthy,
		Cause: "status", StatusCode: 503, Interval: time.Minute, At: now, Expires: now.Add(10 * time.Minute)}
	if err := st.Publish(context.Background(), []reporting.Verdict{v}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	path := writeConfig(t, fmt.Sprintf(`
agent: {region: alerter, data_dir: %s, admin_token: %s}
targets: [{name: origin-a, url: "http://127.0.0.1:1/"}]
checks:
  - {name: asset, targets: [origin-a], http: {path: /asset.bin}}
alerting: {evaluation_interval: 1h, dead_man: {disabled: true}, quorum_lost: {disabled: true}, down: {for: 0s}}
`, data, token))
	a, stopApp := startApp(t, path, roles{alerter: true})
	stop := sync.OnceFunc(stopApp)
	defer stop()
	call := silenceCaller(t, "http://"+a.Addr(), token)
	var alerts []map[string]any
	waitFor(t, 15*time.Second, "the down alert", func() bool {
		_, body := call("GET", "/api/v1/alerts", "")
		return json.Unmarshal([]byte(body), &alerts) == nil && len(alerts) == 1
	})
	if alerts[0]["silenced"] != nil && alerts[0]["silenced"] != "" {
		t.Fatalf("silenced before any silence: %v", alerts[0])
	}
	if code, body := call("POST", "/api/v1/silences", `{"check":"asset","for":"1h","by":"alice","why":"deploy"}`); code != http.StatusCreated {
		t.Fatalf("POST /api/v1/silences: %d %s", code, body)
	}
	_, body := call("GET", "/api/v1/alerts", "")
	if !strings.Contains(body, `"silenced":"silence `) || !strings.Contains(body, ` by alice until `) {
		t.Fatalf("GET /api/v1/alerts right after the silence: %s", body)
	}
	code, body := call("GET", "/api/v1/alerts/history?check=asset&limit=10", "")
	var h []map[string]any
	if code != 200 || json.Unmarshal([]byte(body), &h) != nil || len(h) != 2 || h[0]["event"] != "silenced" ||
		h[1]["event"] != "firing" || h[1]["check"] != "asset" || h[1]["target"] != "origin-a" || h[1]["rule"] != "down" {
		t.Fatalf("GET /api/v1/alerts/history: %d %s", code, body)
	}
	if code, body := call("GET", "/api/v1/alerts/history?limit=-1", ""); code != 400 || !strings.Contains(body, `"error":"limit: `) {
		t.Fatalf("?limit=-1: %d %s", code, body)
	}
	stop()
	if b, err := os.ReadFile(filepath.Join(data, "history.json")); err != nil || !strings.Contains(string(b), `"event": "silenced"`) {
		t.Fatalf("history.json: %s %v", b, err)
	}
}
