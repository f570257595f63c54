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

// TestStatusLinksFollowListenFlag: with alerting.status_page_url unset, a
// notification's status link points at the status page where --listen
// put it (and opens there), not at agent.listen's default port 9470; after
// a reload too. A status_page_url set in the file is kept as written.
func TestStatusLinksFollowListenFlag(t *testing.T) {
	for _, tc := range []struct {
		name, statusPage string
		want             func(listen string) string
	}{
		{"default", "", func(listen string) string { return "http://" + listen + "/check/api?target=gone" }},
		{"set in the file", "status_page_url: https://status.example/", func(string) string {
			return "https://status.example/check/api?target=gone"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
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
			listen := fmt.Sprintf("127.0.0.1:%d", freePorts(t, 1))

			path := writeConfig(t, fmt.Sprintf(`
agent: {region: r1, data_dir: %s}
defaults: {interval: 300ms, timeout: 250ms, rise: 1, fall: 1, jitter: "0%%"}
targets: [{name: gone, url: "http://%s/"}]
checks: [{name: api, targets: [gone], http: {path: /}}]
alerting:
  %s
  evaluation_interval: 1s
  repeat_interval: 1s
  down: {for: 0s}
  dead_man: {disabled: true}
  receivers: [{name: hook, webhook: {url: "%s/hook"}}]
`, t.TempDir(), gone, tc.statusPage, hook.URL))
			cfg, err := loadConfig(path, os.LookupEnv)
			if err != nil {
				t.Fatal(err)
			}
			a, err := newApp(cfg, appOptions{roles: roles{canary: true, alerter: true, page: true}, listen: listen,
				watch: 100 * time.Millisecond, log: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			defer runApp(t, a)()

			next := func(what string) string {
				t.Helper()
				select {
				case l := <-links:
					return l
				case <-time.After(20 * time.Second):
					t.Fatalf("%s: no notification within 20s", what)
				}
				return ""
			}
			want := tc.want(listen)
			if got := next("at start"); got != want {
				t.Fatalf("status link %q, want %q", got, want)
			}
			if tc.statusPage == "" {
				resp, err := http.Get(want)
				if err != nil {
					t.Fatalf("GET %s: %v", want, err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Errorf("GET %s: %s, want 200", want, resp.Status)
				}
			}
			// A reload (the file touched) keeps the link. Notifications
			// repeat every second; drain those queued before it.
			now := time.Now().Add(time.Second)
			if err := os.Chtimes(path, now, now); err != nil {
				t.Fatal(err)
			}
			a.reload()
			for len(links) > 0 {
				<-links
			}
			if got := next("after a reload"); got != want {
				t.Errorf("after a reload: status link %q, want %q", got, want)
			}
			if strings.Contains(want, ":9470") {
				t.Fatalf("test listens on agent.listen's default port: proves nothing")
			}
		})
	}
}
