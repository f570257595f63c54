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

// TestPartialSilenceSendsNothing: two alerts of one group fire and are
// notified; silencing one of them, and ending that silence, sends nothing
// (the group's set only shrank, then came back to what was notified), as
// in Alertmanager; a third alert that starts firing afterwards is notified
// at once, with the other two.
func TestPartialSilenceSendsNothing(t *testing.T) {
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
	t.Cleanup(func() { _ = a.Close(context.Background()) })
	srv := httptest.NewServer(a.SilencesHandler(func() string { return token }))
	defer srv.Close()
	do := func(method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = io.Copy(&b, resp.Body)
		return resp.StatusCode, b.String()
	}
	eval := func(targets ...string) {
		t.Helper()
		now := clock.Add(15 * time.Second)
		for _, target := range targets {
			st.add(verdict("multi", target, "eu", now, reporting.StateUnhealthy, 15*time.Second))
		}
		if err := a.Evaluate(context.Background()); err != nil {
			t.Fatal(err)
		}
		fctx, fcancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = a.Flush(fctx)
		fcancel()
	}
	sent := func() []string {
		var out []string
		for _, p := range hook.webhooks(t) {
			var ts []string
			for _, al := range p.Alerts {
				ts = append(ts, al.Target)
			}
			out = append(out, strings.Join(ts, "+"))
		}
		return out
	}
	eval("o1", "o2")
	if got := sent(); len(got) != 1 || got[0] != "o1+o2" {
		t.Fatalf("first notification: %q, want one listing o1 and o2", got)
	}
	code, body := do("POST", "/api/v1/silences", `{"check":"multi","target":"o2","for":"1h","by":"sre","why":"noisy"}`)
	if code != http.StatusCreated {
		t.Fatalf("POST: %d %s", code, body)
	}
	id := body[strings.Index(body, `"id":"`)+6:]
	id = id[:strings.Index(id, `"`)]
	eval("o1", "o2")
	eval("o1", "o2")
	if got := sent(); len(got) != 1 {
		t.Fatalf("after silencing o2: notifications %q, want none since the first", got[1:])
	}
	if code, _ := do("DELETE", "/api/v1/silences/"+id, ""); code != http.StatusNoContent {
		t.Fatalf("DELETE: %d", code)
	}
	eval("o1", "o2")
	if got := sent(); len(got) != 1 {
		t.Fatalf("after the silence ended: notifications %q, want none since the first", got[1:])
	}
	eval("o1", "o2", "o3")
	if got := sent(); len(got) != 2 || got[1] != "o1+o2+o3" {
		t.Fatalf("after o3 fired: %q, want a second notification listing o1, o2 and o3", got)
	}
}
