package alerting

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// pingServer is a real HTTP server standing in for healthchecks.io: it
// records the path, method and Authorization header of every request.
type pingServer struct {
	srv    *httptest.Server
	mu     sync.Mutex
	got    []string
	status int
}

func newPingServer(t *testing.T) *pingServer {
	p := &pingServer{status: http.StatusOK}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.got = append(p.got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		st := p.status
		p.mu.Unlock()
		w.WriteHeader(st)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *pingServer) pings() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.got...)
}

// waitPings waits (at most 5s) until a's ping in flight, if any, is done,
// and returns the server's pings.
func (p *pingServer) waitPings(t *testing.T, a *Alerter) []string {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(2 * time.Millisecond) {
		a.hb.mu.Lock()
		busy := a.hb.inflight
		a.hb.mu.Unlock()
		if !busy {
			break
		}
	}
	return p.pings()
}

// TestHeartbeat: alerting.heartbeat pings its URL after a successful
// evaluation, at most every interval; while evaluations fail (the store
// is down) it pings nothing, so the external service alerts, or the
// fail_url when one is set; the first success after pings the URL again
// at once. A failing ping is logged without the URL's secret or the
// headers.
func TestHeartbeat(t *testing.T) {
	for _, withFail := range []bool{false, true} {
		name := "no fail_url"
		if withFail {
			name = "fail_url"
		}
		t.Run(name, func(t *testing.T) {
			ps := newPingServer(t)
			clock := &fakeClock{t: t0}
			st := &memStore{clock: clock.Now}
			var logs bytes.Buffer
			cfg := Config{Heartbeat: HeartbeatConfig{URL: Secret(ps.srv.URL + "/ping/uuid-secret"), Interval: time.Minute,
				Headers: map[string]Secret{"Authorization": "Bearer hb-token"}}}
			if withFail {
				cfg.Heartbeat.FailURL = Secret(ps.srv.URL + "/ping/uuid-secret/fail")
			}
			a, err := New(cfg, nil, st, Options{Now: clock.Now, Log: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close(context.Background())
			eval := func(d time.Duration) {
				clock.Add(d)
				_ = a.Evaluate(context.Background())
				ps.waitPings(t, a)
			}
			eval(0)
			ok := "GET /ping/uuid-secret Bearer hb-token"
			if got := ps.waitPings(t, a); strings.Join(got, ",") != ok {
				t.Fatalf("after the first evaluation: pings %q", got)
			}
			for range 3 { // 45s: within the interval
				eval(15 * time.Second)
			}
			if got := ps.waitPings(t, a); len(got) != 1 {
				t.Fatalf("within the interval: pings %q, want 1", got)
			}
			eval(15 * time.Second) // 60s
			if got := ps.waitPings(t, a); len(got) != 2 || got[1] != ok {
				t.Fatalf("after the interval: pings %q", got)
			}
			// The store fails for 3 minutes.
			st.mu.Lock()
			st.err = errors.New("influxdb: connection refused")
			st.mu.Unlock()
			for range 12 {
				eval(15 * time.Second)
			}
			want := 2
			if withFail {
				want = 5 // one per minute: at +15s, +75s, +135s
			}
			got := ps.waitPings(t, a)
			if len(got) != want {
				t.Fatalf("while evaluations fail: pings %q, want %d", got, want)
			}
			for _, p := range got[2:] {
				if p != "GET /ping/uuid-secret/fail Bearer hb-token" {
					t.Fatalf("while evaluations fail: ping %q", p)
				}
			}
			st.mu.Lock()
			st.err = nil
			st.mu.Unlock()
			eval(15 * time.Second)
			if got := ps.waitPings(t, a); len(got) != want+1 || got[want] != ok {
				t.Fatalf("evaluations work again: pings %q", got)
			}
			// The service answers 500: logged, without secrets.
			ps.mu.Lock()
			ps.status = http.StatusInternalServerError
			ps.mu.Unlock()
			eval(time.Minute)
			ps.waitPings(t, a)
			for end := time.Now().Add(5 * time.Second); time.Now().Before(end) && !strings.Contains(logs.String(), "heartbeat ping failed"); {
				time.Sleep(5 * time.Millisecond)
			}
			out := logs.String()
			if !strings.Contains(out, "heartbeat ping failed") || !strings.Contains(out, "status 500") {
				t.Fatalf("no log line for the failed ping:\n%s", out)
			}
			if strings.Contains(out, "uuid-secret") || strings.Contains(out, "hb-token") {
				t.Fatalf("a secret in the logs:\n%s", out)
			}
		})
	}
}

// TestHeartbeatConfig: defaults, and errors naming the key.
func TestHeartbeatConfig(t *testing.T) {
	c := Config{Heartbeat: HeartbeatConfig{URL: "https://hc-ping.com/x"}}
	if err := c.ValidateAndSetDefaults(); err != nil || c.Heartbeat.Interval != time.Minute || c.Heartbeat.Method != "GET" || c.Heartbeat.Timeout != 10*time.Second {
		t.Fatalf("defaults: %v %+v", err, c.Heartbeat)
	}
	for _, tt := range []struct {
		hb   HeartbeatConfig
		want string
	}{
		{HeartbeatConfig{FailURL: "https://hc-ping.com/x/fail"}, "heartbeat.url: "},
		{HeartbeatConfig{URL: "hc-ping.com/secret"}, "heartbeat.url: "},
		{HeartbeatConfig{URL: "https://hc-ping.com/x", Method: "PUT"}, `heartbeat.method: "PUT": want GET or POST`},
		{HeartbeatConfig{URL: "https://hc-ping.com/x", Interval: -time.Second}, "heartbeat.interval: "},
	} {
		c := Config{Heartbeat: tt.hb}
		err := c.ValidateAndSetDefaults()
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "secret") {
			t.Errorf("%+v: %v, want %q", tt.hb, err, tt.want)
		}
	}
}
