package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestVersionCommand: `vigil version` prints "vigil " and the version the
// binary was built with (make build sets it with -X main.version=…) on
// stdout, nothing on stderr, and exits 0.
func TestVersionCommand(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "vigil")
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		goBin = "go"
	}
	const v = "v9.8.7-test+abc"
	build := exec.Command(goBin, "build", "-ldflags", "-X main.version="+v, "-o", bin, ".")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	cmd := exec.Command(bin, "version")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("vigil version: %v (stderr %q)", err, stderr.String())
	}
	if got, want := stdout.String(), "vigil "+v+"\n"; got != want {
		t.Errorf("vigil version printed %q, want %q", got, want)
	}
	if stderr.Len() != 0 {
		t.Errorf("vigil version wrote to stderr: %q", stderr.String())
	}

	// Without -X (go build, go run) it says dev; --version and -v say the
	// same.
	for _, arg := range []string{"version", "--version", "-v"} {
		out, code := runCLI(t, arg)
		if code != 0 || out != "vigil dev\n" {
			t.Errorf("in-process vigil %s: exit %d, %q; want 0, %q", arg, code, out, "vigil dev\n")
		}
	}
}

// TestBadLogFormatIsUsageError: --log-format other than text or json stops
// every long-running role with exit 2 naming the flag.
func TestBadLogFormatIsUsageError(t *testing.T) {
	path := writeConfig(t, healthzConfig(t.TempDir(), "http://127.0.0.1:9"))
	for _, role := range []string{"run", "canary", "proxy", "alerter"} {
		out, code := runCLI(t, role, "-c", path, "--log-format", "xml")
		if code != 2 || !strings.Contains(out, `--log-format: "xml": want text or json`) {
			t.Errorf("vigil %s --log-format xml: exit %d, %q; want 2 naming --log-format", role, code, out)
		}
	}
}

// startLogged starts the built binary with args, its stdout and stderr
// kept apart, and stops it with SIGTERM when the test ends.
type loggedProc struct {
	cmd            *exec.Cmd
	stdout, stderr checktest.SyncBuffer
	done           chan struct{}
}

func startLogged(t *testing.T, bin string, args ...string) *loggedProc {
	t.Helper()
	p := &loggedProc{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
			return
		default:
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// stop sends SIGTERM and returns the exit code (failing the test when the
// process is still running after 30s).
func (p *loggedProc) stop(t *testing.T) int {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(30 * time.Second):
		t.Fatalf("vigil still running 30s after SIGTERM\nstderr:\n%s", p.stderr.String())
		return -1
	}
}

// alive fails the test when the process has exited.
func (p *loggedProc) alive(t *testing.T) {
	t.Helper()
	select {
	case <-p.done:
		t.Fatalf("vigil exited (%v)\nstdout:\n%s\nstderr:\n%s", p.cmd.ProcessState, p.stdout.String(), p.stderr.String())
	default:
	}
}

// TestLogFormat runs the binary as a user does and reads its log: with
// --log-format json every line (stdout and stderr) is a JSON object with
// time, level and msg; by default (text) every line is slog's text form
// time=… level=… msg=….
func TestLogFormat(t *testing.T) {
	bin := buildVigil(t, t.TempDir())
	o := checktest.NewOrigin()
	defer o.Close()

	textLine := regexp.MustCompile(`^time=\S+ level=(DEBUG|INFO|WARN|ERROR) msg=`)
	for _, c := range []struct {
		name string
		args []string // after the role and -c FILE
		json bool
	}{
		{"json", []string{"--log-format", "json", "--log-level", "debug"}, true},
		{"text default", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			port := freePorts(t, 2)
			// vigil run with a proxy section: the canary, the proxy, the
			// alerter and the store all log.
			path := writeConfig(t, fmt.Sprintf(`
agent: {listen: "127.0.0.1:%d", region: r1, data_dir: %q}
defaults: {interval: 1s, timeout: 500ms}
targets: [{name: o, url: %q}]
checks:
  - {name: up, targets: [o], http: {path: /healthz}}
  - {name: broken, targets: [o], http: {path: /healthz}, expect: {status: 418}}
alerting:
  evaluation_interval: 1s
proxy:
  listen: "127.0.0.1:%d"
  pools: [{name: web, hosts: ["*"], origins: [{target: o}]}]
`, port, filepath.Join(dir, "data"), o.URL(), port+1))
			p := startLogged(t, bin, append([]string{"run", "-c", path}, c.args...)...)
			waitFor(t, 60*time.Second, "vigil started and both checks ran", func() bool {
				p.alive(t)
				return strings.Contains(p.stderr.String(), "vigil started") && o.Count("GET", "/healthz") >= 4
			})
			if code := p.stop(t); code != 0 {
				t.Fatalf("exit %d after SIGTERM, want 0\nstderr:\n%s", code, p.stderr.String())
			}
			logs := p.stdout.String() + p.stderr.String()
			lines := strings.Split(strings.TrimRight(logs, "\n"), "\n")
			if len(lines) < 2 {
				t.Fatalf("%d log lines, want at least vigil started and vigil stopped:\n%s", len(lines), logs)
			}
			var msgs []string
			for i, l := range lines {
				if !c.json {
					if !textLine.MatchString(l) {
						t.Errorf("line %d is not a text log line (time=… level=… msg=…): %q", i+1, l)
					}
					if strings.HasPrefix(l, "{") {
						t.Errorf("line %d is JSON without --log-format json: %q", i+1, l)
					}
					continue
				}
				var m map[string]any
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					t.Errorf("line %d is not JSON (%v): %q", i+1, err, l)
					continue
				}
				level, _ := m["level"].(string)
				msg, _ := m["msg"].(string)
				ts, _ := m["time"].(string)
				if msg == "" || ts == "" {
					t.Errorf("line %d lacks msg or time: %q", i+1, l)
				}
				switch level {
				case "DEBUG", "INFO", "WARN", "ERROR":
				default:
					t.Errorf("line %d: level %q, want DEBUG, INFO, WARN or ERROR: %q", i+1, level, l)
				}
				msgs = append(msgs, msg)
			}
			if c.json {
				for _, want := range []string{"vigil started", "vigil stopped", "shutting down: waiting for runs, proxied requests and deliveries in flight (a second signal ends it now)"} {
					if !contains(msgs, want) {
						t.Errorf("no JSON line with msg %q among %q", want, msgs)
					}
				}
			} else if !strings.Contains(logs, `msg="vigil started"`) || !strings.Contains(logs, `msg="vigil stopped"`) {
				t.Errorf("text log lacks vigil started / vigil stopped:\n%s", logs)
			}
			t.Logf("%d log lines, e.g. %s", len(lines), lines[0])
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
