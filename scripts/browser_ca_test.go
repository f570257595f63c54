package scripts

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestBrowserCAFile: with agent.browser.ca_file, browser steps trust a site
// behind a private CA, as http steps do with tls.ca_file; verification
// stays on (the same certificate under a host name it does not name still
// fails, and a browser without ca_file still rejects the CA).
func TestBrowserCAFile(t *testing.T) {
	chain := checktest.NewChain(t, time.Now().Add(30*24*time.Hour), time.Now().Add(60*24*time.Hour))
	srv := chain.Serve(t) // its leaf names 127.0.0.1 only
	b, err := startOwnBrowser(t, BrowserConfig{CAFile: checktest.PEMFile(t, chain.Root)})
	if err != nil {
		t.Fatalf("start with ca_file: %v", err)
	}
	run := func(b *Browser, url string) checks.Result {
		r := browserRunner(t, b, "", `[{name: open, browser: {navigate: /}}]`, 15*time.Second)
		return r.Run(context.Background(), checks.Target{Name: "intranet", URL: url})
	}
	if res := run(b, srv.URL); !res.OK {
		t.Errorf("private CA in ca_file: %s: %s", res.Cause, res.Err)
	}
	byName := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	res := run(b, byName)
	if want := `step 0 "open" (browser.navigate): navigate ` + byName + `/: net::ERR_CERT_COMMON_NAME_INVALID`; res.OK || res.Steps[0].Cause != checks.CauseCert || res.Err != want {
		t.Errorf("a host the certificate does not name: %s / step %s: %q, want cert: %q", res.Cause, res.Steps[0].Cause, res.Err, want)
	}
	res = run(needChromium(t), srv.URL)
	if want := `step 0 "open" (browser.navigate): navigate ` + srv.URL + `/: net::ERR_CERT_AUTHORITY_INVALID`; res.OK || res.Steps[0].Cause != checks.CauseCert || res.Err != want {
		t.Errorf("browser without ca_file: %s / step %s: %q, want cert: %q", res.Cause, res.Steps[0].Cause, res.Err, want)
	}
}

// TestBrowserCAFileErrors: a ca_file that cannot be read or holds no
// certificate is a config error naming the key and the file.
func TestBrowserCAFileErrors(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ file, err string }{
		{filepath.Join(dir, "missing.pem"), "ca_file: open " + filepath.Join(dir, "missing.pem") + ": no such file or directory"},
		{junk, "ca_file: " + junk + ": no PEM certificate in it"},
	} {
		c := BrowserConfig{CAFile: tc.file}
		if err := c.ValidateAndSetDefaults(); err == nil || err.Error() != tc.err {
			t.Errorf("%s: error %v, want %s", tc.file, err, tc.err)
		}
		// The agent's browser does not start without its CAs.
		b := NewBrowser(BrowserConfig{CAFile: tc.file})
		if err := b.Start(context.Background()); !errors.Is(err, ErrBrowserUnavailable) || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("start with %s: %v, want browser unavailable: %s", tc.file, err, tc.err)
		}
		b.Close()
	}
}
