package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestCheckWithoutSecretsItDoesNotUse: vigil check runs the checks of a
// file whose agent.admin_token, receiver secrets and proxy keys read
// ${NAME} variables that are not set (a CI gate is not given them), while
// a ${NAME} a check reads, also one shared with a key check does not use,
// still fails with the loader's error naming the key.
func TestCheckWithoutSecretsItDoesNotUse(t *testing.T) {
	origin := checktest.NewOrigin()
	defer origin.Close()
	const base = `
agent:
  admin_token: ${VIGIL_TEST_UNSET_ADMIN}
targets: [{name: a, url: %s}]
checks:
  - {name: asset, targets: [a], http: {path: /asset.bin, headers: {X-Api-Key: "%s"}}}
alerting:
  quorum: 1
  receivers:
    - {name: pd, pagerduty: {routing_key: "${VIGIL_TEST_UNSET_PD_KEY}"}}
    - {name: ops, webhook: {url: "http://127.0.0.1:9/hook", headers: {authorization: "Bearer ${VIGIL_TEST_UNSET_HOOK}"}}}
proxy:
  admin_token: ${VIGIL_TEST_UNSET_PROXY_ADMIN}
  pools:
    - name: web
      origins: [{url: "http://127.0.0.1:9"}]
`
	path := writeConfig(t, fmt.Sprintf(base, origin.URL(), "literal-api-key-1234"))
	out, code := runCLI(t, "check", "-c", path)
	if code != 0 {
		t.Fatalf("vigil check with secrets it does not use unset: exit %d, want 0\n%s", code, out)
	}
	if strings.Contains(out, "not set in the environment") || strings.Contains(out, "unset.invalid") {
		t.Fatalf("vigil check mentions the unused variables or the placeholder:\n%s", out)
	}

	// A variable a check reads fails as before, and so does one a check
	// shares with a key check does not use.
	for _, tc := range []struct{ name, header, want string }{
		{"own", "${VIGIL_TEST_UNSET_CHECK_KEY}", "checks[0].http.headers.X-Api-Key: ${VIGIL_TEST_UNSET_CHECK_KEY} is not set in the environment"},
		{"shared", "${VIGIL_TEST_UNSET_ADMIN}", "checks[0].http.headers.X-Api-Key: ${VIGIL_TEST_UNSET_ADMIN} is not set in the environment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, code := runCLI(t, "check", "-c", writeConfig(t, fmt.Sprintf(base, origin.URL(), tc.header)))
			if code != 2 || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d, want 2 with %q\n%s", code, tc.want, out)
			}
		})
	}
}
