package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// errorText is line l of a config error of file without its
// "FILE:LINE:COL: ", "FILE:LINE: " or "FILE: " prefix.
func errorText(file, l string) string {
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(file) + `(:\d+){0,2}: `)
	if m := re.FindString(l); m != "" {
		return strings.TrimPrefix(l, m)
	}
	return l
}

// wantErrorLines asserts that `vigil validate` exits 2 on body and prints
// exactly want, each "LINE: message" after the file name.
func wantErrorLines(t *testing.T, body string, want ...string) {
	t.Helper()
	p := writeConfig(t, body)
	out, code := runCLI(t, "validate", "-c", p)
	var exp []string
	for _, w := range want {
		exp = append(exp, p+":"+w)
	}
	if got := strings.TrimSpace(out); code != 2 || got != strings.Join(exp, "\n") {
		t.Errorf("validate: exit %d\n got: %s\nwant: %s", code, strings.ReplaceAll(got, p, "FILE"),
			strings.ReplaceAll(strings.Join(exp, "\n"), p, "FILE"))
	}
}

// TestConfigErrorsNameTheirLine: every error about a key says the line it
// is written on ("vigil.yaml:15: checks[0].rise: …"), whichever step finds
// it (decoding, unknown keys, validation, references, compiling), in
// every section, and validate lists them all in file order. In a large
// file several checks share their keys: the line tells them apart.
func TestConfigErrorsNameTheirLine(t *testing.T) {
	wantErrorLines(t, `agent:
  listen: 127.0.0.1:0
  concurrency: many
targets:
  - {name: web1, url: "http://127.0.0.1:9"}
  - name: web2
    url: "http://127.0.0.1:10"
defaults:
  interval: 5 minutes
checks:
  - name: a
    targets: [web1]
    interval: 10s
    rise: two
  - name: b
    targets: [web1, web3]
    interval: 10s
  - name: c
    targets: [web2]
    tier: deepest
    script:
      - http: {path: /login}
        extract: {tok: {json: "a.#("}}
      - http: {path: /x, timeout: 2s}
  - name: d
    targets: [web2]
    Interval: 20s
    interval: 10s
    http:
      headers: {X-A: 1, x-a: 2}
  - name: e
    targets: [web2]
    interval: 10s
    timeout: 10s
  - name: f
    targets: [web2]
    interval: 10s
    expect: {checksum: }
slos:
  - {name: s1, check: a, objective: "99.9%", window: 30d}
  - {name: s2, check: a, objective: 120%, window: 1d}
proxy:
  listen: 127.0.0.1:0
  pools:
    - name: p1
      origins:
        - {target: web1, weight: -1}
        - {target: web2, weight: 2}
      verdicts: {tiers: [shallow, bogus]}
alerting:
  quorum: x
status_page:
  enabled: maybe
store:
  embedded: {retention: 7}
`,
		`3: agent.concurrency: "many": want an integer`,
		`9: defaults.interval: "5 minutes": not a duration (write 5m)`,
		`14: checks[0].rise: "two": want an integer`,
		`16:21: checks[1].targets[1]: "web3": unknown target (define it under targets:)`,
		`20: checks[2].tier: "deepest": want shallow, deep or synthetic`,
		`23:25: checks[2].script[0].extract.tok.json: "a.#(": unclosed "(" at 3`,
		`24:26: checks[2].script[1].http.timeout: unknown key (timeout is a key of checks[2].script[1], not of checks[2].script[1].http: move it there)`,
		`27: checks[3].Interval: duplicates interval (keys match case-insensitively: keep one)`,
		`30:25: checks[3].http.headers.x-a: duplicates X-A (keys match case-insensitively: keep one)`,
		`34: checks[4].timeout: 10s ≥ interval 10s: timeout must be shorter than the interval`,
		`38:14: checks[5].expect.checksum: no value (omit the key, or give one)`,
		`41:26: slos[1].objective: "120%": want a percentage between 0% and 100%`,
		`47:26: proxy.pools[0].origins[0].weight: -1: want 1..1000`,
		`49:35: proxy.pools[0].verdicts.tiers[1]: "bogus": want shallow, deep or synthetic`,
		`51: alerting.quorum: "x": want an integer`,
		`53: status_page.enabled: "maybe": want true or false`,
		`55:14: store.embedded.retention: 7: a duration needs a unit, e.g. "7d"`)
}

// TestConfigErrorLineFromEnv: a value set by a VIGIL_* override has no line
// in the file (the file's own value, if any, is not the one at fault): the
// error names the variable instead, and comes before the file's errors.
func TestConfigErrorLineFromEnv(t *testing.T) {
	p := writeConfig(t, `agent:
  concurrency: 4
checks:
  - {name: a, url: "http://127.0.0.1:9/", rise: 1.5}
`)
	t.Setenv("VIGIL_AGENT_CONCURRENCY", "lots")
	out, code := runCLI(t, "validate", "-c", p)
	want := p + `: agent.concurrency (from VIGIL_AGENT_CONCURRENCY): "lots": want an integer` + "\n" +
		p + `:4:43: checks[0].rise: 1.5: want an integer`
	if got := strings.TrimSpace(out); code != 2 || got != want {
		t.Errorf("exit %d\n got: %s\nwant: %s", code, got, want)
	}
}

// TestConfigErrorLineThroughAnchors: a value a check takes from an anchor
// (`<<: *base`, `*list`) is placed where it is written, and the error
// says which merge key or alias brought it into the check.
func TestConfigErrorLineThroughAnchors(t *testing.T) {
	wantErrorLines(t, `targets:
  - {name: web1, url: "http://127.0.0.1:9"}
checks:
  - &base
    name: a
    targets: [web1]
    rise: 2.5
  - <<: *base
    name: b
  - name: c
    targets: &tl [web1, web7]
  - name: d
    targets: *tl
`,
		`7: checks[0].rise: 2.5: want an integer`,
		`7: checks[1].rise: 2.5: want an integer (merged by <<: *base at line 8)`,
		`11:25: checks[2].targets[1]: "web7": unknown target (define it under targets:)`,
		`11:25: checks[3].targets[1]: "web7": unknown target (define it under targets:) (via *tl at line 13)`)
}

// TestConfigErrorLineLargeFile: in a file of thousands of checks with the
// same keys, an error in one of them names its own line, and placing
// errors costs little.
func TestConfigErrorLineLargeFile(t *testing.T) {
	var b strings.Builder
	b.WriteString("targets: [{name: web1, url: \"http://127.0.0.1:9\"}]\nchecks:\n")
	line := 3
	var want []string
	for i := range 3000 {
		rise := "2"
		if i == 1234 || i == 2999 {
			rise = "2.5"
			want = append(want, fmt.Sprintf("%d: checks[%d].rise: 2.5: want an integer", line+3, i))
		}
		fmt.Fprintf(&b, "  - name: c%d\n    targets: [web1]\n    interval: 30s\n    rise: %s\n    http: {path: /}\n", i, rise)
		line += 5
	}
	start := time.Now()
	wantErrorLines(t, b.String(), want...)
	t.Logf("%d lines validated in %s", line-1, time.Since(start))
}

// TestFlowLineErrorsNameTheirColumn: several errors on one line of flow
// style (`{a: 1, b: x}`) are told apart by their column
// ("vigil.yaml:3:36: …"), in the order they are written; a key in block
// style, the first thing on its line, names its line only.
func TestFlowLineErrorsNameTheirColumn(t *testing.T) {
	wantErrorLines(t, `targets: [{name: w, url: "http://127.0.0.1:9"}]
checks:
  - {name: a, targets: [w], fall: 1.5, interval: x, rise: two}
  - name: b
    targets: [w]
    rise: 0.5
`,
		`3:29: checks[0].fall: 1.5: want an integer`,
		`3:40: checks[0].interval: "x": not a duration (use ms, s, m, h or d)`,
		`3:53: checks[0].rise: "two": want an integer`,
		`6: checks[1].rise: 0.5: want an integer`)
}
