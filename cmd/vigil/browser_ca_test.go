package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestBrowserCAFileKey: agent.browser.ca_file reaches the browser: a
// browser check of a site behind a private CA passes with the CA in the
// key and fails with cause cert without it (was: an unknown key).
func TestBrowserCAFileKey(t *testing.T) {
	_, err := findChromium()
	checktest.NeedDependency(t, "chromium", err)
	chain := checktest.NewChain(t, time.Now().Add(30*24*time.Hour), time.Now().Add(60*24*time.Hour))
	srv := chain.Serve(t)
	ca := checktest.PEMFile(t, chain.Root)
	config := func(browser string) string {
		return writeConfig(t, fmt.Sprintf(`
agent: {data_dir: %q%s}
targets: [{name: intranet, url: %s}]
checks:
  - name: page
    targets: [intranet]
    timeout: 20s
    interval: 30s
    script:
      - browser: {navigate: /}
`, t.TempDir(), browser, srv.URL))
	}
	if out, code := runCLI(t, "check", "-c", config(fmt.Sprintf(", browser: {ca_file: %q}", ca))); code != 0 {
		t.Fatalf("with agent.browser.ca_file: exit %d\n%s", code, out)
	}
	out, code := runCLI(t, "check", "-c", config(""))
	if code != 1 || !strings.Contains(out, "ERR_CERT_AUTHORITY_INVALID") {
		t.Fatalf("without it: exit %d, want 1 and ERR_CERT_AUTHORITY_INVALID\n%s", code, out)
	}
}
