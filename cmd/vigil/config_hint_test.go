package main

import "testing"

// TestUnknownKeyListsSmallMapping: an unknown key that is no typo of a
// known one (a key from another tool, a made-up section) lists the keys
// its mapping takes when they are few, so the user need not open the
// README: retry takes tries, not attempts.
func TestUnknownKeyListsSmallMapping(t *testing.T) {
	wantErrorLines(t, `x-common: &c {interval: 10s}
targets: [{name: w, url: "http://127.0.0.1:9"}]
checks:
  - {name: a, targets: [w], bogus: 1}
slos:
  - {name: s, check: a, objective: 99%, window: 1d, burn: 2}
proxy:
  pools:
    - name: p
      origins: [{target: w}]
      retry: {attempts: 3}
status_page: {groups: []}
`,
		"1: x-common: unknown key ("+scratchKeyHint+")",
		`4:29: checks[0].bogus: unknown key`,
		`6:53: slos[0].burn: unknown key (slos elements take check, name, objective, target, ttfb_p95, window)`,
		`11:15: proxy.pools[0].retry.attempts: unknown key (retry takes budget, max_buffered_body, on_ejection, retry_budget, tries, try_timeout)`,
		`12:15: status_page.groups: unknown key (status_page takes artifacts, enabled, public, refresh, title)`)
}

// TestUnknownKeyOneLevelTooDeep: a key written one level below the mapping
// that takes it (nginx's per-location client_max_body_size as max_body in a
// pool, a check's interval inside http:) says where it belongs.
func TestUnknownKeyOneLevelTooDeep(t *testing.T) {
	wantErrorLines(t, `targets: [{name: w, url: "http://127.0.0.1:9"}]
checks:
  - name: a
    targets: [w]
    http: {interval: 5s}
proxy:
  pools:
    - name: p
      max_body: 1MiB
      origins: [{target: w}]
`,
		`5:12: checks[0].http.interval: unknown key (interval is a key of checks[0], not of checks[0].http: move it there)`,
		`9: proxy.pools[0].max_body: unknown key (max_body is a key of proxy, not of proxy.pools[0]: move it there)`)
}

// TestValidateHintsForNewcomers: vigil validate gives the hints a newcomer
// needs: a key written one level too high (path dedented out of http:,
// expect at the top level), a duration in words, a misspelt check or
// target name (a typo away; another number is another name), Alertmanager
// routing keys under alerting.
func TestValidateHintsForNewcomers(t *testing.T) {
	wantErrorLines(t, `targets: [{name: web, url: "http://127.0.0.1:9"}, {name: web1, url: "http://127.0.0.1:10"}]
expect: {status: 200}
checks:
  - name: home
    targets: [wbe, web7]
    path: /x
    interval: 5 minutes
    http: {}
slos:
  - {name: s, check: homee, objective: "99%"}
alerting:
  route: {receiver: x}
`,
		`2: expect: unknown key (expect is a key of checks[…], not of the top level: indent it under checks:)`,
		`5:15: checks[0].targets[0]: "wbe": unknown target (did you mean "web"? or define it under targets:)`,
		`5:20: checks[0].targets[1]: "web7": unknown target (define it under targets:)`,
		`6: checks[0].path: unknown key (path is a key of checks[0].http, not of checks[0]: indent it under http:)`,
		`7: checks[0].interval: "5 minutes": not a duration (write 5m)`,
		`10:15: slos[0].check: "homee": no check with that name (did you mean "home"?)`,
		"12: alerting.route: unknown key ("+alertmanagerKeys["route"]+")")
}
