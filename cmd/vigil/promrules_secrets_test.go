package main

import (
	"strings"
	"testing"
)

// TestPrometheusRulesWithoutReceiverSecrets: vigil alerter
// --prometheus-rules prints the rules although the receivers' ${NAME}
// secrets are not set (the rules hold none: a CI job need not be given the
// PagerDuty key); vigil validate still wants them, and every other error,
// an unset variable elsewhere included, still fails the rules.
func TestPrometheusRulesWithoutReceiverSecrets(t *testing.T) {
	const base = `
targets: [{name: a, url: "http://127.0.0.1:1"}]
checks:
  - {name: asset, targets: [a], http: {path: /}}
slos:
  - {name: asset-availability, check: asset, objective: 99.9%}
alerting:
  quorum: 1
  status_page_url: %s
  receivers:
    - {name: ops, webhook: {url: "http://127.0.0.1:9999/hook/${VIGIL_TEST_UNSET_HOOK_PATH}", headers: {authorization: "Bearer ${VIGIL_TEST_UNSET_HOOK_TOKEN}"}}}
    - {name: chat, slack: {url: "${VIGIL_TEST_UNSET_SLACK_URL}"}}
    - {name: pd, severities: [%s], pagerduty: {routing_key: "${VIGIL_TEST_UNSET_PD_KEY}"}}
`
	cfg := func(statusPage, severity string) string {
		return strings.Replace(strings.Replace(base, "%s", statusPage, 1), "%s", severity, 1)
	}
	path := writeConfig(t, cfg("http://127.0.0.1:9470", "page"))
	out, code := runCLI(t, "alerter", "-c", path, "--prometheus-rules")
	if code != 0 || !strings.Contains(out, "alert: VigilErrorBudgetBurn") {
		t.Fatalf("--prometheus-rules with the receiver secrets unset: exit %d\n%s", code, out)
	}
	if strings.Contains(out, "unset.invalid") {
		t.Fatalf("the rules show the placeholder:\n%s", out)
	}
	out, code = runCLI(t, "validate", "-c", path)
	if code != 2 || !strings.Contains(out, "alerting.receivers[2].pagerduty.routing_key: ${VIGIL_TEST_UNSET_PD_KEY} is not set in the environment") {
		t.Fatalf("validate with the receiver secrets unset: exit %d, want 2 naming the routing key\n%s", code, out)
	}

	for _, tc := range []struct{ name, file, want string }{
		{"unset outside receivers", cfg("${VIGIL_TEST_UNSET_STATUS_URL}", "page"),
			"alerting.status_page_url: ${VIGIL_TEST_UNSET_STATUS_URL} is not set in the environment"},
		{"other receiver error", cfg("http://127.0.0.1:9470", "pager"),
			`alerting.receivers[2].severities[0]: "pager": unknown severity`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, code := runCLI(t, "alerter", "-c", writeConfig(t, tc.file), "--prometheus-rules")
			if code != 2 || !strings.Contains(out, tc.want) || strings.Contains(out, "groups:") {
				t.Fatalf("exit %d, want 2 with %q and no rules\n%s", code, tc.want, out)
			}
		})
	}
}
