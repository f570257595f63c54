package main

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

type stringer string

func (s stringer) String() string { return string(s) }

func redactorOf(secrets ...string) *redactor {
	r := &redactor{}
	for _, s := range secrets {
		r.add("KEY", s)
	}
	return r
}

// TestRedactHandler: once a redactor is set, a secret shows as *** in a
// log line's message and in string, error and Stringer values, in groups
// and in attributes bound with With, in text and JSON; before, and with a
// redactor holding no secret, lines are as logged; a swapped redactor
// (a reload) hides its own secrets from then on, With-bound ones too.
func TestRedactHandler(t *testing.T) {
	const secret = "http://127.0.0.1:28086"
	logAll := func(log *slog.Logger) {
		log.Warn("posting to " + secret + " failed")
		log.Warn("write failed", "err", fmt.Errorf("Post %q: connection refused", secret+"/api/v2/write"))
		log.Warn("string", "url", secret, "n", 3)
		log.Warn("stringer", "url", stringer(secret))
		log.Warn("group", slog.Group("store", slog.String("url", secret), slog.Any("err", errors.New(secret))))
		log.With("url", secret).WithGroup("g").Warn("bound", "err", errors.New(secret))
	}
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			var buf checktest.SyncBuffer
			var base slog.Handler = slog.NewTextHandler(&buf, nil)
			if format == "json" {
				base = slog.NewJSONHandler(&buf, nil)
			}
			log := slog.New(newRedactHandler(base))
			bound := log.With("url", secret) // bound before any redactor

			logAll(log)
			if n := strings.Count(buf.String(), secret); n != 8 {
				t.Errorf("before a config: the secret appears %d times, want 8 (no redaction):\n%s", n, buf.String())
			}
			buf.Reset()

			setLogRedactor(log, redactorOf())
			logAll(log)
			if n := strings.Count(buf.String(), secret); n != 8 {
				t.Errorf("with no secrets in the config: the value appears %d times, want 8:\n%s", n, buf.String())
			}
			buf.Reset()

			setLogRedactor(log, redactorOf(secret))
			logAll(log)
			bound.Info("bound earlier")
			if out := buf.String(); strings.Contains(out, "127.0.0.1") || strings.Count(out, "***") != 9 || strings.Count(out, "\n") != 7 {
				t.Errorf("with the secret in the config: want 7 lines, every value *** (9 times):\n%s", out)
			}
			if out := buf.String(); !strings.Contains(out, "n=3") && !strings.Contains(out, `"n":3`) {
				t.Errorf("an int attribute was lost:\n%s", out)
			}
			buf.Reset()

			const other = "s3cret-from-reload"
			setLogRedactor(log, redactorOf(other))
			bound.Warn("after reload", "token", other)
			if out := buf.String(); strings.Contains(out, other) || !strings.Contains(out, secret) {
				t.Errorf("after a reload to a config with another secret: want only the new one hidden:\n%s", out)
			}
		})
	}
}

// TestRedactHandlerReload: the app swaps the log's redactor when a reload
// brings a config whose ${NAME} values are new.
func TestRedactHandlerReload(t *testing.T) {
	const secret = "reload-s3cret-value"
	t.Setenv("VIGIL_TEST_LOG_SECRET", secret)
	dir := t.TempDir()
	body := func(v string) string {
		return fmt.Sprintf("agent: {region: %q, data_dir: %q}\nstore: {embedded: {enabled: true}}\n", v, filepath.Join(dir, "data"))
	}
	path := writeConfig(t, body("test"))
	cfg, err := loadConfig(path, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	var buf checktest.SyncBuffer
	log := slog.New(newRedactHandler(slog.NewTextHandler(&buf, nil)))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a, err := newApp(cfg, appOptions{roles: roles{page: true}, listener: ln, log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer a.close(t.Context())
	a.log.Warn("before", "err", errors.New(secret))
	if err := os.WriteFile(path, []byte(body("${VIGIL_TEST_LOG_SECRET}")), 0o600); err != nil {
		t.Fatal(err)
	}
	a.reload()
	a.log.Warn("after", "err", errors.New("x "+secret))
	out := buf.String()
	if !strings.Contains(out, "config reloaded") {
		t.Fatalf("the reload failed:\n%s", out)
	}
	if !strings.Contains(out, `msg=before err=`+secret) || !strings.Contains(out, `msg=after err="x ***"`) {
		t.Errorf("want the value shown before the reload (not yet from the environment) and *** after:\n%s", out)
	}
}

// TestRunLogRedactsEnvValues: `vigil run` with store.influxdb.url taken
// from ${VIGIL_TEST_INFLUX_URL}, an InfluxDB at a dead port: the write
// failure the log reports (an error that quotes the URL) shows *** where
// the URL was, and no log line shows the URL. (The dial error's
// "127.0.0.1:PORT" is not the value, only a part of it, and stays.)
func TestRunLogRedactsEnvValues(t *testing.T) {
	bin := buildVigil(t, t.TempDir())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	cfg := writeConfig(t, fmt.Sprintf(`
agent: {region: test, data_dir: %q}
targets: [{name: a, url: "http://127.0.0.1:9"}]
checks:
  - {name: healthz, targets: [a], interval: 1s, http: {path: /healthz}}
store:
  influxdb: {url: "${VIGIL_TEST_INFLUX_URL}", bucket: b, flush_interval: 100ms, timeout: 1s}
`, filepath.Join(t.TempDir(), "data")))
	cmd := exec.Command(bin, "run", "-c", cfg, "--listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "VIGIL_TEST_INFLUX_URL="+dead)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1000)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var all []string
	var failed string
	timeout := time.After(30 * time.Second)
	for failed == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("vigil run exited:\n%s", strings.Join(all, "\n"))
			}
			all = append(all, l)
			if strings.Contains(l, "influx: write failed") {
				failed = l
			}
		case <-timeout:
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("no write failure logged within 30s:\n%s", strings.Join(all, "\n"))
		}
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	for l := range lines {
		all = append(all, l)
	}
	_ = cmd.Wait()
	if !strings.Contains(failed, `Post \"***/api/v2/write`) {
		t.Errorf("write failure line does not show the URL as ***:\n%s", failed)
	}
	for _, l := range all {
		if strings.Contains(l, dead) {
			t.Errorf("a log line shows the URL from the environment:\n%s", l)
		}
	}
}
