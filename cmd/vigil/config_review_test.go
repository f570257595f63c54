package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"go.yaml.in/yaml/v3"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestNumberTextForStringKeys: an unquoted number given to a key that takes
// a string is the text as written, not YAML's number printed back (0123456
// is not the octal 42798, 2.0 is not 2, 1.10 is not 1.1). The headers sent
// and the expectations checked are those of the file.
func TestNumberTextForStringKeys(t *testing.T) {
	var mu sync.Mutex
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r.Header.Clone()
		mu.Unlock()
		w.Header().Set("X-Version", "1.10")
		fmt.Fprint(w, "price 1.50")
	}))
	defer srv.Close()
	cfg := writeConfig(t, fmt.Sprintf(`
agent: {admin_token: 0123456}
targets: [{name: a, url: %s}]
checks:
  - name: 1.10
    targets: [a]
    http:
      headers: {X-Api-Version: 2.0, X-Oct: 0755, X-Hex: 0x1F, X-Exp: 1e3}
    expect:
      status: 200
      headers: {X-Version: 1.10}
      body: {contains: [1.50]}
    rise: 0x2
proxy:
  admin_token: 123456789012345678901234
  pools: [{name: p, origins: [{target: a}]}]
`, srv.URL))

	out, code := runCLI(t, "check", "-c", cfg, "--json")
	if code != 0 {
		t.Fatalf("exit code %d, want 0 (the origin answers what the file expects)\n%s", code, out)
	}
	var row map[string]any
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "{") {
			if err := json.Unmarshal([]byte(line), &row); err != nil {
				t.Fatal(err)
			}
		}
	}
	if row["check"] != "1.10" {
		t.Errorf("check name %v, want 1.10", row["check"])
	}
	mu.Lock()
	for name, want := range map[string]string{"X-Api-Version": "2.0", "X-Oct": "0755", "X-Hex": "0x1F", "X-Exp": "1e3"} {
		if v := got.Get(name); v != want {
			t.Errorf("%s sent as %q, want %q", name, v, want)
		}
	}
	mu.Unlock()

	f, err := loadConfig(cfg, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if f.Agent.AdminToken != "0123456" {
		t.Errorf("agent.admin_token = %q, want 0123456", f.Agent.AdminToken)
	}
	if f.Proxy.AdminToken != "123456789012345678901234" {
		t.Errorf("proxy.admin_token = %q, want 123456789012345678901234", f.Proxy.AdminToken)
	}
	c := f.Checks[0]
	if c.Expect.Body.Contains[0] != "1.50" || c.Expect.Headers["X-Version"] != "1.10" {
		t.Errorf("expect.body.contains %q, expect.headers %q: want 1.50 and 1.10", c.Expect.Body.Contains, c.Expect.Headers)
	}
	// Numbers for numeric keys are numbers still (0x2 is 2).
	if c.Rise != 2 {
		t.Errorf("rise = %d, want 2", c.Rise)
	}
}

// TestNumberTextEnvAndInterpolation: overrides and ${VAR} are strings and
// reach string keys unchanged.
func TestNumberTextEnvAndInterpolation(t *testing.T) {
	cfg := writeConfig(t, `
agent: {admin_token: "${TOK}", region: 007}
targets: [{name: a, url: "http://127.0.0.1:9"}]
checks: [{name: c, targets: [a]}]
`)
	f, err := loadConfig(cfg, envOf(map[string]string{"TOK": "0123", "VIGIL_AGENT_VANTAGE": "010"}))
	if err != nil {
		t.Fatal(err)
	}
	if f.Agent.AdminToken != "0123" || f.Agent.Region != "007" || f.Agent.Vantage != "010" {
		t.Errorf("admin_token %q, region %q, vantage %q: want 0123, 007, 010", f.Agent.AdminToken, f.Agent.Region, f.Agent.Vantage)
	}
}

// TestDecodeErrorKeepsOtherSectionsValidated: a value that does not decode
// leaves out the validation of its own section only; the other sections'
// errors are listed in the same run.
func TestDecodeErrorKeepsOtherSectionsValidated(t *testing.T) {
	t.Run("scalar in a section", func(t *testing.T) {
		wantValidate(t, "status_page: {enabled: maybe}\nalerting: {quorum: -2}\n",
			`status_page.enabled: "maybe": want true or false`,
			`alerting.quorum: -2: must be positive`)
	})
	t.Run("agent value", func(t *testing.T) {
		wantValidate(t, `
agent: {concurrency: x}
targets: [{name: a, url: "http://127.0.0.1:9"}]
checks: [{name: c, targets: [a], rise: -1}]
`,
			`agent.concurrency: "x": want an integer`,
			`checks[0].rise: must be positive, got -1`)
	})
	// A whole section that did not decode: the references into it are
	// not judged, the rest is.
	t.Run("checks not a list", func(t *testing.T) {
		wantValidate(t, "checks: \"x\"\nslos: [{name: s, check: c, objective: \"99%\"}]\nalerting: {quorum: -2}\n",
			`checks[0]: want a mapping (key: value), got a string`,
			`alerting.quorum: -2: must be positive`)
	})
}

// TestTreeKeysMatchDecoder: on files that decode, the unknown keys found
// from the tree are the decoder's own unused keys (every testdata and
// example config).
func TestTreeKeysMatchDecoder(t *testing.T) {
	var files []string
	for _, g := range []string{"testdata/*.yaml", "../../examples/*.yaml", "../../examples/*/*.yaml", "../../testdata/*.yaml", "../../deploy/*.yaml"} {
		m, _ := filepath.Glob(g)
		files = append(files, m...)
	}
	if len(files) < 10 {
		t.Fatalf("only %d config files found", len(files))
	}
	compared := 0
	for _, name := range files {
		raw, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		var doc yaml.Node
		if yaml.Unmarshal(raw, &doc) != nil {
			continue
		}
		settings, ok := nodeValue(&doc).(map[string]any)
		if !ok {
			continue
		}
		var f File
		var md mapstructure.Metadata
		dec, err := newFileDecoder(&f, &md)
		if err != nil {
			t.Fatal(err)
		}
		if dec.Decode(settings) != nil {
			continue
		}
		unknown, _ := treeKeys(reflect.TypeOf(f), settings, "")
		sort.Strings(md.Unused)
		if strings.Join(unknown, ",") != strings.Join(md.Unused, ",") {
			t.Errorf("%s: unknown keys from the tree %q, decoder %q", name, unknown, md.Unused)
		}
		compared++
	}
	t.Logf("%d files compared", compared)
}

// TestUnknownKeysBesideDecodeErrors: a value that does not decode no
// longer hides the unknown keys beside it or elsewhere in the file.
func TestUnknownKeysBesideDecodeErrors(t *testing.T) {
	wantValidate(t, `
targets: [{name: a, url: "http://127.0.0.1:9"}]
checks: [{name: h, targets: [a], rise: 2.5, bogus: 1}]
alertng: {quorum: 2}
`,
		`checks[0].rise: 2.5: want an integer`,
		`checks[0].bogus: unknown key`,
		`alertng: unknown key (did you mean alerting?)`)
}

// TestMapKeyCaseTwins: two header names or extract variables that differ
// only in case are one name; the file is rejected naming both rather
// than one value being dropped.
func TestMapKeyCaseTwins(t *testing.T) {
	wantValidate(t, `
targets: [{name: a, url: "http://127.0.0.1:9"}]
checks:
  - name: h
    targets: [a]
    http: {headers: {X-A: one, x-a: two}}
    expect: {headers: {ETag: present, etag: absent}}
  - name: s
    targets: [a]
    script:
      - http: {url: "http://127.0.0.1:9"}
        extract: {Token: {json: $.a}, token: {json: $.b}}
alerting:
  receivers: [{name: ops, webhook: {url: "http://127.0.0.1:9", headers: {Authorization: a, authorization: b}}}]
`,
		`checks[0].http.headers.x-a: duplicates X-A (keys match case-insensitively: keep one)`,
		`checks[0].expect.headers.etag: duplicates ETag (keys match case-insensitively: keep one)`,
		`checks[1].script[0].extract.token: duplicates Token (keys match case-insensitively: keep one)`,
		`alerting.receivers[0].webhook.headers.authorization: duplicates Authorization (keys match case-insensitively: keep one)`)
}

// TestReloadAddingProxyIsRejected: `vigil run` started without a proxy
// section refuses a reload that adds one, as it refuses one that removes
// it: the proxy starts on restart, and the old config keeps running
// meanwhile (its checks run, nothing listens on the new proxy address).
// A process without the proxy role (vigil canary) reloads such a file.
func TestReloadAddingProxyIsRejected(t *testing.T) {
	bin := buildVigil(t, t.TempDir())
	o := checktest.NewOrigin()
	defer o.Close()
	dir := t.TempDir()
	ports := freePorts(t, 2)
	agentPort, proxyPort := ports, ports+1
	base := fmt.Sprintf("http://127.0.0.1:%d", agentPort)
	head := fmt.Sprintf(`agent: {listen: "127.0.0.1:%d", region: r1, data_dir: %q}
defaults: {interval: 1s, timeout: 500ms}
targets: [{name: o, url: %q}]
checks:
  - {name: up, targets: [o], http: {path: /healthz}}
`, agentPort, filepath.Join(dir, "data"), o.URL())
	path := filepath.Join(dir, "vigil.yaml")
	if err := os.WriteFile(path, []byte(head), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startLogged(t, bin, "run", "-c", path)
	waitFor(t, 60*time.Second, "vigil started", func() bool {
		p.alive(t)
		return strings.Contains(p.stderr.String(), `msg="vigil started"`)
	})
	withProxy := head + fmt.Sprintf("proxy:\n  listen: \"127.0.0.1:%d\"\n  pools: [{name: p, origins: [{target: o}]}]\n", proxyPort)
	if err := os.WriteFile(path, []byte(withProxy), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	const want = "proxy: section added; restart to start the proxy"
	waitFor(t, 30*time.Second, "the reload rejected", func() bool {
		p.alive(t)
		return strings.Contains(p.stderr.String(), "config reload rejected")
	})
	if !strings.Contains(p.stderr.String(), want) {
		t.Errorf("reload log lacks %q:\n%s", want, p.stderr.String())
	}
	code, body := do(t, "GET", base+"/healthz", "", nil)
	if code != 503 || !strings.Contains(body, want) {
		t.Errorf("/healthz = %d %q, want 503 naming %q", code, body, want)
	}
	if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", proxyPort), time.Second); err == nil {
		c.Close()
		t.Errorf("something listens on the proxy address after a rejected reload")
	}
	n := o.Count("GET", "/healthz")
	waitFor(t, 30*time.Second, "the old config's check still running", func() bool {
		return o.Count("GET", "/healthz") >= n+2
	})
	if code := p.stop(t); code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0", code)
	}

	// vigil canary: no proxy role, the section is someone else's.
	if err := os.WriteFile(path, []byte(head), 0o600); err != nil {
		t.Fatal(err)
	}
	a, stop := startApp(t, path, roles{canary: true, page: true})
	defer stop()
	if err := os.WriteFile(path, []byte(withProxy), 0o600); err != nil {
		t.Fatal(err)
	}
	a.reload()
	a.mu.Lock()
	err := a.reloadErr
	a.mu.Unlock()
	if err != nil {
		t.Errorf("vigil canary: reload adding a proxy section: %v, want accepted", err)
	}
}

// TestNullSectionIsEmptySection: `proxy:` with no value is `proxy: {}`,
// validated as such, not a file without a proxy.
func TestNullSectionIsEmptySection(t *testing.T) {
	for _, v := range []string{"", " ~", " null", " {}"} {
		t.Run("proxy:"+v, func(t *testing.T) {
			wantValidate(t, "targets: [{name: a, url: \"http://127.0.0.1:9\"}]\nproxy:"+v+"\n",
				"proxy.pools: at least one pool is required")
		})
	}
	// The other sections given as null are as good as empty or absent.
	for _, sec := range []string{"agent", "defaults", "store", "alerting", "status_page"} {
		t.Run(sec, func(t *testing.T) {
			got, code := validateErrors(t, "targets: [{name: a, url: \"http://127.0.0.1:9\"}]\nchecks: [{name: c, targets: [a]}]\n"+sec+":\n")
			if code != 0 || strings.Join(got, "\n") != "ok" {
				t.Errorf("%s: with no value: exit %d %q, want ok", sec, code, got)
			}
		})
	}
}

// TestTriggerFailureRateZero: failure_rate: 0% would trigger the deep
// checks every window, failures or not; it is an explicit-zero error.
func TestTriggerFailureRateZero(t *testing.T) {
	wantValidate(t, `
agent: {triggers: {failure_rate: 0%}}
targets: [{name: a, url: "http://127.0.0.1:9"}]
checks: [{name: c, targets: [a]}]
`, `agent.triggers.failure_rate: 0: must be positive (omit the key for the default, 1%)`)
}

// TestResolveTimeoutRaisedWarns: an explicit resolve_timeout below 3 ×
// evaluation_interval is raised, and validate says so on stderr (still ok).
func TestResolveTimeoutRaisedWarns(t *testing.T) {
	p := writeConfig(t, `
targets: [{name: a, url: "http://127.0.0.1:9"}]
checks: [{name: c, targets: [a]}]
store: {embedded: {}}
alerting: {resolve_timeout: 30s}
`)
	out, code := runCLI(t, "validate", "-c", p)
	want := "warning: " + p + ":5:12: alerting.resolve_timeout: 30s is below 3 × evaluation_interval (15s): raised to 45s"
	if code != 0 || !strings.Contains(out, want) || !strings.HasPrefix(out, "ok\n") {
		t.Errorf("validate: exit %d\n%s\nwant ok (exit 0) and %q", code, out, want)
	}
	// The default (5m) and a long enough value say nothing.
	p = writeConfig(t, "targets: [{name: a, url: \"http://127.0.0.1:9\"}]\nchecks: [{name: c, targets: [a]}]\nstore: {embedded: {}}\nalerting: {resolve_timeout: 45s, receivers: [{name: r, webhook: {url: \"http://127.0.0.1:9/hook\"}}]}\n")
	if out, code := runCLI(t, "validate", "-c", p); code != 0 || out != "ok\n" {
		t.Errorf("resolve_timeout: 45s: exit %d %q, want ok alone", code, out)
	}
}

// TestNegativeValuesNamed: a negative value names its key and itself.
func TestNegativeValuesNamed(t *testing.T) {
	wantValidate(t, `
targets: [{name: a, url: "http://127.0.0.1:9"}]
checks: [{name: c, targets: [a]}]
slos: [{name: s, check: c, objective: "99%", window: -1d}]
store: {embedded: {}}
alerting:
  quorum: -2
  cert_expiry_days: -1
  retry: {attempts: -3, backoff: -1s, redeliver_max_backoff: -5m}
`,
		`slos[0].window: -24h0m0s: must be positive`,
		`alerting.quorum: -2: must be positive`,
		`alerting.cert_expiry_days: -1: must be positive`,
		`alerting.retry.attempts: -3: must be positive`,
		`alerting.retry.backoff: -1s: must be positive`,
		`alerting.retry.redeliver_max_backoff: -5m0s: must be positive`)
}

// TestShapeErrorsInWords: a list, mapping or single value where another
// shape belongs is said in words, not Go type names.
func TestShapeErrorsInWords(t *testing.T) {
	wantValidate(t, `
targets: [{name: a, url: "http://127.0.0.1:9"}]
checks:
  - name: c
    targets: [a]
    interval: [5s]
    http: {headers: X-A}
  - name: d
    targets: [a]
    expect: [status]
  - {name: e, targets: [a], rise: {n: 1}}
agent: [1]
`,
		`checks[0].interval: want a duration, got a list`,
		`checks[0].http.headers: want a mapping (key: value), got a string`,
		`checks[1].expect: want a mapping (key: value), got a list`,
		`checks[2].rise: want an integer, got a mapping`,
		`agent: want a mapping (key: value), got a list`)
}

// TestDuplicateYAMLKeysOneLineEach: every key given twice is one error
// line with the file and key path, and an expression's compile error is
// one line too; /healthz counts a rejected reload's errors as such.
func TestDuplicateYAMLKeysOneLineEach(t *testing.T) {
	wantValidate(t, `
targets: [{name: a, url: "http://127.0.0.1:9"}]
checks:
  - name: c
    targets: [a]
    interval: 5s
    interval: 6s
    http: {headers: {X-A: one, X-A: two}}
agent: {}
agent: {}
`,
		`checks[0].interval: given twice, at lines 6 and 7 (keep one)`,
		`checks[0].http.headers.X-A: given twice on this line, at columns 22 and 32 (keep one)`,
		`agent: given twice, at lines 9 and 10 (keep one)`)
	wantValidate(t, `
targets: [{name: a, url: "http://127.0.0.1:9"}]
checks:
  - name: c
    targets: [a]
    script: [{expr: "1 ++ )"}]
`, `checks[0].script[0].expr: unexpected token Bracket(")") (1:6)`)

	dir := t.TempDir()
	path := filepath.Join(dir, "vigil.yaml")
	good := fmt.Sprintf("agent: {data_dir: %q}\ntargets: [{name: a, url: \"http://127.0.0.1:9\"}]\nchecks:\n  - name: c\n    targets: [a]\n", filepath.Join(dir, "data"))
	if err := os.WriteFile(path, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	a, stop := startApp(t, path, roles{canary: true, page: true})
	defer stop()
	if err := os.WriteFile(path, []byte(good+"    interval: 5s\n    interval: 6s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a.reload()
	code, body := do(t, "GET", "http://"+a.Addr()+"/healthz", "", nil)
	want := "config reload failed (old config still running): " + path + ":7: checks[0].interval: given twice, at lines 6 and 7 (keep one)"
	if code != 503 || !strings.Contains(body, want) {
		t.Errorf("/healthz = %d\n%s\nwant 503 with %q", code, body, want)
	}
}

// TestUnquotedTLSVersion: min_version: 1.0 unquoted is TLS 1.0 (the
// deprecation warning), not the number 1.
func TestUnquotedTLSVersion(t *testing.T) {
	p := writeConfig(t, "targets: [{name: a, url: \"https://127.0.0.1:9\"}]\nchecks: [{name: c, targets: [a], http: {tls: {min_version: 1.0}}}]\n")
	out, code := runCLI(t, "validate", "-c", p)
	want := "warning: " + p + `:2:47: checks[0].http.tls.min_version: "1.0": TLS 1.0 is accepted, which is deprecated (RFC 8996)`
	if code != 0 || !strings.Contains(out, want) {
		t.Errorf("validate: exit %d\n%s\nwant ok and %q", code, out, want)
	}
}
