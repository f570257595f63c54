package main

import (
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// retentionHead is a file's targets and checks for the retention tests.
const retentionHead = `targets: [{name: web, url: "http://127.0.0.1:1"}]
checks: [{name: home, targets: [web], interval: 10s, http: {path: /}}]
`

// TestValidateRetentionShorterThanWindows: a store that keeps less history
// than the file asks of it is a vigil validate warning (exit 0) placed at
// the retention key, one per reader of the rollups (SLO windows, burn-rate
// pairs, uptime columns) and one for the raw verdicts (the recent failures
// list), naming every window it lacks; a file whose windows fit, or whose
// readers read InfluxDB, gets none.
func TestValidateRetentionShorterThanWindows(t *testing.T) {
	const (
		slo30     = `("web-avail"): its availability and error budget are computed from at most 1h of history; set rollup_retention to at least 30d`
		burnAll   = "is shorter than the long windows of the burn-rate pairs 6h/30m, 1d/2h, 3d/6h (alerting.burn_rate): they are judged on at most 1h of runs, so a short outage counts as a larger share of them; set rollup_retention to at least 3d"
		uptimeAll = "is shorter than the status page's uptime columns 24h, 7d, 30d: they show the uptime of at most the last 1h; set rollup_retention to at least 30d"
		failures1 = "store.embedded.retention: 1h is shorter than the 24h of the check pages' recent failures and slow runs: they list those of at most the last 1h"
	)
	short := "store:\n  embedded: {retention: 1h, rollup_retention: 1h}\n"
	for _, tc := range []struct {
		name, body string
		want       []string // after "ok", FILE: prefixed
	}{
		{"the soak's file: one 30d SLO, 1h kept",
			retentionHead + short + "slos:\n  - {name: web-avail, check: home, objective: 99.9%, window: 30d}\n",
			[]string{
				":4:14: " + failures1,
				":4:29: store.embedded.rollup_retention: 1h is shorter than slos[0].window 30d " + slo30,
				":4:29: store.embedded.rollup_retention: 1h " + burnAll,
				":4:29: store.embedded.rollup_retention: 1h " + uptimeAll,
			}},
		{"many SLOs share one warning; one within the retention is not named",
			retentionHead + "store: {embedded: {rollup_retention: 10d}}\nslos:\n" +
				"  - {name: s0, check: home, objective: 99%, window: 30d}\n" +
				"  - {name: s1, check: home, ttfb_p95: 1s, window: 14d}\n" +
				"  - {name: fits, check: home, objective: 99%, window: 10d}\n" +
				"  - {name: s3, check: home, objective: 99%, window: 11d}\n" +
				"  - {name: s4, check: home, objective: 99%, window: 12d}\n" +
				"  - {name: s5, check: home, objective: 99%, window: 13d}\n" +
				"  - {name: s6, check: home, objective: 99%, window: 31d}\n",
			[]string{
				`:3:20: store.embedded.rollup_retention: 10d is shorter than the windows of 6 SLOs (slos[0].window 30d ("s0"), slos[1].window 14d ("s1"), slos[3].window 11d ("s3"), slos[4].window 12d ("s4"), slos[5].window 13d ("s5") and 1 more): their figures (availability, error budget, TTFB p95) are computed from at most 10d of history; set rollup_retention to at least 31d`,
				":3:20: store.embedded.rollup_retention: 10d is shorter than the status page's uptime column 30d: it shows the uptime of at most the last 10d; set rollup_retention to at least 30d",
			}},
		{"a TTFB SLO: no burn-rate pairs",
			retentionHead + "store: {embedded: {retention: 1d, rollup_retention: 2d}}\nslos: [{name: fast, check: home, ttfb_p95: 500ms, window: 3d}]\n",
			[]string{
				`:3:35: store.embedded.rollup_retention: 2d is shorter than slos[0].window 3d ("fast"): its TTFB p95 is computed from at most 2d of history; set rollup_retention to at least 3d`,
				":3:35: store.embedded.rollup_retention: 2d is shorter than the status page's uptime columns 7d, 30d: they show the uptime of at most the last 2d; set rollup_retention to at least 30d",
			}},
		{"an SLO with both objectives; the slow pairs only",
			retentionHead + "store: {embedded: {retention: 12h, rollup_retention: 12h}}\nslos: [{name: both, check: home, objective: 99%, ttfb_p95: 1s, window: 1d}]\n",
			[]string{
				":3:20: store.embedded.retention: 12h is shorter than the 24h of the check pages' recent failures and slow runs: they list those of at most the last 12h",
				`:3:36: store.embedded.rollup_retention: 12h is shorter than slos[0].window 1d ("both"): its availability, error budget and TTFB p95 are computed from at most 12h of history; set rollup_retention to at least 1d`,
				":3:36: store.embedded.rollup_retention: 12h is shorter than the long windows of the burn-rate pairs 1d/2h, 3d/6h (alerting.burn_rate): they are judged on at most 12h of runs, so a short outage counts as a larger share of them; set rollup_retention to at least 3d, or alerting.burn_rate.no_ticket: true",
				":3:36: store.embedded.rollup_retention: 12h is shorter than the status page's uptime columns 24h, 7d, 30d: they show the uptime of at most the last 12h; set rollup_retention to at least 30d",
			}},
		{"no_ticket: the page pairs only",
			retentionHead + "store: {embedded: {retention: 2h, rollup_retention: 2h}}\nslos: [{name: h, check: home, objective: 99%, window: 1h}]\nalerting: {burn_rate: {no_ticket: true}, receivers: [{name: l, webhook: {url: \"http://127.0.0.1:9/x\"}}]}\n",
			[]string{
				":3:20: store.embedded.retention: 2h is shorter than the 24h of the check pages' recent failures and slow runs: they list those of at most the last 2h",
				":3:35: store.embedded.rollup_retention: 2h is shorter than the long windows of the burn-rate pairs 6h/30m (alerting.burn_rate): they are judged on at most 2h of runs, so a short outage counts as a larger share of them; set rollup_retention to at least 6h",
				":3:35: store.embedded.rollup_retention: 2h is shorter than the status page's uptime columns 24h, 7d, 30d: they show the uptime of at most the last 2h; set rollup_retention to at least 30d",
			}},
		{"no_ticket with 6h kept: no burn-rate warning",
			retentionHead + "store: {embedded: {retention: 6h, rollup_retention: 6h}}\nslos: [{name: h, check: home, objective: 99%, window: 1h}]\nalerting: {burn_rate: {no_ticket: true}, receivers: [{name: l, webhook: {url: \"http://127.0.0.1:9/x\"}}]}\n",
			[]string{
				":3:20: store.embedded.retention: 6h is shorter than the 24h of the check pages' recent failures and slow runs: they list those of at most the last 6h",
				":3:35: store.embedded.rollup_retention: 6h is shorter than the status page's uptime columns 24h, 7d, 30d: they show the uptime of at most the last 6h; set rollup_retention to at least 30d",
			}},
		{"burn_rate disabled: the SLO's window only",
			retentionHead + "store: {embedded: {rollup_retention: 7d}}\nslos: [{name: m, check: home, objective: 99%, window: 30d}]\nalerting: {burn_rate: {disabled: true}, receivers: [{name: l, webhook: {url: \"http://127.0.0.1:9/x\"}}]}\n",
			[]string{
				`:3:20: store.embedded.rollup_retention: 7d is shorter than slos[0].window 30d ("m"): its availability and error budget are computed from at most 7d of history; set rollup_retention to at least 30d`,
				":3:20: store.embedded.rollup_retention: 7d is shorter than the status page's uptime column 30d: it shows the uptime of at most the last 7d; set rollup_retention to at least 30d",
			}},
		{"alerting disabled: no SLO or burn-rate warning, the page's still",
			retentionHead + short + "slos: [{name: web-avail, check: home, objective: 99.9%, window: 30d}]\nalerting: {disabled: true}\n",
			[]string{
				":4:14: " + failures1,
				":4:29: store.embedded.rollup_retention: 1h " + uptimeAll,
			}},
		{"the default rollup_retention, shorter than an SLO: no line to place it at",
			retentionHead + "slos: [{name: q, check: home, objective: 99%, window: 90d}]\n",
			[]string{
				`: store.embedded.rollup_retention: 35d (the default) is shorter than slos[0].window 90d ("q"): its availability and error budget are computed from at most 35d of history; set rollup_retention to at least 90d`,
			}},
		{"the default rollup_retention follows a longer retention",
			retentionHead + "store: {embedded: {retention: 40d}}\nslos: [{name: q, check: home, objective: 99%, window: 60d}]\n",
			[]string{
				`:3:9: store.embedded.rollup_retention: 40d (the default: retention) is shorter than slos[0].window 60d ("q"): its availability and error budget are computed from at most 40d of history; set rollup_retention to at least 60d`,
			}},
		{"windows that fit: none",
			retentionHead + "store: {embedded: {retention: 1d, rollup_retention: 30d}}\nslos: [{name: q, check: home, objective: 99.9%, window: 30d}]\n",
			nil},
		{"the defaults: none",
			retentionHead + "slos: [{name: q, check: home, objective: 99.9%}]\n",
			nil},
		{"InfluxDB is read: none",
			retentionHead + short + "  influxdb: {url: \"http://127.0.0.1:1\", bucket: b}\nslos: [{name: q, check: home, objective: 99.9%, window: 30d}]\n",
			nil},
		{"a store-only file (no checks, no SLOs): none",
			short,
			nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := writeConfig(t, tc.body)
			out, code := runCLI(t, "validate", "-c", cfg)
			want := "ok"
			for _, w := range tc.want {
				want += "\nwarning: " + cfg + w
			}
			if code != 0 || strings.TrimSpace(out) != want {
				t.Errorf("exit %d:\n%s\nwant exit 0 and:\n%s", code, out, want)
			}
		})
	}
}

// TestRetentionWarningFromEnvironment: a rollup_retention set by
// VIGIL_STORE_EMBEDDED_ROLLUP_RETENTION is named with its variable.
func TestRetentionWarningFromEnvironment(t *testing.T) {
	cfg := writeConfig(t, retentionHead+"store: {embedded: {retention: 1d}}\nslos: [{name: q, check: home, ttfb_p95: 1s, window: 3d}]\n")
	t.Setenv("VIGIL_STORE_EMBEDDED_ROLLUP_RETENTION", "2d")
	out, code := runCLI(t, "validate", "-c", cfg)
	want := "warning: " + cfg + `: store.embedded.rollup_retention (from VIGIL_STORE_EMBEDDED_ROLLUP_RETENTION): 2d is shorter than slos[0].window 3d ("q"): its TTFB p95 is computed from at most 2d of history`
	if code != 0 || !strings.Contains(out, want) {
		t.Errorf("exit %d:\n%s\nwant exit 0 and a line starting:\n%s", code, out, want)
	}
}

// TestRetentionWarningLoggedAtStartAndReload: vigil run logs the same
// warnings when it loads the file (loadConfig, which the start and every
// reload go through), and a reload that shortens the retention logs them.
func TestRetentionWarningLoggedAtStartAndReload(t *testing.T) {
	var buf checktest.SyncBuffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(prev)

	dir := t.TempDir()
	path := filepath.Join(dir, "vigil.yaml")
	head := "agent: {data_dir: " + filepath.Join(dir, "data") + "}\n" + retentionHead +
		"slos: [{name: web-avail, check: home, objective: 99.9%, window: 30d}]\n"
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const msg = `store.embedded.rollup_retention: 1h is shorter than slos[0].window 30d (\"web-avail\")`
	write(head + "store: {embedded: {retention: 1h, rollup_retention: 1h}}\n")
	if _, err := loadConfig(path, os.LookupEnv); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), msg); n != 1 || !strings.Contains(buf.String(), "level=WARN msg=\""+path+":5:") {
		t.Fatalf("loading the file logged the warning %d times, want once at line 5:\n%s", n, buf.String())
	}

	// An app started on a file whose windows fit, reloaded on one that
	// keeps 1h.
	write(head)
	cfg, err := loadConfig(path, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a, err := newApp(cfg, appOptions{roles: roles{alerter: true, page: true}, listener: ln, watch: time.Hour,
		log: slog.New(slog.NewTextHandler(&buf, nil))})
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	stop := runApp(t, a)
	defer stop()
	before := strings.Count(buf.String(), msg)
	write(head + "store: {embedded: {retention: 1h, rollup_retention: 1h}}\n")
	a.reload()
	if n := strings.Count(buf.String(), msg) - before; n != 1 {
		t.Errorf("the reload logged the warning %d times, want once:\n%s", n, buf.String())
	}
	if a.current().Store.Embedded.RollupRetention != time.Hour {
		t.Errorf("the reload was not applied: rollup_retention %s", a.current().Store.Embedded.RollupRetention)
	}
}

// TestRetentionDur: spans print as a config writes them.
func TestRetentionDur(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Hour: "1h", 36 * time.Hour: "36h", 30 * 24 * time.Hour: "30d", 90 * time.Minute: "90m", 1500 * time.Millisecond: "1.5s",
	} {
		if got := retentionDur(d); got != want {
			t.Errorf("retentionDur(%s) = %s, want %s", d, got, want)
		}
	}
}
