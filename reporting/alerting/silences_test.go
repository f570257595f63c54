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

// TestSilencesAPI: POST /api/v1/silences silences a check (or one of its
// targets) for a while without a config change: its alerts are still
// evaluated and listed, with silenced naming the silence, and notify
// nobody; GET lists the silences, DELETE ends one, and they survive a
// restart (silences.json beside alerts.json). Writes need the admin token.
func TestSilencesAPI(t *testing.T) {
	const token = "admin-token-0123456789"
	dir := t.TempDir()
	clock := &fakeClock{t: t0}
	st := &memStore{clock: clock.Now}
	hook := newRecorder(t)
	cfg := Config{Down: DownRule{For: 0}, DeadMan: DeadManRule{Disabled: true}, QuorumLost: QuorumLostRule{Disabled: true},
		Retry:     RetryConfig{Backoff: 5 * time.Millisecond},
		Receivers: []Receiver{{Name: "ops", Webhook: &WebhookConfig{URL: Secret(hook.srv.URL + "/hook")}}}}
	cfg.SetKeys([]string{"down.for"})
	start := func() *Alerter {
		a, err := New(cfg, nil, st, Options{Now: clock.Now, StatePath: filepath.Join(dir, "alerts.json"),
			Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.Close(context.Background()) })
		return a
	}
	a := start()
	srv := httptest.NewServer(a.SilencesHandler(func() string { return token }))
	defer srv.Close()
	do := func(method, path, tok, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	step := func(states map[string]reporting.State) {
		t.Helper()
		now := clock.Add(15 * time.Second)
		for target, s := range states {
			st.add(verdict("asset", target, "eu", now, s, 15*time.Second))
		}
		if err := a.Evaluate(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Flush(ctx)
	}
	notified := func() []string {
		var out []string
		for _, p := range hook.webhooks(t) {
			for _, al := range p.Alerts {
				out = append(out, al.Status+" "+al.Target)
			}
		}
		return out
	}

	if code, _ := do("POST", "/api/v1/silences", "", `{"check":"asset","for":"1h","by":"alice","why":"x"}`); code != http.StatusUnauthorized {
		t.Fatalf("POST without the token: %d", code)
	}
	if code, body := do("POST", "/api/v1/silences", token, `{"check":"asset","for":"200h","by":""}`); code != http.StatusBadRequest ||
		!strings.Contains(body, "by: required") || !strings.Contains(body, "why: required") || !strings.Contains(body, "for: 200h0m0s: must be above 0 and at most 7d") {
		t.Fatalf("bad POST: %d %s", code, body)
	}
	code, body := do("POST", "/api/v1/silences", token, `{"check":"asset","target":"origin-b","for":"2h","by":"alice","why":"rebuilding origin-b"}`)
	var sb Silence
	if code != http.StatusCreated || json.Unmarshal([]byte(body), &sb) != nil || sb.ID == "" || !sb.EndsAt.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("POST: %d %s", code, body)
	}
	// origin-b is silenced, origin-a is not.
	step(map[string]reporting.State{"origin-a": U, "origin-b": U})
	if got := strings.Join(notified(), ","); got != "firing origin-a" {
		t.Fatalf("notified %q, want origin-a only", got)
	}
	for _, al := range a.Active() {
		if want := al.Target == "origin-b"; (al.Silenced != "") != want ||
			want && al.Silenced != "silence "+sb.ID+" by alice until 2026-11-02T12:00:00Z: rebuilding origin-b" {
			t.Fatalf("active %s silenced %q", al.Target, al.Silenced)
		}
	}
	// A silence of the whole check; then a restart keeps both.
	code, body = do("POST", "/api/v1/silences", token, `{"check":"asset","for":"30m","by":"bob","why":"deploy"}`)
	var sa Silence
	if code != http.StatusCreated || json.Unmarshal([]byte(body), &sa) != nil {
		t.Fatalf("POST: %d %s", code, body)
	}
	_ = a.Close(context.Background())
	a = start()
	if got := a.Silences(); len(got) != 2 || got[0].ID != sa.ID || got[1].ID != sb.ID {
		t.Fatalf("after a restart: %+v", got)
	}
	srv.Config.Handler = a.SilencesHandler(func() string { return token })
	step(map[string]reporting.State{"origin-a": U, "origin-b": U, "origin-c": U})
	if got := strings.Join(notified(), ","); got != "firing origin-a" {
		t.Fatalf("with the check silenced: notified %q, want nothing new", got)
	}
	if code, body := do("GET", "/api/v1/silences", "", ""); code != http.StatusOK || !strings.Contains(body, `"why":"deploy"`) || !strings.Contains(body, `"target":"origin-b"`) {
		t.Fatalf("GET: %d %s", code, body)
	}
	// Ending the check's silence: origin-c notifies at the next evaluation.
	if code, _ := do("DELETE", "/api/v1/silences/"+sa.ID, token, ""); code != http.StatusNoContent {
		t.Fatalf("DELETE: %d", code)
	}
	if code, _ := do("DELETE", "/api/v1/silences/"+sa.ID, token, ""); code != http.StatusNotFound {
		t.Fatalf("DELETE again: %d", code)
	}
	step(map[string]reporting.State{"origin-a": U, "origin-b": U, "origin-c": U})
	if got := strings.Join(notified(), ","); !strings.Contains(got, "firing origin-c") || strings.Contains(got, "firing origin-b") {
		t.Fatalf("after DELETE: notified %q, want origin-c and not origin-b", got)
	}
}
