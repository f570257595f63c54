package proxy

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRequestIDNotInAnswers: with request_id_in_answers: false the origin
// still gets each request's ID and the access log and the failed-try log
// still carry it, but no answer does: not the origin's (which echoes the
// ID, as many frameworks do, or sends one of its own), not a 5xx passed
// through, not the proxy's own refusal, not a WebSocket upgrade. Both
// engines; with the key true (as by default) the answers carry it.
func TestRequestIDNotInAnswers(t *testing.T) {
	for _, eng := range []string{EngineFast, EngineStdlib} {
		for _, inAnswers := range []bool{false, true} {
			name := eng + "/in_answers_false"
			if inAnswers {
				name = eng + "/in_answers_true"
			}
			t.Run(name, func(t *testing.T) {
				var mu sync.Mutex
				var seen []string
				origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					id := strings.Join(r.Header.Values("X-Request-Id"), "|")
					mu.Lock()
					seen = append(seen, id)
					mu.Unlock()
					switch r.URL.Path {
					case "/echo":
						w.Header().Set("X-Request-Id", id)
					case "/own":
						w.Header().Set("X-Request-Id", "origin-own")
					case "/fail":
						w.WriteHeader(503)
						return
					case "/ws": // switches, echoing the ID, and hangs up
						conn, _, err := http.NewResponseController(w).Hijack()
						if err != nil {
							return
						}
						io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nX-Request-Id: "+id+"\r\n\r\n")
						conn.Close()
						return
					}
					io.WriteString(w, "ok")
				}))
				defer origin.Close()
				path := filepath.Join(t.TempDir(), "access.log")
				cfg := pool1(PolicyFirst, origin.URL)
				cfg.Pools[0].Hosts = []string{"www.example.test"}
				cfg.Pools[0].Retry = RetryConfig{Tries: 1}
				cfg.AccessLog = path
				cfg.RequestIDInAnswers = &inAnswers
				logs := &tryLogs{}
				h := startLog(t, cfg, nil, false, eng, slog.New(slog.NewTextHandler(logs, nil)))
				do := func(host, target string, hdr ...string) (int, http.Header) {
					t.Helper()
					if target == "/ws" {
						c, err := net.Dial("tcp", h.front.Listener.Addr().String())
						if err != nil {
							t.Fatal(err)
						}
						defer c.Close()
						c.SetDeadline(time.Now().Add(10 * time.Second))
						io.WriteString(c, "GET /ws HTTP/1.1\r\nHost: "+host+"\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
						br := bufio.NewReader(c)
						resp, err := http.ReadResponse(br, nil)
						if err != nil {
							t.Fatalf("upgrade: %v", err)
						}
						io.Copy(io.Discard, br) // to the end of the tunnel
						return resp.StatusCode, resp.Header
					}
					req, _ := http.NewRequest("GET", h.front.URL+target, nil)
					req.Host = host
					for i := 0; i+1 < len(hdr); i += 2 {
						req.Header.Set(hdr[i], hdr[i+1])
					}
					resp, err := h.client.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					return resp.StatusCode, resp.Header
				}
				var answers []string
				for _, tc := range []struct {
					host, path string
					code       int
					hdr        []string
				}{
					{"www.example.test", "/echo", 200, []string{"X-Request-Id", "client-sent"}},
					{"www.example.test", "/own", 200, nil},
					{"www.example.test", "/fail", 503, nil},
					{"nowhere.example.test", "/n", 421, nil}, // the proxy's own answer
					{"www.example.test", "/ws", 101, nil},
				} {
					code, hdr := do(tc.host, tc.path, tc.hdr...)
					if code != tc.code {
						t.Fatalf("GET %s %s: %d, want %d", tc.host, tc.path, code, tc.code)
					}
					answers = append(answers, strings.Join(hdr.Values("X-Request-Id"), "|"))
				}
				mu.Lock()
				got := append([]string(nil), seen...)
				mu.Unlock()
				if len(got) != 4 {
					t.Fatalf("the origin got %d requests (%q), want 4", len(got), got)
				}
				for i, id := range got {
					if !ridForm.MatchString(id) {
						t.Fatalf("origin request %d: X-Request-Id %q, want a 32-hex-digit ID", i, id)
					}
				}
				// The IDs the origin got, in the order of the answers (the
				// 421 reached no origin).
				want := []string{got[0], got[1], got[2], "", got[3]}
				for i, a := range answers {
					switch {
					case !inAnswers && a != "":
						t.Errorf("answer %d: X-Request-Id %q, want none (request_id_in_answers: false)", i, a)
					case inAnswers && i != 3 && a != want[i]:
						t.Errorf("answer %d: X-Request-Id %q, want the ID the origin got, %s", i, a, want[i])
					case inAnswers && i == 3 && !ridForm.MatchString(a):
						t.Errorf("the proxy's 421: X-Request-Id %q, want an ID", a)
					}
				}
				if l := logs.lines("try failed", "request_id="+got[2]); len(l) != 1 {
					t.Errorf("the failed try's log line does not name request_id %s: %q", got[2], logs.lines("try failed"))
				}
				eventually(t, "5 access log lines", func() bool {
					b, _ := os.ReadFile(path)
					return strings.Count(string(b), "\n") >= 5
				})
				h.p.closeAccessLog()
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				var logged []string
				for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
					var m map[string]any
					if err := json.Unmarshal([]byte(l), &m); err != nil {
						t.Fatal(err)
					}
					if m["status"] != float64(421) {
						id, _ := m["request_id"].(string)
						logged = append(logged, id)
					}
				}
				if strings.Join(logged, " ") != strings.Join(got, " ") {
					t.Errorf("access log request_ids %q, want the IDs the origin got, %q", logged, got)
				}
			})
		}
	}
}
