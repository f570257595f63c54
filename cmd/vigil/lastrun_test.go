package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestCheckPageShowsLatestRun: with the canary in the process, the check
// page's "Latest run: assertions and steps" section lists the latest run
// of each target: every assertion with what the origin gave and what the
// config wants, and for a script every step (passed, failed with its
// cause, skipped). A secret from ${…} in a wanted value reads ***.
func TestCheckPageShowsLatestRun(t *testing.T) {
	const secret = "lastrunS3cr3t77"
	t.Setenv("LASTRUN_TOKEN", secret)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"status": "degraded", "token": "nope"})
	}))
	defer origin.Close()
	path := writeConfig(t, fmt.Sprintf(`
agent: {region: r1, data_dir: %q}
defaults: {interval: 1s, timeout: 900ms, rise: 1, fall: 1, jitter: "0%%"}
targets: [{name: o, url: %q}]
checks:
  - name: api
    targets: [o]
    http: {path: /api}
    expect: {status: 200, json: [{path: status, equals: "ok"}, {path: token, equals: "${LASTRUN_TOKEN}"}]}
  - name: flow
    targets: [o]
    script:
      - {name: fetch, http: {path: /api}, expect: {status: 200}}
      - {name: missing, http: {path: /missing}, expect: {status: 200}}
      - {name: after, http: {path: /api}}
`, t.TempDir(), origin.URL))
	a, stop := startApp(t, path, roles{canary: true, page: true})
	defer stop()
	base := "http://" + a.Addr()

	var body string
	waitFor(t, 15*time.Second, "the latest runs of api and flow on their check pages", func() bool {
		_, _, body = getHeader(t, base+"/check/api")
		_, _, flow := getHeader(t, base+"/check/flow")
		return strings.Contains(body, `data-run-target="o"`) && strings.Contains(flow, `data-run-target="o"`)
	})
	if !strings.Contains(body, `id="lastrun"`) || !strings.Contains(body, "Latest run: assertions and steps") {
		t.Fatalf("/check/api has no latest-run section:\n%s", body)
	}
	row := func(page, name string) string {
		m := regexp.MustCompile(`<tr data-assertion="` + regexp.QuoteMeta(name) + `"[^>]*>.*?</tr>`).FindString(page)
		if m == "" {
			t.Fatalf("no assertion row %q in:\n%s", name, page)
		}
		return m
	}
	cells := func(r string) []string {
		var out []string
		for _, m := range regexp.MustCompile(`<td[^>]*>(.*?)</td>`).FindAllStringSubmatch(r, -1) {
			out = append(out, m[1])
		}
		return out
	}
	if r := row(body, "status"); !strings.Contains(r, `data-assertion-ok="true"`) || !strings.Contains(cells(r)[2], "200") {
		t.Errorf("status assertion row: %s", r)
	}
	if r := row(body, "json status"); !strings.Contains(r, `data-assertion-ok="false"`) ||
		!strings.Contains(cells(r)[2], "degraded") || !strings.Contains(cells(r)[3], "ok") {
		t.Errorf("json status assertion row (want failed, got degraded, want ok): %s", r)
	}
	if r := row(body, "json token"); !strings.Contains(cells(r)[3], "***") {
		t.Errorf("json token assertion row: want column %q, want ***", cells(r)[3])
	}
	if strings.Contains(body, secret) {
		t.Errorf("/check/api shows the secret")
	}

	_, _, flow := getHeader(t, base+"/check/flow")
	steps := regexp.MustCompile(`<li data-step-ok="(\w+)" data-step-skipped="(\w+)"><span[^>]*>([^<]*)</span> (\w+)`).FindAllStringSubmatch(flow, -1)
	var got []string
	for _, s := range steps {
		got = append(got, s[4]+":"+s[1]+"/"+s[2]+"/"+strings.TrimSpace(s[3]))
	}
	want := "fetch:true/false/✓ ok missing:false/false/✕ status after:false/true/skipped"
	if strings.Join(got, " ") != want {
		t.Errorf("script steps on /check/flow: %q, want %q", strings.Join(got, " "), want)
	}
}
