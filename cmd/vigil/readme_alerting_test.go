package main

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeAlertingExampleValidates: the YAML under the README's
// "Alerting" heading, copied to a file as it stands, passes vigil validate
// with its ${NAME} secrets set, and vigil alerter --prometheus-rules
// prints its rules (its SLOs named a check the block did not define).
func TestReadmeAlertingExampleValidates(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## Alerting (`slos`, `alerting`)\n")
	if !ok {
		t.Fatal("README has no Alerting section")
	}
	_, block, ok := strings.Cut(sec, "```yaml\n")
	block, _, ok2 := strings.Cut(block, "```\n")
	if !ok || !ok2 {
		t.Fatal("the README's Alerting section has no yaml block")
	}
	t.Setenv("HOOK_TOKEN", "hook-token")
	t.Setenv("SLACK_WEBHOOK_URL", "https://hooks.slack.com/services/T/B/X")
	t.Setenv("PD_KEY", "pd-key")
	path := writeConfig(t, block)
	if out, code := runCLI(t, "validate", "-c", path); code != 0 {
		t.Fatalf("vigil validate of the README's Alerting example: exit %d\n%s\n%s", code, out, block)
	}
	out, code := runCLI(t, "alerter", "-c", path, "--prometheus-rules")
	if code != 0 || !strings.Contains(out, `slo: 'asset-availability'`) {
		t.Fatalf("--prometheus-rules of the README's Alerting example: exit %d\n%s", code, out)
	}
}
