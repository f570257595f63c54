package alerting

import (
	"context"
	"encoding/json"
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

// TestSilenceTakesEffectAtOnce: a silence added with POST /api/v1/silences
// shows on the firing alerts (GET /api/v1/alerts serves Active) before
// the answer, without waiting for an evaluation, and its history says
// so; ending it with DELETE unsilences them at once too, and an alert
// that started firing inside the silence is notified within moments, by
// an evaluation Run makes at once, not evaluation_interval (here 1h)
// later.
func TestSilenceTakesEffectAtOnce(t *testing.T) {
	const token = "admin-token-0123456789"
	clock := &fakeClock{t: t0}
	st := &memStore{clock: clock.Now}
	hook := newRecorder(t)
	cfg := Config{EvaluationInterval: time.Hour, Down: DownRule{For: 0}, DeadMan: DeadManRule{Disabled: true},
		QuorumLost: QuorumLostRule{Disabled: true}, Retry: RetryConfig{Backoff: 5 * time.Millisecond},
		Receivers: []Receiver{{Name: "ops", Webhook: &WebhookConfig{URL: Secret(hook.srv.URL + "/hook")}}}}
	cfg.SetKeys([]string{"down.for"})
	a, err := New(cfg, nil, st, Options{Now: clock.Now, StatePath: filepath.Join(t.TempDir(), "alerts.json"),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-ran
		_ = a.Close(context.Background())
	})
	srv := httptest.NewServer(a.SilencesHandler(func() string { return token }))
	defer srv.Close()
	hist := httptest.NewServer(a.HistoryHandler())
	defer hist.Close()
	do := func(method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	notified := func() string {
		var out []string
		for _, p := range hook.webhooks(t) {
			for _, al := range p.Alerts {
				out = append(out, al.Status+" "+al.Target)
			}
		}
		return strings.Join(out, ",")
	}
	waitNotified := func(want string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for notified() != want {
			if time.Now().After(deadline) {
				t.Fatalf("notified %q, want %q within 5s", notified(), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	silenced := func() map[string]string {
		m := map[string]string{}
		for _, al := range a.Active() {
			m[al.Target] = al.Silenced
		}
		return m
	}

	st.add(verdict("asset", "origin-a", "eu", t0, reporting.StateUnhealthy, 15*time.Second))
	go func() { a.Run(ctx); close(ran) }()
	waitNotified("firing origin-a")

	code, body := do("POST", "/api/v1/silences", `{"check":"asset","for":"1h","by":"alice","why":"deploy"}`)
	var s Silence
	if code != http.StatusCreated || json.Unmarshal([]byte(body), &s) != nil {
		t.Fatalf("POST: %d %s", code, body)
	}
	// No evaluation since: the alert shows silenced already.
	if got := silenced()["origin-a"]; got != s.name() {
		t.Fatalf("right after POST: origin-a silenced %q, want %q", got, s.name())
	}
	// origin-b fires inside the silence: nothing is notified.
	now := clock.Add(15 * time.Second)
	for _, target := range []string{"origin-a", "origin-b"} {
		st.add(verdict("asset", target, "eu", now, reporting.StateUnhealthy, 15*time.Second))
	}
	if err := a.Evaluate(context.Background()); err != nil {
		t.Fatal(err)
	}
	fctx, fcancel := context.WithTimeout(context.Background(), 10*time.Second)
	_ = a.Flush(fctx)
	fcancel()
	if got := notified(); got != "firing origin-a" {
		t.Fatalf("inside the silence: notified %q", got)
	}
	if code, _ := do("DELETE", "/api/v1/silences/"+s.ID, ""); code != http.StatusNoContent {
		t.Fatalf("DELETE: %d", code)
	}
	if got := silenced(); got["origin-a"] != "" || got["origin-b"] != "" || len(got) != 2 {
		t.Fatalf("right after DELETE: %v, want origin-a and origin-b firing unsilenced", got)
	}
	// Run evaluates at once: origin-b, which fired inside the silence, is
	// notified (with origin-a, its group's other firing alert).
	waitNotified("firing origin-a,firing origin-a,firing origin-b")

	resp, err := http.Get(hist.URL + "/api/v1/alerts/history?check=asset")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h []HistoryEntry
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range h {
		got = append(got, e.Event+" "+e.Target+" "+e.Silenced)
	}
	want := []string{
		"unsilenced origin-b " + s.name(),
		"unsilenced origin-a " + s.name(),
		"firing origin-b " + s.name(),
		"silenced origin-a " + s.name(),
		"firing origin-a ",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("history:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
