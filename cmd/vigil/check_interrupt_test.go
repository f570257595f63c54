package main

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// SIGINT during vigil check cancels the runs in flight at once, prints
// them as INTERRUPTED (not as failures with cause internal) and exits 130;
// runs that had finished keep their result.
func TestCheckInterrupted(t *testing.T) {
	bin := buildVigil(t, t.TempDir())
	started := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			select {
			case started <- struct{}{}:
			default:
			}
			select {
			case <-r.Context().Done():
			case <-time.After(20 * time.Second):
			}
			return
		}
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()
	cfg := writeConfig(t, fmt.Sprintf(`
targets: [{name: a, url: %q}]
checks:
  - {name: fast, targets: [a], http: {path: /fast}}
  - {name: slow, targets: [a], interval: 30s, timeout: 20s, http: {path: /slow}}
`, srv.URL))
	for _, format := range []string{"table", "json"} {
		t.Run(format, func(t *testing.T) {
			args := []string{"check", "-c", cfg}
			if format == "json" {
				args = append(args, "--json")
			}
			cmd := exec.Command(bin, args...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			select {
			case <-started:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				t.Fatal("the slow run never reached the origin")
			}
			time.Sleep(200 * time.Millisecond) // let the fast run finish
			sent := time.Now()
			cmd.Process.Signal(syscall.SIGINT)
			err := cmd.Wait()
			took := time.Since(sent)
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 130 {
				t.Errorf("exit: %v, want status 130\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
			}
			if took > 3*time.Second {
				t.Errorf("exited %s after SIGINT, want within 3s", took)
			}
			out := stdout.String()
			if format == "table" {
				if !regexpMatch(`(?m)^slow\s+a\s+INTERRUPTED\s+-\s+.*interrupted: the run was cancelled by a signal before it ended$`, out) ||
					!regexpMatch(`(?m)^fast\s+a\s+pass\s`, out) ||
					!strings.Contains(out, "2 runs (2 checks × 1 target), 1 passed, 0 failed, 1 interrupted") {
					t.Errorf("table:\n%s", out)
				}
			} else if !strings.Contains(out, `"check":"slow","target":"a","tier":"deep","ok":false,"result":"interrupted","interrupted":true,"cause":"","error":"interrupted: the run was cancelled by a signal before it ended"`) ||
				!strings.Contains(out, `"check":"fast","target":"a","tier":"deep","ok":true,"result":"pass","cause":""`) {
				t.Errorf("json:\n%s", out)
			}
			if !strings.Contains(stderr.String(), "interrupted: 1 of 2 runs did not finish") {
				t.Errorf("stderr: %s", stderr.String())
			}
		})
	}
}

func regexpMatch(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }
