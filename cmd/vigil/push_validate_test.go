package main

import (
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// vigil validate accepts the push example and names the key of every push
// mistake; vigil check refuses to run a push check, which only a running
// agent judges.
func TestValidatePush(t *testing.T) {
	t.Setenv("VIGIL_ADMIN_TOKEN", "example-token-0123456789")
	if out, code := runCLI(t, "validate", "-c", "../../examples/push.yaml"); code != 0 || strings.TrimSpace(out) != "ok" {
		t.Fatalf("validate examples/push.yaml: exit %d: %s", code, out)
	}
	wantValidate(t, `
targets: [{name: o1, url: "http://127.0.0.1:1"}]
checks:
  - {name: a, push: {period: 1h, token: push-token-0123456789}, targets: [o1], timeout: 5s, expect: {status: 200}}
  - {name: b, push: {grace: 5m, token: push-token-0123456789}}
  - {name: c, push: {period: 1h, perod: 2h, token: push-token-0123456789}}
  - {name: d, push: {period: 1h}}
  - {name: e, push: {period: 1h, token: push-token-0123456789}, http: {path: /}, interval: 2h}
`,
		`checks[0].targets: a push check does not use it: its job pings the agent (POST /api/v1/push/<check>); its verdicts have one target named after the check`,
		`checks[0].timeout: a push check does not use it: judging a push check sends nothing, so nothing can time out`,
		`checks[0].expect: a push check does not use it: the pings are judged by push.period and push.grace, and status=fail`,
		`checks[1].push.period: required: the longest expected gap between two pings of the job (e.g. 24h for a daily job)`,
		`checks[2].push.perod: unknown key (did you mean period?)`,
		`checks[3].push.token: required: pings must be authenticated; set push.token (e.g. ${BACKUP_PUSH_TOKEN}) or agent.admin_token`,
		`checks[4].http: a push check does not use it: a check is either a push check or a probe; split it in two checks`,
		`checks[4].interval: 2h > push.period 1h: the deadline would be judged less often than the job pings (omit interval for period ÷ 10, 1s to 1m)`)
}

func TestCheckRefusesPush(t *testing.T) {
	p := writeConfig(t, `
agent: {admin_token: push-token-0123456789}
checks:
  - {name: backup, push: {period: 24h}}
`)
	out, code := runCLI(t, "check", "-c", p, "backup")
	if code != 2 || !strings.Contains(out, `check "backup": a push check is judged by a running agent`) {
		t.Fatalf("vigil check backup: exit %d: %s", code, out)
	}
	out, code = runCLI(t, "check", "-c", p)
	if code != 2 || !strings.Contains(out, "it has only push checks") {
		t.Fatalf("vigil check: exit %d: %s", code, out)
	}
	// Beside other checks, those run and the push checks are named as not run.
	o := checktest.NewOrigin()
	defer o.Close()
	p = writeConfig(t, `
agent: {admin_token: push-token-0123456789}
checks:
  - {name: backup, push: {period: 24h}}
  - {name: web, url: "`+o.URL()+`/healthz"}
`)
	out, code = runCLI(t, "check", "-c", p)
	if code != 0 || !strings.Contains(out, "not run: push checks backup (a running agent judges them from their jobs' pings)") ||
		!strings.Contains(out, "web") || strings.Contains(out, "internal") {
		t.Fatalf("vigil check of a push and an http check: exit %d: %s", code, out)
	}
}

// A short push.token is warned about as a short admin token is.
func TestValidatePushTokenWarnings(t *testing.T) {
	p := writeConfig(t, `
checks:
  - {name: backup, push: {period: 24h, token: short-tok}}
`)
	out, code := runCLI(t, "validate", "-c", p)
	if code != 0 || !strings.Contains(out, "checks[0].push.token: shorter than 16 characters") {
		t.Fatalf("validate: exit %d: %s", code, out)
	}
}

// With alerting.quorum above 1, vigil validate warns that regions a push
// check's pings never reach would page (no push.region). A push check
// with push.region is not warned about: vigil's alerter and the rules
// vigil generates for Prometheus and Grafana need its one region alone.
func TestValidatePushQuorumWarnings(t *testing.T) {
	p := writeConfig(t, `
agent: {admin_token: push-token-0123456789}
alerting: {quorum: 2, receivers: [{name: ops, webhook: {url: "http://127.0.0.1:9/hook"}}]}
checks:
  - {name: backup, push: {period: 24h, region: eu}}
  - {name: report, push: {period: 1h}}
`)
	out, code := runCLI(t, "validate", "-c", p)
	want := `checks[1].push: no push.region, and alerting.quorum is 2: every region that loads this file judges the push check`
	if code != 0 || !strings.Contains(out, want) {
		t.Errorf("validate: exit %d, want the warning %q:\n%s", code, want, out)
	}
	if strings.Contains(out, "checks[0]") {
		t.Errorf("validate warns about backup, a push check with push.region:\n%s", out)
	}
}
