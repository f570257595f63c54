package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// breaksALine is what a line-oriented reader of /healthz may split on.
func breaksALine(r rune) bool {
	return r < 0x20 || r >= 0x7f && r <= 0x9f || r == '\u2028' || r == '\u2029'
}

// healthLines is a /healthz or /readyz body as its lines, checked for
// control characters and line separators inside them.
func healthLines(t *testing.T, what, body string) []string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	for _, l := range lines {
		if strings.ContainsFunc(l, breaksALine) {
			t.Errorf("%s: a line has control characters or line separators: %q", what, l)
		}
	}
	return lines
}

// An alert receiver answering 500 with a multi-line body (an echo of the
// request, markup, lines reading "ok" and "warning: …") is one reason on
// /healthz, one warning on /readyz: the body cannot add lines.
func TestHealthzReceiverBodyIsOneLine(t *testing.T) {
	body := "<script>alert(1)</script>\r\nPOST /fail/pd HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nok\nwarning: fake\u2028ok\u2029\tready"
	rcv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(body))
	})}
	rcvLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go rcv.Serve(rcvLn)
	defer rcv.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close() // nothing listens there: the check fails, the alert fires

	a := startBadApp(t, fmt.Sprintf(`
agent: {region: r1, data_dir: %s}
defaults: {interval: 300ms, timeout: 250ms, rise: 1, fall: 1, jitter: "0%%"}
targets: [{name: gone, url: "http://%s/"}]
checks: [{name: api, targets: [gone], http: {path: /}}]
alerting:
  evaluation_interval: 1s
  down: {for: 1s}
  retry: {attempts: 1, timeout: 1s}
  receivers:
    - name: pd
      webhook: {url: "http://%s/fail/pd"}
`, t.TempDir(), closedAddr, rcvLn.Addr().String()), nil, nil)
	defer a.stop()

	var code int
	var health string
	waitFor(t, 20*time.Second, "the failing receiver on /healthz", func() bool {
		code, health = do(t, "GET", a.base+"/healthz", "", nil)
		return strings.Contains(health, "alert receiver pd failing")
	})
	want := "alert receiver pd failing: POST http://" + rcvLn.Addr().String() + "/…: status 500: " + // a webhook's path is a secret
		"<script>alert(1)</script> POST *** HTTP/1.1 Host: 127.0.0.1 ok warning: fake ok ready"
	if code != http.StatusServiceUnavailable {
		t.Errorf("/healthz status %d, want 503", code)
	}
	if lines := healthLines(t, "/healthz", health); len(lines) != 1 || lines[0] != want {
		t.Errorf("/healthz has %d lines, want the one reason %q:\n%s", len(lines), want, health)
	}
	code, ready := do(t, "GET", a.base+"/readyz", "", nil)
	if code != http.StatusOK {
		t.Errorf("/readyz status %d, want 200", code)
	}
	if lines := healthLines(t, "/readyz", ready); len(lines) != 2 || lines[0] != "ready" || lines[1] != "warning: "+want {
		t.Errorf("/readyz has %d lines, want \"ready\" and the one warning %q:\n%s", len(lines), "warning: "+want, ready)
	}
}

// failingSink refuses every batch with a multi-line error.
type failingSink struct{ err error }

func (s failingSink) Publish(context.Context, []reporting.Verdict) error { return s.err }

// Every reason is made one line where /healthz assembles them, whatever
// its source: here a sink whose error has newlines, a CR, a tab and
// Unicode line and paragraph separators.
func TestHealthzReasonFromAnySourceIsOneLine(t *testing.T) {
	fan := reporting.NewFanoutWith(reporting.FanoutOptions{Log: discardLogger(), RetryMin: time.Hour, RetryMax: time.Hour},
		reporting.NamedSink{Name: "disk", Sink: failingSink{errors.New("write refused:\nok\r\nwarning: fake\u2028ok\u2029\tx\x00y")}})
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = fan.Close(ctx)
	}()
	if err := fan.Publish(context.Background(), []reporting.Verdict{{Check: "c", Target: "t", Region: "r", At: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the sink failing", func() bool { return fan.Health() != nil })

	a := &app{cfg: &File{}, fan: fan}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", a.healthz)
	mux.HandleFunc("GET /readyz", a.readyz)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	code, health := do(t, "GET", srv.URL+"/healthz", "", nil)
	if code != http.StatusServiceUnavailable {
		t.Errorf("/healthz status %d, want 503", code)
	}
	lines := healthLines(t, "/healthz", health)
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "sink disk: writes failing since ") ||
		!strings.HasSuffix(lines[0], ": write refused: ok warning: fake ok x y") {
		t.Errorf("/healthz has %d lines, want the sink's one reason:\n%s", len(lines), health)
	}
	_, ready := do(t, "GET", srv.URL+"/readyz", "", nil)
	if lines := healthLines(t, "/readyz", ready); len(lines) != 2 || lines[0] != "ready" || !strings.HasPrefix(lines[1], "warning: sink disk: ") {
		t.Errorf("/readyz has %d lines, want \"ready\" and the sink's one warning:\n%s", len(lines), ready)
	}
}
