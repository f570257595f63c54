package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestSecondYAMLDocumentRefused: a file holding a second YAML document
// ("---" then more config) is an error naming the file and the line of the
// marker, from validate and check alike; vigil reads one document per
// file and must not drop the rest silently. Empty documents (a leading
// "---", a "---" followed by comments only) are fine.
func TestSecondYAMLDocumentRefused(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	first := fmt.Sprintf(`targets:
  - {name: web1, url: %s}
checks:
  - {name: a, targets: [web1], interval: 5s, http: {path: /}}
`, o.URL())
	second := `---
checks:
  - {name: b, targets: [web1], intervall: 5s, http: {path: /nope}, expect: {status: 200}}
`
	cfg := writeConfig(t, first+second)
	for _, cmd := range []string{"validate", "check"} {
		out, code := runCLI(t, cmd, "-c", cfg)
		want := cfg + `:5:1: a second YAML document ("---"): vigil reads one document per file`
		if code != 2 || !strings.Contains(out, want) {
			t.Errorf("vigil %s: exit %d, output:\n%s\nwant exit 2 and %q", cmd, code, out, want)
		}
	}

	// Two markers before the only document: the config is read.
	cfg = writeConfig(t, "---\n---\n"+first)
	if out, code := runCLI(t, "validate", "-c", cfg); code != 0 || !strings.Contains(out, "ok") {
		t.Errorf("leading empty documents: exit %d, output:\n%s\nwant exit 0 and ok", code, out)
	}
	// A leading marker, and a trailing one followed by comments or a null only.
	for name, text := range map[string]string{
		"leading marker":  "---\n" + first,
		"trailing marker": first + "---\n",
		"comment doc":     first + "---\n# nothing more\n",
		"null doc":        first + "---\n~\n",
	} {
		cfg := writeConfig(t, text)
		if out, code := runCLI(t, "validate", "-c", cfg); code != 0 {
			t.Errorf("%s: exit %d, output:\n%s\nwant exit 0", name, code, out)
		}
	}
}

// TestReloadRefusesSecondYAMLDocument: appending a second document to the
// file of a running vigil is a rejected reload, shown on /healthz, not a
// silent "config reloaded" that ignores the new document.
func TestReloadRefusesSecondYAMLDocument(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	path := proxyOnlyConfig(t, o.URL())
	cfg, err := loadConfig(path, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a, err := newApp(cfg, appOptions{roles: roles{proxy: true}, listener: ln, watch: 50 * time.Millisecond, log: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	base := "http://" + ln.Addr().String()
	waitFor(t, 10*time.Second, "/healthz ok", func() bool {
		code, _ := do(t, "GET", base+"/healthz", "", nil)
		return code == 200
	})
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Count(string(raw), "\n")
	if !strings.HasSuffix(string(raw), "\n") {
		raw = append(raw, '\n')
		lines++
	}
	raw = append(raw, "---\nchecks:\n  - {name: b, targets: [a], intervall: 5s, http: {path: /}}\n"...)
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`%s:%d:1: a second YAML document ("---")`, path, lines+1)
	waitFor(t, 10*time.Second, "/healthz reporting the rejected reload", func() bool {
		code, body := do(t, "GET", base+"/healthz", "", nil)
		return code == 503 && strings.Contains(body, "config reload failed") && strings.Contains(body, want)
	})
}

// TestKeyWithNoValueRefused: a key written with no value (`key:`, `key:
// ~`, `key: null`) at any level is an error naming its path, not an
// omitted key (an assertion that silently vanishes, a default interval).
// `equals:` with no value in an expect.json element keeps its documented
// meaning (JSON null).
func TestKeyWithNoValueRefused(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	cfg := writeConfig(t, fmt.Sprintf(`
targets:
  - {name: w, url: %s}
checks:
  - name: a
    targets: [w]
    http: {path: /}
    expect:
      checksum:
      body:
        contains:
      size: {max: }
      json:
      ttfb: ~
  - name: b
    targets: [w]
    interval: null
    timeout:
    rise: ~
    http:
      headers: {X-A: }
  - name: c
    targets:
    http: {path: /}
  - name: d
    targets: [w]
    http: {path: /}
    expect:
      json:
        - {path: a, equals: }
        - {path: b, equals: ~}
  - name: e
    targets: [w]
    http: {path: /, method: POST, json: {a: null, b: [1, ~]}}
  - name: f
    targets: [w]
    script:
      - browser: {navigate: }
      - browser: {eval: {js: "1", equals: }}
status_page: {title: }
proxy:
  listen: 127.0.0.1:0
  pools:
    - name: p
      hosts:
      origins: [{target: w}]
`, o.URL()))
	// Each key at its line, in file order.
	want := []string{
		"9: checks[0].expect.checksum", "11: checks[0].expect.body.contains",
		"12:14: checks[0].expect.size.max", "13: checks[0].expect.json", "14: checks[0].expect.ttfb",
		"17: checks[1].interval", "18: checks[1].timeout", "19: checks[1].rise", "21:17: checks[1].http.headers.X-A",
		"23: checks[2].targets", "38:19: checks[5].script[0].browser.navigate", "39:35: checks[5].script[1].browser.eval.equals",
		"40:15: status_page.title", "45: proxy.pools[0].hosts",
	}
	lists := map[string]bool{"11: checks[0].expect.body.contains": true, "13: checks[0].expect.json": true,
		"23: checks[2].targets": true, "45: proxy.pools[0].hosts": true}
	for _, cmd := range []string{"validate", "check"} {
		out, code := runCLI(t, cmd, "-c", cfg)
		if code != 2 {
			t.Errorf("vigil %s: exit %d, want 2\n%s", cmd, code, out)
		}
		var lines []string
		for _, k := range want {
			hint := "omit the key, or give one"
			if lists[k] {
				hint = "omit the key, or give items: are they all commented out?"
			}
			lines = append(lines, cfg+":"+k+": no value ("+hint+")")
		}
		if got := strings.TrimSpace(out); got != strings.Join(lines, "\n") {
			t.Errorf("vigil %s: output:\n%s\nwant:\n%s", cmd, got, strings.Join(lines, "\n"))
		}
		if strings.Contains(out, "checks[3]") || strings.Contains(out, "checks[4]") {
			t.Errorf("vigil %s: null in expect.json[].equals and inside a JSON body is a value, not an error:\n%s", cmd, out)
		}
		// Only the null keys: nothing that follows from them (check c has
		// no targets because its targets key has no value).
		if n := strings.Count(out, cfg+":"); n != len(want) {
			t.Errorf("vigil %s: %d errors, want %d:\n%s", cmd, n, len(want), out)
		}
	}

	// A list item with no value.
	cfg = writeConfig(t, fmt.Sprintf(`
targets:
  - {name: w, url: %s}
checks:
  - name: a
    targets:
      - w
      -
    http: {path: /}
`, o.URL()))
	out, code := runCLI(t, "validate", "-c", cfg)
	if want := cfg + ":8: checks[0].targets[1]: no value (remove the item, or give one)"; code != 2 || !strings.Contains(out, want) {
		t.Errorf("list item with no value: exit %d, output:\n%s\nwant exit 2 and %q", code, out, want)
	}
}

// TestScalarForListRefused: a number or a bool where a list belongs is an
// error that says a list is wanted, not a list of its text (`hosts: 5`
// would route only `Host: 5`, `contains: true` would look for "true").
// A string stays a list of one (`targets: web1`), as documented, and
// expect.status takes a code alone.
func TestScalarForListRefused(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	cfg := writeConfig(t, fmt.Sprintf(`
targets:
  - {name: web1, url: %s}
checks:
  - name: a
    targets: 5
    http: {path: /}
  - name: b
    targets: [web1]
    http: {path: /}
    expect:
      body: {contains: true, not_contains: 1.50}
proxy:
  listen: 127.0.0.1:0
  pools:
    - name: p
      hosts: 5
      origins: [{target: web1}]
`, o.URL()))
	want := []string{
		"6: checks[0].targets: want a list, got a number (5)",
		"12:14: checks[1].expect.body.contains: want a list, got a bool (true)",
		"12:30: checks[1].expect.body.not_contains: want a list, got a number (1.50)",
		"17: proxy.pools[0].hosts: want a list, got a number (5)",
	}
	for _, cmd := range []string{"validate", "check"} {
		out, code := runCLI(t, cmd, "-c", cfg)
		if code != 2 {
			t.Errorf("vigil %s: exit %d, want 2\n%s", cmd, code, out)
		}
		for _, w := range want {
			if !strings.Contains(out, cfg+":"+w) {
				t.Errorf("vigil %s: output lacks %q:\n%s", cmd, w, out)
			}
		}
		if strings.Contains(out, "unknown target") {
			t.Errorf("vigil %s: the number is not a target name:\n%s", cmd, out)
		}
	}

	// A string for a list is a list of one; a status code alone is a status.
	cfg = writeConfig(t, fmt.Sprintf(`
targets:
  - {name: web1, url: %s}
checks:
  - name: a
    targets: web1
    http: {path: /}
    expect: {status: 200, body: {contains: ok}}
`, o.URL()))
	if out, code := runCLI(t, "validate", "-c", cfg); code != 0 {
		t.Errorf("string for a list: exit %d, want 0\n%s", code, out)
	}
}

// TestEnvSetButEmpty: a variable that is set to the empty string is
// reported as empty, not as unset, so the user looks at its value rather
// than at whether it is exported.
func TestEnvSetButEmpty(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	cfg := writeConfig(t, fmt.Sprintf(`
targets:
  - {name: web1, url: %s}
checks:
  - {name: a, targets: [web1], http: {path: /}}
status_page: {title: "${VIGIL_TEST_EMPTY_TITLE}"}
agent: {vantage: "${VIGIL_TEST_UNSET_VANTAGE}"}
`, o.URL()))
	t.Setenv("VIGIL_TEST_EMPTY_TITLE", "")
	t.Setenv("VIGIL_TEST_UNSET_VANTAGE", "") // restored after the test
	os.Unsetenv("VIGIL_TEST_UNSET_VANTAGE")
	out, code := runCLI(t, "validate", "-c", cfg)
	for _, w := range []string{
		cfg + ":6:15: status_page.title: ${VIGIL_TEST_EMPTY_TITLE} is empty in the environment (give it a value, or use ${VIGIL_TEST_EMPTY_TITLE:-default} for an optional value)",
		cfg + ":7:9: agent.vantage: ${VIGIL_TEST_UNSET_VANTAGE} is not set in the environment",
	} {
		if code != 2 || !strings.Contains(out, w) {
			t.Errorf("exit %d, output:\n%s\nwant exit 2 and %q", code, out, w)
		}
	}
}

// TestValidateRefusesUnusableDataDir: an agent.data_dir that `vigil run`
// refuses (a regular file, a symbolic link) is an error from `vigil
// validate` too, with run's message, naming the file and the key. A data
// dir that does not exist yet is fine: run creates it.
func TestValidateRefusesUnusableDataDir(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	dir := t.TempDir()
	file := filepath.Join(dir, "plain")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink("real", link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ dataDir, want string }{
		{file, "agent.data_dir: open " + file + ": not a directory"},
		{link, "agent.data_dir: " + link + " is a symbolic link to real; vigil does not follow it: point agent.data_dir at the real directory"},
		{filepath.Join(dir, "new", "data"), ""},
		{real, ""},
	} {
		cfg := writeConfig(t, fmt.Sprintf(`
agent: {data_dir: %q}
targets: [{name: web1, url: %s}]
checks: [{name: a, targets: [web1], http: {path: /}}]
`, tc.dataDir, o.URL()))
		out, code := runCLI(t, "validate", "-c", cfg)
		if tc.want == "" {
			if code != 0 || !strings.Contains(out, "ok") {
				t.Errorf("data_dir %s: exit %d, want 0 and ok\n%s", tc.dataDir, code, out)
			}
			continue
		}
		if code != 2 || !strings.Contains(out, cfg+":2:9: "+tc.want) {
			t.Errorf("data_dir %s: exit %d, output:\n%s\nwant exit 2 and %q", tc.dataDir, code, out, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); !os.IsNotExist(err) {
		t.Errorf("validate created the data dir's parent (stat: %v); it must change nothing", err)
	}
}
