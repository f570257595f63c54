package main

import "testing"

// TestDuplicateNameNamesTheFirst: a name given twice (a check, a target,
// an SLO, a pool, a receiver) says which element has it first and on which
// line: in a large file "duplicate name" alone leaves the other one to be
// searched for.
func TestDuplicateNameNamesTheFirst(t *testing.T) {
	wantErrorLines(t, `targets:
  - {name: w, url: "http://127.0.0.1:9"}
  - {name: w, url: "http://127.0.0.1:10"}
checks:
  - {name: a, targets: [w]}
  - {name: 1.10, targets: [w]}
  - {name: a, targets: [w]}
  - {name: "1.10", targets: [w]}
slos:
  - {name: s, check: a, objective: 99%, window: 1d}
  - {name: s, check: a, objective: 99%, window: 1d}
alerting:
  receivers:
    - {name: ops, webhook: {url: "http://127.0.0.1:9/"}}
    - {name: ops, webhook: {url: "http://127.0.0.1:9/"}}
proxy:
  pools:
    - {name: p, hosts: [a.example], origins: [{target: w}]}
    - {name: p, hosts: [b.example], origins: [{target: w}]}
`,
		`3:6: targets[1].name: "w": duplicate name (first given at targets[0], line 2)`,
		`7:6: checks[2].name: "a": duplicate name (first given at checks[0], line 5)`,
		`8:6: checks[3].name: "1.10": duplicate name (first given at checks[1], line 6)`,
		`11:6: slos[1].name: "s": duplicate name (first given at slos[0], line 10)`,
		`15:8: alerting.receivers[1].name: "ops": duplicate name (first given at alerting.receivers[0], line 14)`,
		`19:8: proxy.pools[1].name: "p": duplicate pool name (first given at proxy.pools[0], line 18)`)
}

// TestProxyValidatedBesideDecodeError: one value of the proxy section that
// does not decode (a fractional weight) no longer hides every other error
// of the section; errors about the origin holding it are still left out.
func TestProxyValidatedBesideDecodeError(t *testing.T) {
	wantErrorLines(t, `targets:
  - {name: web1, url: "http://127.0.0.1:9"}
  - {name: web2, url: "http://127.0.0.1:10"}
checks: [{name: a, targets: [web1]}]
proxy:
  listen: 127.0.0.1:0
  pools:
    - name: p1
      origins:
        - {target: web1, weight: -1}
        - {target: web2, weight: 1.5}
      verdicts: {tiers: [shallow, bogus]}
`,
		`10:26: proxy.pools[0].origins[0].weight: -1: want 1..1000`,
		`11:26: proxy.pools[0].origins[1].weight: 1.5: want an integer`,
		`12:35: proxy.pools[0].verdicts.tiers[1]: "bogus": want shallow, deep or synthetic`)
}

// TestCheckReferencesJudgedBesideDecodeError: a check with a value that
// does not decode still defines its name, so a reference to a check that
// does not exist is reported in the same run; one whose name did not
// decode hides the references (they could only follow from it).
func TestCheckReferencesJudgedBesideDecodeError(t *testing.T) {
	wantErrorLines(t, `targets: [{name: w, url: "http://127.0.0.1:9"}]
checks:
  - {name: a, targets: [w], rise: two}
slos:
  - {name: s1, check: a, objective: 99%, window: 1d}
  - {name: s2, check: nosuch, objective: 99%, window: 1d}
alerting:
  maintenance: [{name: m, cron: "0 3 * * *", duration: 1h, checks: [a, nosuch2]}]
`,
		`3:29: checks[0].rise: "two": want an integer`,
		`6:16: slos[1].check: "nosuch": no check with that name`,
		`8:72: alerting.maintenance[0].checks[1]: unknown check "nosuch2"`)
	wantErrorLines(t, `targets: [{name: w, url: "http://127.0.0.1:9"}]
checks:
  - {name: [a], targets: [w]}
slos:
  - {name: s1, check: a, objective: 99%, window: 1d}
`,
		`3:6: checks[0].name: want a string, got a list`)
}

// TestUnknownOriginTargetOneError: an origin naming an unknown target gets
// that error only, not also "url is required" (it has none because its
// target is unknown).
func TestUnknownOriginTargetOneError(t *testing.T) {
	wantErrorLines(t, `targets: [{name: w, url: "http://127.0.0.1:9"}]
checks: [{name: a, targets: [w]}]
proxy:
  pools:
    - name: p
      origins:
        - {target: w}
        - {target: w9}
`,
		`8:12: proxy.pools[0].origins[1].target: "w9": unknown target`)
}

// TestShortUnknownKeyHint: a key of 3 characters or fewer is offered a key
// one edit away only: "lb" is not a typo of "tls".
func TestShortUnknownKeyHint(t *testing.T) {
	wantErrorLines(t, `targets: [{name: w, url: "http://127.0.0.1:9"}]
checks:
  - {name: a, targets: [w], tmeout: 2s, expect: {gtt: 1}}
proxy:
  pools:
    - {name: p, lb: x, origins: [{target: w}]}
`,
		`3:29: checks[0].tmeout: unknown key (did you mean timeout?)`,
		`3:50: checks[0].expect.gtt: unknown key`,
		`6:17: proxy.pools[0].lb: unknown key`)
}

// TestMapEntryDecodeErrorScope: a map entry that does not decode (a
// webhook header given a list) leaves out the errors of its list element
// as any other value does, not only those under the entry: the receiver
// is not also told it "needs exactly one of webhook, slack, …".
func TestMapEntryDecodeErrorScope(t *testing.T) {
	wantErrorLines(t, `targets: [{name: w, url: "http://127.0.0.1:9"}]
checks: [{name: a, targets: [w]}]
alerting:
  receivers:
    - name: ops
      webhook:
        url: "http://127.0.0.1:9/"
        headers:
          X-Key: [1, 2]
    - {name: ops2}
`,
		`9: alerting.receivers[0].webhook.headers[X-Key]: want a string, got a list`,
		`10: alerting.receivers[1]: needs exactly one of webhook, slack, pagerduty, alertmanager`)
}
