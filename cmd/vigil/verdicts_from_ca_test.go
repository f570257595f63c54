package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/tlsclient/tlstest"
)

// TestVerdictsFromCA: `vigil proxy --verdicts-from https://…` reading a
// canary whose certificate a private CA signed fails with the
// unknown-authority error against the system pool (/healthz shows it),
// and reads the canary's verdicts with --verdicts-from-ca naming that CA.
func TestVerdictsFromCA(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	ca := tlstest.New(t)
	canary := ca.Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		_ = json.NewEncoder(w).Encode([]reporting.Verdict{{Check: "healthz", Target: "a", Region: "eu-west", Vantage: "v1",
			State: reporting.StateHealthy, OK: true, At: now, Expires: now.Add(time.Minute)}})
	}), false)
	path := writeConfig(t, fmt.Sprintf(`
agent: {listen: 127.0.0.1:0, data_dir: %q}
targets: [{name: a, url: %s}]
proxy:
  listen: 127.0.0.1:0
  verdict_poll: 50ms
  pools: [{name: web, origins: [{target: a}], verdicts: {checks: [healthz]}}]
`, t.TempDir(), o.URL()))

	// healthz runs vigil proxy in-process until /healthz answers done(code,
	// body), at most 10s, and returns the last answer.
	healthz := func(t *testing.T, done func(int, string) bool, extra ...string) (int, string) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		ctx, cancel := context.WithCancel(context.Background())
		cmd := newRootCmd()
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		cmd.SetArgs(append([]string{"proxy", "-c", path, "--listen", addr, "--log-level", "error", "--verdicts-from", canary.URL}, extra...))
		exited := make(chan error, 1)
		go func() { exited <- cmd.ExecuteContext(ctx) }()
		defer func() {
			cancel()
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				t.Error("vigil proxy did not stop within 10s")
			}
		}()
		var code int
		var body string
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case err := <-exited:
				t.Fatalf("vigil proxy exited: %v", err)
			default:
			}
			if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				code, body = resp.StatusCode, string(b)
				if done(code, body) {
					break
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		return code, body
	}

	t.Run("system pool", func(t *testing.T) {
		_, body := healthz(t, func(_ int, b string) bool { return strings.Contains(b, "certificate") })
		if !strings.Contains(body, "certificate signed by unknown authority") {
			t.Fatalf("/healthz without --verdicts-from-ca: %q, want the unknown-authority error", body)
		}
	})
	t.Run("verdicts-from-ca", func(t *testing.T) {
		var reads int
		code, body := healthz(t, func(c int, b string) bool {
			reads++
			return c == http.StatusOK && reads > 10 // a few polls at 50ms: the source was read
		}, "--verdicts-from-ca", ca.CAFile)
		if code != http.StatusOK || strings.Contains(body, "certificate") || strings.Contains(body, "failing") {
			t.Fatalf("/healthz with --verdicts-from-ca: %d %q, want 200 with no failing source", code, body)
		}
	})
	t.Run("bad file", func(t *testing.T) {
		out, code := runCLI(t, "proxy", "-c", path, "--verdicts-from", canary.URL, "--verdicts-from-ca", path)
		if code != 2 || !strings.Contains(out, "--verdicts-from-ca: "+path+": no PEM certificate found") {
			t.Fatalf("exit %d, output %q", code, out)
		}
		out, code = runCLI(t, "proxy", "-c", path, "--verdicts-from-ca", ca.CAFile)
		if code != 2 || !strings.Contains(out, "--verdicts-from-ca: only with --verdicts-from") {
			t.Fatalf("exit %d, output %q", code, out)
		}
	})
}
