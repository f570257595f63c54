package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

// fakeHostName makes os.Hostname answer name for the test.
func fakeHostName(t *testing.T, name string) {
	t.Helper()
	old := hostName
	hostName = func() (string, error) { return name, nil }
	t.Cleanup(func() { hostName = old })
}

// TestStatusLinksWildcardListen: with alerting.status_page_url unset and
// agent.listen binding every address (0.0.0.0:P, :P, [::]:P), the links
// alerts carry use the machine's host name, never 0.0.0.0 or an empty
// host that nobody can open, and vigil validate warns, naming the key and
// the link it guessed. A specific listen address and a status_page_url
// set in the file get no warning.
func TestStatusLinksWildcardListen(t *testing.T) {
	fakeHostName(t, "Canary-7.example")
	const host = "canary-7.example"
	body := func(listen, alerting string) string {
		return fmt.Sprintf(`agent: {listen: %q}
targets: [{name: web, url: "http://127.0.0.1:1"}]
checks: [{name: home, targets: [web], http: {path: /}}]
slos: [{name: home, check: home, objective: 99.9%%}]
alerting:
  %s
  receivers: [{name: hook, webhook: {url: "http://127.0.0.1:1/hook"}}]
`, listen, alerting)
	}
	for _, listen := range []string{"0.0.0.0:9470", ":9470", "[::]:9470"} {
		t.Run(listen, func(t *testing.T) {
			cfg := writeConfig(t, body(listen, "repeat_interval: 1h"))
			out, code := runCLI(t, "validate", "-c", cfg)
			want := fmt.Sprintf("warning: %s:5: alerting.status_page_url: not set and agent.listen %q binds every address; alert links use http://%s:9470: set status_page_url to the address your on-call reaches",
				cfg, listen, host)
			if code != 0 || !strings.HasPrefix(out, "ok\n") || !strings.Contains(out, want+"\n") {
				t.Errorf("vigil validate: exit %d:\n%s\nwant ok and the warning:\n%s", code, out, want)
			}
			out, code = runCLI(t, "alerter", "-c", cfg, "--prometheus-rules")
			link := "status_url: 'http://" + host + ":9470/check/{{ $labels.check }}'"
			if code != 0 || !strings.Contains(out, link) || strings.Contains(out, "http://0.0.0.0") || strings.Contains(out, "http://:") || strings.Contains(out, "http://[::]") {
				t.Errorf("Prometheus rules: exit %d, want every status_url to be %s:\n%s", code, link, out)
			}
		})
	}
	// --listen moves the default the same way.
	cfg, err := loadConfig(writeConfig(t, body("127.0.0.1:9470", "repeat_interval: 1h")), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.overrideListen(":8080"); cfg.Alerting.StatusPageURL != "http://"+host+":8080" {
		t.Errorf("--listen :8080: status_page_url %q, want http://%s:8080", cfg.Alerting.StatusPageURL, host)
	}
	for name, b := range map[string]string{
		"loopback listen":     body("127.0.0.1:9470", "repeat_interval: 1h"),
		"named host listen":   body("canary.internal:9470", "repeat_interval: 1h"),
		"status_page_url set": body(":9470", "status_page_url: https://status.example"),
		"alerting disabled":   body(":9470", "disabled: true"),
	} {
		t.Run(name, func(t *testing.T) {
			cfg := writeConfig(t, b)
			out, code := runCLI(t, "validate", "-c", cfg)
			if code != 0 || strings.Contains(out, "status_page_url: not set") {
				t.Errorf("vigil validate: exit %d:\n%s\nwant ok without a status_page_url warning", code, out)
			}
		})
	}
}

// TestStatusLinksWildcardListenNotified: an alert's webhook status_url,
// for an agent whose agent.listen is ":PORT", is
// http://HOSTNAME:PORT/check/…, and the status page answers there (the
// host name is resolved to 127.0.0.1 by the test, as DNS would resolve it
// to the machine).
func TestStatusLinksWildcardListenNotified(t *testing.T) {
	fakeHostName(t, "localhost")
	links := make(chan string, 64)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p struct {
			Alerts []struct {
				StatusURL string `json:"status_url"`
			} `json:"alerts"`
		}
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &p); err == nil {
			for _, a := range p.Alerts {
				select {
				case links <- a.StatusURL:
				default:
				}
			}
		}
	}))
	defer hook.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := closed.Addr().String()
	closed.Close() // nothing listens there: the check fails, the alert fires
	// The agent serves on 127.0.0.1 (tests reach no other address); the
	// file's agent.listen is the wildcard form of the same port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	path := writeConfig(t, fmt.Sprintf(`
agent: {region: r1, data_dir: %s, listen: ":%d"}
defaults: {interval: 300ms, timeout: 250ms, rise: 1, fall: 1, jitter: "0%%"}
targets: [{name: gone, url: "http://%s/"}]
checks: [{name: api, targets: [gone], http: {path: /}}]
alerting:
  evaluation_interval: 1s
  repeat_interval: 1s
  down: {for: 0s}
  dead_man: {disabled: true}
  receivers: [{name: hook, webhook: {url: "%s/hook"}}]
`, t.TempDir(), port, gone, hook.URL))
	cfg, err := loadConfig(path, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	a, err := newApp(cfg, appOptions{roles: roles{canary: true, alerter: true, page: true}, listener: ln,
		watch: 100 * time.Millisecond, log: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer runApp(t, a)()
	want := fmt.Sprintf("http://localhost:%d/check/api?target=gone", port)
	var got string
	select {
	case got = <-links:
	case <-time.After(20 * time.Second):
		t.Fatal("no notification within 20s")
	}
	if got != want {
		t.Fatalf("status link %q, want %q", got, want)
	}
	resp, err := http.Get(want)
	if err != nil {
		t.Fatalf("GET %s: %v", want, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s: %s, want 200", want, resp.Status)
	}
}
