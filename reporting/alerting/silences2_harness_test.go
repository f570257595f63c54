package alerting

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// silenceRig is an alerter whose down alerts fire on the first unhealthy
// verdict (dead_man and quorum_lost off, one evaluation an hour: tests
// evaluate themselves or kick Run), over a memStore on a fake clock from
// t0, notifying the webhook recorder "ops" (retries 5 ms apart), with its
// state in a temporary directory and its silences API served over HTTP
// with silenceToken.
type silenceRig struct {
	t     *testing.T
	clock *fakeClock
	st    *memStore
	hook  *recorder
	cfg   Config
	// src is what the alerter reads: st, unless an option wraps it.
	src       reporting.HistorySource
	statePath string
	a         *Alerter
	srv       *httptest.Server
}

// newSilenceRig starts a silenceRig; each option may change its config or
// source before the alerter starts.
func newSilenceRig(t *testing.T, opts ...func(*silenceRig)) *silenceRig {
	t.Helper()
	r := &silenceRig{t: t, clock: &fakeClock{t: t0}, hook: newRecorder(t),
		statePath: filepath.Join(t.TempDir(), "alerts.json")}
	r.st = &memStore{clock: r.clock.Now}
	r.src = r.st
	r.cfg = Config{EvaluationInterval: time.Hour, Down: DownRule{For: 0}, DeadMan: DeadManRule{Disabled: true},
		QuorumLost: QuorumLostRule{Disabled: true}, Retry: RetryConfig{Backoff: 5 * time.Millisecond},
		Receivers: []Receiver{{Name: "ops", Webhook: &WebhookConfig{URL: Secret(r.hook.srv.URL + "/hook")}}}}
	r.cfg.SetKeys([]string{"down.for"})
	for _, o := range opts {
		o(r)
	}
	r.a = r.start()
	// The handler of the alerter running now (restart swaps it).
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.a.SilencesHandler(func() string { return silenceToken }).ServeHTTP(w, req)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// start starts an alerter on the rig's config, source and state file.
func (r *silenceRig) start() *Alerter {
	r.t.Helper()
	a, err := New(r.cfg, nil, r.src, Options{Now: r.clock.Now, StatePath: r.statePath,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { _ = a.Close(context.Background()) })
	return a
}

// restart closes the alerter and starts another on the same state.
func (r *silenceRig) restart() {
	r.t.Helper()
	_ = r.a.Close(context.Background())
	r.a = r.start()
}

// call sends method path with body to the silences API, with the admin
// token unless noToken, and returns the status and the body.
func (r *silenceRig) call(method, path, body string, noToken ...bool) (int, string) {
	r.t.Helper()
	return silenceCall(r.t, r.srv.URL, method, path, body, len(noToken) == 0 || !noToken[0])
}

// silenceCall sends method path with body to the server at base, with
// the admin token silenceToken when token, and returns the status and
// the body, trimmed.
func silenceCall(t *testing.T, base, method, path, body string, token bool) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	if token {
		req.Header.Set("Authorization", "Bearer "+silenceToken)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// eval moves the clock 15 s on, publishes an unhealthy verdict of check
// for each target, evaluates and waits for the deliveries.
func (r *silenceRig) eval(check string, targets ...string) {
	r.t.Helper()
	now := r.clock.Add(15 * time.Second)
	for _, target := range targets {
		r.st.add(verdict(check, target, "eu", now, reporting.StateUnhealthy, 15*time.Second))
	}
	r.evaluate()
}

// evaluate evaluates once and waits for the deliveries.
func (r *silenceRig) evaluate() {
	r.t.Helper()
	if err := r.a.Evaluate(context.Background()); err != nil {
		r.t.Fatal(err)
	}
	r.flush()
}

// flush waits (up to 10 s) for the deliveries queued.
func (r *silenceRig) flush() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = r.a.Flush(ctx)
}

// notified lists the alerts of every notification received, as "firing
// origin-a", comma-separated.
func (r *silenceRig) notified() string {
	r.t.Helper()
	var out []string
	for _, p := range r.hook.webhooks(r.t) {
		for _, al := range p.Alerts {
			out = append(out, al.Status+" "+al.Target)
		}
	}
	return strings.Join(out, ",")
}
