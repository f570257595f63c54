package main

import (
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestNoBrowserWarnedAtStartAndReload: an agent whose config holds browser
// checks but which has no browser says so once at start, naming the
// checks and agent.browser.exec_path (their runs fail with
// browser_unavailable, which is not counted against the targets, so the
// line is what tells the operator); a reload that keeps them says it again,
// and an agent without browser checks says nothing.
func TestNoBrowserWarnedAtStartAndReload(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	dir := t.TempDir()
	noChromium := filepath.Join(dir, "no-such-chromium")
	conf := func(browserChecks bool) string {
		s := "agent: {data_dir: " + filepath.Join(dir, "data") + ", browser: {exec_path: " + noChromium + "}}\n" +
			"targets: [{name: o, url: " + o.URL() + "}]\nchecks:\n" +
			"  - {name: home, targets: [o], interval: 1h, http: {path: /healthz}}\n"
		if browserChecks {
			s += "  - {name: journey, targets: [o], interval: 1h, script: [{browser: {navigate: /}}]}\n" +
				"  - {name: basket, targets: [o], interval: 1h, script: [{browser: {navigate: /}}]}\n"
		}
		return s
	}
	path := filepath.Join(dir, "vigil.yaml")
	if err := os.WriteFile(path, []byte(conf(true)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(path, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	var logs checktest.SyncBuffer
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a, err := newApp(cfg, appOptions{roles: roles{canary: true}, listener: ln, watch: time.Hour,
		log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	stop := runApp(t, a)
	defer stop()
	const msg = "browser checks are configured but this agent has no browser"
	count := func() int { return strings.Count(logs.String(), msg) }
	if n := count(); n != 1 {
		t.Fatalf("at start: %d warning lines, want 1:\n%s", n, logs.String())
	}
	all := logs.String()
	i := strings.Index(all, msg)
	line := all[strings.LastIndex(all[:i], "\n")+1:]
	line, _, _ = strings.Cut(line, "\n")
	for _, want := range []string{"level=WARN", "checks=journey,basket", "agent.browser.exec_path", noChromium, "browser_unavailable"} {
		if !strings.Contains(line, want) {
			t.Errorf("warning %q lacks %q", line, want)
		}
	}

	reload := func(browserChecks bool) {
		t.Helper()
		if err := os.WriteFile(path, []byte(conf(browserChecks)), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := loadConfig(path, os.LookupEnv)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.apply(cfg); err != nil {
			t.Fatal(err)
		}
	}
	reload(true)
	if n := count(); n != 2 {
		t.Fatalf("after a reload keeping the browser checks: %d warning lines, want 2", n)
	}
	reload(false)
	if n := count(); n != 2 {
		t.Fatalf("after a reload without browser checks: %d warning lines, want still 2", n)
	}
}
