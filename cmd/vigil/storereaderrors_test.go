package main

import (
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/influx/influxtest"
)

// TestStoreReadErrorsNameTheKey runs `vigil run` (canary, proxy, status
// page) on an InfluxDB 1.8 that refuses its reads: with Flux off (1.8's
// default), and with a wrong password. Every place a user looks says what
// to change, not a bare status code nor (for Flux off) a rejected token:
// /healthz's store.influxdb and proxy lines, the proxy's and the passive
// triggers' log lines, and the status page's banner and Vigil-Degraded
// header. /healthz has no empty "proxy: " line.
func TestStoreReadErrorsNameTheKey(t *testing.T) {
	const fluxFix = "set flux-enabled = true in the [http] section of influxdb.conf, or INFLUXDB_HTTP_FLUX_ENABLED=true, and restart InfluxDB"
	bin := buildVigil(t, t.TempDir())
	for _, tc := range []struct {
		name   string
		opts   []influxtest.Option
		token  string
		want   string // the explained error, after "influx: verdicts: " etc.
		banner string // the status page's banner, up to " since "
	}{
		{"Flux off", []influxtest.Option{influxtest.FluxOff()}, "",
			"store.influxdb.url: that InfluxDB has Flux off, and vigil reads with Flux: " + fluxFix +
				" (403 Forbidden: Flux query service disabled. Verify flux-enabled=true in the [http] section of the InfluxDB config.)",
			"InfluxDB unavailable (Flux off: " + fluxFix + ")"},
		{"wrong password", []influxtest.Option{influxtest.Auth("admin", "right-pass")}, "admin:wrong-pass",
			"store.influxdb.token: rejected by InfluxDB (401 Unauthorized)",
			"InfluxDB unavailable (credentials rejected: 401 Unauthorized)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := influxtest.Start(t, tc.opts...)
			if _, err := srv.Query("", "CREATE DATABASE vigil"); err != nil {
				t.Fatal(err)
			}
			origin := newOKServer(t)
			dir := t.TempDir()
			port := freePorts(t, 2)
			base := fmt.Sprintf("http://127.0.0.1:%d", port)
			path := writeConfig(t, fmt.Sprintf(`
agent:
  listen: "127.0.0.1:%d"
  region: r1
  data_dir: %q
  triggers: {poll: 1s}
store:
  influxdb: {url: %q, token: %q, bucket: vigil/autogen, flush_interval: 100ms, timeout: 2s}
alerting: {disabled: true}
targets: [{name: shop, url: %q}]
checks:
  - {name: up, targets: [shop], interval: 1s, timeout: 500ms, http: {path: /}}
proxy:
  listen: "127.0.0.1:%d"
  verdict_poll: 1s
  pools:
    - {name: web, hosts: ["*"], origins: [{target: shop}]}
`, port, filepath.Join(dir, "data"), srv.URL, tc.token, origin, port+1))
			p := startLogged(t, bin, "run", "-c", path)
			waitFor(t, 60*time.Second, "vigil started", func() bool {
				p.alive(t)
				return strings.Contains(p.stderr.String(), `msg="vigil started"`)
			})

			proxyLine := "proxy: verdicts unreadable since "
			storeLine := regexp.MustCompile(`(?m)^store\.influxdb: reads failing since \S+: (.*)$`)
			var code int
			var body string
			waitFor(t, 60*time.Second, "/healthz 503 with the store's and the proxy's read lines", func() bool {
				p.alive(t)
				readPage(base) // the status page reads the store
				code, body = do(t, "GET", base+"/healthz", "", nil)
				return code == http.StatusServiceUnavailable && strings.Contains(body, proxyLine) && storeLine.MatchString(body)
			})
			if m := storeLine.FindStringSubmatch(body); m[1] != tc.want {
				t.Errorf("/healthz store line says %q\nwant %q", m[1], tc.want)
			}
			if want := " from store.influxdb: influx: verdicts: " + tc.want; !containsLine(body, proxyLine, want) {
				t.Errorf("/healthz has no %q…%q line:\n%s", proxyLine, want, body)
			}
			for _, l := range strings.Split(strings.TrimRight(body, "\n"), "\n") {
				if strings.TrimSpace(l) == "" || strings.HasSuffix(strings.TrimSpace(l), ":") {
					t.Errorf("/healthz has a line with nothing to say: %q\n%s", l, body)
				}
			}

			quoted := strings.ReplaceAll(tc.want, `"`, `\"`)
			for _, want := range []string{
				`msg="passive triggers: reading signals failed" error="influx: signals: ` + quoted + `"`,
				`msg="proxy: reading verdicts failed; keeping its last ones until they age out" source=store.influxdb err="influx: verdicts: ` + quoted + `"`,
			} {
				waitFor(t, 30*time.Second, "log line "+want, func() bool {
					p.alive(t)
					return strings.Contains(p.stderr.String(), want)
				})
			}

			var hdr http.Header
			var page string
			waitFor(t, 30*time.Second, "the status page's banner", func() bool {
				code, hdr, page = getHeader(t, base+"/")
				return strings.HasPrefix(hdr.Get(reporting.DegradedHeader), tc.banner+" since ")
			})
			if !strings.Contains(page, html.EscapeString(tc.banner)+" since ") {
				t.Errorf("GET / = %d: no banner %q (%s: %q)", code, tc.banner, reporting.DegradedHeader, hdr.Get(reporting.DegradedHeader))
			}
		})
	}
}

// containsLine reports whether a line of body starts with prefix and ends
// with suffix.
func containsLine(body, prefix, suffix string) bool {
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, prefix) && strings.HasSuffix(l, suffix) {
			return true
		}
	}
	return false
}

// newOKServer is an origin answering 200 to everything; closed when the
// test ends. It returns its URL.
func newOKServer(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }))
	t.Cleanup(srv.Close)
	return srv.URL
}
