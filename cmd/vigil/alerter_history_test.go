package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// TestAlerterServesHistory: a standalone vigil alerter (roles alerter and
// page, as `vigil alerter` runs) over the embedded store serves GET
// /api/v1/checks/{name}/history from that store as a canary does, so the
// alert links that point at it (status_url) lead somewhere; its
// parameter errors and an unknown check are the canary's JSON answers,
// and any other /api/v1/ path is a JSON 404, not the status page's HTML.
func TestAlerterServesHistory(t *testing.T) {
	data := t.TempDir()
	now := time.Now()
	st, err := store.Open(data, store.Options{Log: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	var vs []reporting.Verdict
	for i := range 5 {
		at := now.Add(-10 * time.Minute).Add(time.Duration(i) * time.Minute)
		v := reporting.Verdict{Check: "asset", Target: "origin-a", Region: "eu", Vantage: "eu-1", Tier: reporting.TierDeep,
			State: reporting.StateHealthy, OK: true, StatusCode: 200, Interval: time.Minute, At: at, Expires: at.Add(3 * time.Minute)}
		if i == 4 {
			v.State, v.OK, v.Cause, v.StatusCode = reporting.StateUnhealthy, false, "status", 503
		}
		vs = append(vs, v)
	}
	if err := st.Publish(context.Background(), vs); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	// The alerter's file names the check (its dead-man and pair lists);
	// "quiet" is a check with no history yet.
	path := writeConfig(t, fmt.Sprintf(`
agent: {region: alerter, data_dir: %s}
targets: [{name: origin-a, url: "http://127.0.0.1:1/"}]
checks:
  - {name: asset, targets: [origin-a], http: {path: /asset.bin}}
  - {name: quiet, targets: [origin-a], http: {path: /}}
alerting: {dead_man: {disabled: true}}
`, data))
	cfg, err := loadConfig(path, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a, err := newApp(cfg, appOptions{roles: roles{alerter: true, page: true}, listener: ln, log: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer runApp(t, a)()
	base := "http://" + ln.Addr().String()

	get := func(p string) (int, string, string) {
		t.Helper()
		resp, err := http.Get(base + p)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}

	code, ct, body := get("/api/v1/checks/asset/history?target=origin-a")
	if code != http.StatusOK || ct != "application/json" {
		t.Fatalf("GET history on the alerter: %d %s\n%s", code, ct, body)
	}
	var got []struct {
		Check, Target, Region, State string
		StatusCode                   int `json:"status_code"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	if len(got) != 5 {
		t.Fatalf("want the 5 stored runs, got %d:\n%s", len(got), body)
	}
	n503 := 0
	for _, v := range got {
		if v.Check != "asset" || v.Target != "origin-a" || v.Region != "eu" {
			t.Fatalf("unexpected verdict %+v", v)
		}
		if v.StatusCode == 503 {
			n503++
		}
	}
	if n503 != 1 {
		t.Fatalf("want the one failed run (503) among them:\n%s", body)
	}

	for _, c := range []struct {
		path     string
		code     int
		contains string
	}{
		{"/api/v1/checks/asset/history?limit=0", http.StatusBadRequest, "limit"},
		{"/api/v1/checks/quiet/history", http.StatusOK, "[]"},
		{"/api/v1/checks/nosuch/history", http.StatusNotFound, `no check named \"nosuch\"`},
		{"/api/v1/nosuch", http.StatusNotFound, "no API endpoint GET /api/v1/nosuch"},
	} {
		code, ct, body := get(c.path)
		if code != c.code || ct != "application/json" || !strings.Contains(body, c.contains) {
			t.Errorf("GET %s: %d %s\n%s\nwant %d application/json containing %q", c.path, code, ct, body, c.code, c.contains)
		}
	}
	// The status page itself is still there.
	if code, ct, _ := get("/"); code != http.StatusOK || !strings.HasPrefix(ct, "text/html") {
		t.Errorf("GET /: %d %s, want the status page", code, ct)
	}
}

// TestCanaryAPIUnknownPathJSON: on a canary, an /api/v1/ path or method
// no route serves answers a JSON error too (the router's plain text
// before).
func TestCanaryAPIUnknownPathJSON(t *testing.T) {
	path := writeConfig(t, fmt.Sprintf(`
agent: {region: r1, data_dir: %s}
targets: [{name: o1, url: "http://127.0.0.1:1/"}]
checks: [{name: web, targets: [o1], disabled: true, http: {path: /}}]
`, t.TempDir()))
	cfg, err := loadConfig(path, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a, err := newApp(cfg, appOptions{roles: roles{canary: true, page: true}, listener: ln, log: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer runApp(t, a)()
	base := "http://" + ln.Addr().String()
	for _, c := range []struct {
		method, path string
		code         int
		contains     string
	}{
		{"GET", "/api/v1/nosuch", http.StatusNotFound, "no API endpoint GET /api/v1/nosuch"},
		{"GET", "/api/v1/trigger", http.StatusMethodNotAllowed, "method GET not allowed for /api/v1/trigger"},
	} {
		req, _ := http.NewRequest(c.method, base+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code || resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(string(b), c.contains) {
			t.Errorf("%s %s: %d %s\n%s\nwant %d application/json containing %q", c.method, c.path, resp.StatusCode,
				resp.Header.Get("Content-Type"), b, c.code, c.contains)
		}
	}
}
