package proxy

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

var ridForm = regexp.MustCompile(`^[0-9a-f]{32}$`)

// TestRequestID: every request gets an ID (X-Request-Id by default): the
// origin gets it, the client gets the same one back on the origin's answer
// (over an ID the origin sent under that name) and on the proxy's own
// answers, the access log and the failed-try log carry it, and every
// request's differs. A client's ID is replaced unless
// request_id_from_client, and then only a well-formed one is kept. Both
// engines.
func TestRequestID(t *testing.T) {
	for _, eng := range []string{EngineFast, EngineStdlib} {
		t.Run(eng, func(t *testing.T) {
			var mu sync.Mutex
			var seen []string
			origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				seen = append(seen, strings.Join(r.Header.Values("X-Request-Id"), "|"))
				mu.Unlock()
				w.Header().Set("X-Request-Id", "origin-own")
				if r.URL.Path == "/fail" {
					w.WriteHeader(503)
					return
				}
				w.Write([]byte("ok"))
			}))
			defer origin.Close()
			path := filepath.Join(t.TempDir(), "access.log")
			cfg := pool1(PolicyFirst, origin.URL)
			cfg.Pools[0].Hosts = []string{"www.example.test"}
			cfg.Pools[0].Retry = RetryConfig{Tries: 1}
			cfg.AccessLog = path
			logs := &tryLogs{}
			h := startLog(t, cfg, nil, false, eng, slog.New(slog.NewTextHandler(logs, nil)))
			doHost := func(host, target string, hdr ...string) (int, string, http.Header) {
				t.Helper()
				req, _ := http.NewRequest("GET", h.front.URL+target, nil)
				req.Host = host
				for i := 0; i+1 < len(hdr); i += 2 {
					req.Header.Set(hdr[i], hdr[i+1])
				}
				resp, err := h.client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode, "", resp.Header
			}

			var ids []string
			for i := 0; i < 3; i++ {
				code, _, hdr := doHost("www.example.test", "/x", "X-Request-Id", "client-sent-id")
				if code != 200 {
					t.Fatalf("GET: %d", code)
				}
				ids = append(ids, strings.Join(hdr.Values("X-Request-Id"), "|"))
			}
			_, _, failHdr := doHost("www.example.test", "/fail")
			code, _, refusedHdr := doHost("nowhere.example.test", "/n")
			if code != 421 {
				t.Fatalf("unknown host: %d", code)
			}
			ids = append(ids, failHdr.Get("X-Request-Id"), refusedHdr.Get("X-Request-Id"))
			for i, id := range ids {
				if !ridForm.MatchString(id) {
					t.Fatalf("answer %d: X-Request-Id %q, want one 32-hex-digit ID (the client's and the origin's replaced)", i, id)
				}
				for _, other := range ids[:i] {
					if other == id {
						t.Fatalf("two requests share the ID %s", id)
					}
				}
			}
			mu.Lock()
			if len(seen) != 4 || seen[0] != ids[0] || seen[1] != ids[1] || seen[3] != ids[3] {
				t.Errorf("the origin got IDs %q, the clients %q", seen, ids)
			}
			mu.Unlock()
			if l := logs.lines("try failed", "request_id="+ids[3]); len(l) != 1 {
				t.Errorf("the failed try's log line does not name request_id %s: %q", ids[3], logs.lines("try failed"))
			}
			h.p.closeAccessLog()
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
			if len(lines) != 5 {
				t.Fatalf("%d access log lines, want 5", len(lines))
			}
			for i, l := range lines {
				var m map[string]any
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					t.Fatal(err)
				}
				if m["request_id"] != ids[i] {
					t.Errorf("access log line %d: request_id %v, want %s", i, m["request_id"], ids[i])
				}
			}
		})
	}
}

// TestRequestIDFromClientAndOff: with request_id_from_client a well-formed
// client ID is kept end to end and a malformed one replaced; with
// request_id: off the proxy adds none and passes the client's on.
func TestRequestIDFromClientAndOff(t *testing.T) {
	var mu sync.Mutex
	var got string
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = strings.Join(r.Header.Values("X-Correlation-Id"), "|")
		mu.Unlock()
	}))
	defer origin.Close()
	originGot := func() string { mu.Lock(); defer mu.Unlock(); return got }

	cfg := pool1(PolicyFirst, origin.URL)
	cfg.RequestID, cfg.RequestIDFromClient = "x-correlation-id", true
	h := start(t, cfg, nil, false)
	_, _, hdr := h.do("GET", "/", "", "X-Correlation-Id", "cdn-7f3a:edge=1")
	if originGot() != "cdn-7f3a:edge=1" || hdr.Get("X-Correlation-Id") != "cdn-7f3a:edge=1" {
		t.Errorf("a well-formed client ID: origin got %q, client %q; want it kept", originGot(), hdr.Get("X-Correlation-Id"))
	}
	for _, bad := range []string{"has space", "<script>", strings.Repeat("a", 129)} {
		_, _, hdr = h.do("GET", "/", "", "X-Correlation-Id", bad)
		if g := originGot(); !ridForm.MatchString(g) || hdr.Get("X-Correlation-Id") != g {
			t.Errorf("client ID %q: origin got %q, client %q; want a new ID on both", bad, g, hdr.Get("X-Correlation-Id"))
		}
	}

	cfg = pool1(PolicyFirst, origin.URL)
	cfg.RequestID = RequestIDOff
	h = start(t, cfg, nil, false)
	_, _, hdr = h.do("GET", "/", "", "X-Correlation-Id", "client")
	if originGot() != "client" || hdr.Get("X-Request-Id") != "" {
		t.Errorf("request_id off: origin got %q, client X-Request-Id %q; want the client's header untouched and none added", originGot(), hdr.Get("X-Request-Id"))
	}
}

func TestRequestIDConfig(t *testing.T) {
	for in, want := range map[string]string{
		"Host":            "request_id: Host is a header the proxy or HTTP itself uses",
		"x-forwarded-for": "request_id: X-Forwarded-For is a header the proxy or HTTP itself uses",
		"Request ID":      `request_id: "Request ID" is not a header name`,
	} {
		cfg := pool1(PolicyFirst, "http://127.0.0.1:1")
		cfg.RequestID = in
		if err := cfg.ValidateAndSetDefaults(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
	cfg := pool1(PolicyFirst, "http://127.0.0.1:1")
	if err := cfg.ValidateAndSetDefaults(); err != nil || cfg.RequestID != "X-Request-Id" {
		t.Fatalf("default: %q, %v", cfg.RequestID, err)
	}
}
