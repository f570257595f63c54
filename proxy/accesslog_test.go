package proxy

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAccessLog: with access_log, every request the router sees gets one
// JSON line (both engines): client, request, status, body bytes, duration,
// pool, the origin that answered, its time to headers and the tries; the
// proxy's own answers and refusals too. The query string is left out
// unless access_log_query; client bytes cannot break a line.
func TestAccessLog(t *testing.T) {
	for _, engineName := range []string{EngineFast, EngineStdlib} {
		t.Run(engineName, func(t *testing.T) {
			a := newBackend(t, "a")
			path := filepath.Join(t.TempDir(), "access.log")
			cfg := pool1(PolicyFirst, a.srv.URL)
			cfg.Pools[0].Hosts = []string{"www.example.test"}
			cfg.Pools = append(cfg.Pools, PoolConfig{Name: "dead", Hosts: []string{"dead.example.test"},
				Origins: []OriginConfig{{URL: deadURL(t)}, {URL: deadURL(t)}}})
			cfg.AccessLog = path
			h := startWith(t, cfg, nil, false, engineName)
			get := func(host, target string, hdr ...string) int {
				t.Helper()
				code, _, _ := h.doHost(host, "GET", target, hdr...)
				return code
			}
			if c := get("www.example.test", "/a%22b?token=secret", "User-Agent", `ua "quoted" \ back`); c != 200 {
				t.Fatalf("GET: %d", c)
			}
			if c := get("dead.example.test", "/d"); c != 502 {
				t.Fatalf("GET dead pool: %d", c)
			}
			if c := get("nowhere.example.test", "/n"); c != 421 {
				t.Fatalf("GET unknown host: %d", c)
			}
			h.p.closeAccessLog()
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
			if len(lines) != 3 {
				t.Fatalf("%d lines, want 3:\n%s", len(lines), b)
			}
			var got []map[string]any
			for _, l := range lines {
				var m map[string]any
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					t.Fatalf("line is not JSON: %v\n%s", err, l)
				}
				got = append(got, m)
			}
			ok, dead, refused := got[0], got[1], got[2]
			for k, want := range map[string]any{"method": "GET", "host": "www.example.test", "path": "/a%22b", "proto": "HTTP/1.1",
				"status": 200.0, "bytes": 4.0, "pool": "web", "origin": "o0", "tries": 1.0, "user_agent": `ua "quoted" \ back`, "tls": false} {
				if ok[k] != want {
					t.Errorf("200 line: %s = %v, want %v\n%s", k, ok[k], want, lines[0])
				}
			}
			if _, ok := ok["query"]; ok || strings.Contains(lines[0], "secret") {
				t.Errorf("the query string was logged without access_log_query: %s", lines[0])
			}
			if d, _ := ok["duration"].(float64); d <= 0 || d > 5 {
				t.Errorf("duration %v", ok["duration"])
			}
			if u, _ := ok["upstream_time"].(float64); u <= 0 || u > ok["duration"].(float64) {
				t.Errorf("upstream_time %v (duration %v)", ok["upstream_time"], ok["duration"])
			}
			if ts, err := time.Parse(time.RFC3339Nano, ok["ts"].(string)); err != nil || time.Since(ts) > time.Minute {
				t.Errorf("ts %v: %v", ok["ts"], err)
			}
			if dead["status"] != 502.0 || dead["pool"] != "dead" || dead["tries"] != 2.0 || dead["origin"] != nil {
				t.Errorf("502 line: %s", lines[1])
			}
			if refused["status"] != 421.0 || refused["pool"] != nil {
				t.Errorf("421 line: %s", lines[2])
			}
		})
	}
}

// TestAccessLogQueryAndReload: access_log_query adds the query; a reload
// reopens the file, so a rotated (renamed) log is let go and new lines go
// to a new file at the configured path.
func TestAccessLogQueryAndReload(t *testing.T) {
	a := newBackend(t, "a")
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	cfg := pool1(PolicyFirst, a.srv.URL)
	cfg.AccessLog, cfg.AccessLogQuery = path, true
	h := start(t, cfg, nil, false)
	if code, _, _ := h.do("GET", "/q?x=1&y=%22", ""); code != 200 {
		t.Fatal(code)
	}
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := h.p.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := h.do("GET", "/after", ""); code != 200 {
		t.Fatal(code)
	}
	h.p.closeAccessLog()
	eventually(t, "the rotated file to get its line", func() bool {
		b, _ := os.ReadFile(path + ".1")
		return strings.Contains(string(b), `"query":"x=1&y=%22"`)
	})
	b, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(b), `"path":"/after"`) || strings.Contains(string(b), `"/q"`) {
		t.Errorf("new file after the reload: %q %v", b, err)
	}
}

// TestAccessLogConfigErrors: each mistake names its key.
func TestAccessLogConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.AccessLog = "/nonexistent-dir/x/access.log" }, "access_log: /nonexistent-dir/x/access.log: its directory /nonexistent-dir/x does not exist"},
		{func(c *Config) { c.AccessLogQuery = true }, "access_log_query: only with access_log"},
		{func(c *Config) { c.AccessLog = os.TempDir() }, "access_log: open " + os.TempDir() + ": is a directory"},
		{func(c *Config) { c.AccessLog = "STDOUT" }, `access_log: "STDOUT": write stdout (lower case, no spaces)`},
		{func(c *Config) { c.AccessLog = " stderr" }, `access_log: " stderr": write stderr (lower case, no spaces)`},
	} {
		cfg := pool1(PolicyFirst, "http://127.0.0.1:1")
		tc.mod(&cfg)
		if err := cfg.ValidateAndSetDefaults(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
}

// doHost sends one request with the given Host and returns its status.
func (h *harness) doHost(host, method, target string, hdr ...string) (int, string, error) {
	h.t.Helper()
	req, err := http.NewRequest(method, h.front.URL+target, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Host = host
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}
