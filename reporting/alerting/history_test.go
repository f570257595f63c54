package alerting

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// TestAlertHistory: GET /api/v1/alerts/history lists the alerts' firing
// and resolved transitions, newest first, with check= and limit=; it
// keeps at most history.max_entries of them, none older than
// history.max_age, in history.json beside the state file, so a restart
// keeps them; a history.json that cannot be read is logged naming it,
// moved aside, and the alerter starts with an empty history.
func TestAlertHistory(t *testing.T) {
	dir := t.TempDir()
	clock := &fakeClock{t: t0}
	st := &memStore{clock: clock.Now}
	logs := &lockedBuffer{}
	cfg := Config{Down: DownRule{For: 0}, DeadMan: DeadManRule{Disabled: true}, QuorumLost: QuorumLostRule{Disabled: true},
		History: HistoryConfig{MaxEntries: 5, MaxAge: 24 * time.Hour}}
	cfg.SetKeys([]string{"down.for"})
	var a *Alerter
	start := func() {
		var err error
		a, err = New(cfg, nil, st, Options{Now: clock.Now, StatePath: filepath.Join(dir, "alerts.json"),
			Log: slog.New(slog.NewTextHandler(logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.Close(context.Background()) })
	}
	step := func(states map[string]reporting.State) {
		t.Helper()
		now := clock.Add(15 * time.Second)
		for key, s := range states {
			check, target, _ := strings.Cut(key, "/")
			st.add(verdict(check, target, "eu", now, s, 15*time.Second))
		}
		if err := a.Evaluate(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	get := func(query string) (int, []HistoryEntry, string) {
		t.Helper()
		srv := httptest.NewServer(a.HistoryHandler())
		defer srv.Close()
		resp, err := http.Get(srv.URL + "/api/v1/alerts/history" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var h []HistoryEntry
		if resp.StatusCode == http.StatusOK {
			if err := json.Unmarshal(b, &h); err != nil {
				t.Fatalf("%s: %v", b, err)
			}
		}
		return resp.StatusCode, h, string(b)
	}
	list := func(h []HistoryEntry) string {
		var out []string
		for _, e := range h {
			out = append(out, e.At.Sub(t0).String()+" "+e.Event+" "+e.Check+"/"+e.Target)
		}
		return strings.Join(out, ", ")
	}

	start()
	step(map[string]reporting.State{"asset/origin-a": U, "api/edge": H})
	step(map[string]reporting.State{"asset/origin-a": U, "api/edge": U})
	step(map[string]reporting.State{"asset/origin-a": H, "api/edge": U})
	code, h, body := get("")
	if want := "45s resolved asset/origin-a, 30s firing api/edge, 15s firing asset/origin-a"; code != 200 || list(h) != want {
		t.Fatalf("history: %d %q, want %q (%s)", code, list(h), want, body)
	}
	if e := h[0]; e.Rule != RuleDown || e.AlertName != "VigilCheckDown" || e.Severity != SeverityPage ||
		!e.StartsAt.Equal(t0.Add(15*time.Second)) || e.Summary == "" || e.Fingerprint == "" {
		t.Fatalf("resolved entry %+v", e)
	}
	if code, h, _ = get("?check=api"); code != 200 || list(h) != "30s firing api/edge" {
		t.Fatalf("?check=api: %d %q", code, list(h))
	}
	if code, h, _ = get("?limit=1"); code != 200 || list(h) != "45s resolved asset/origin-a" {
		t.Fatalf("?limit=1: %d %q", code, list(h))
	}
	for q, want := range map[string]string{
		"?limit=0":   `limit: \"0\": want a number from 1 to 5 (alerting.history.max_entries)`,
		"?limit=x":   `limit: \"x\": want a number`,
		"?chekc=api": "chekc: unknown parameter",
	} {
		if code, _, body := get(q); code != 400 || !strings.Contains(body, want) {
			t.Errorf("%s: %d %s, want 400 %s", q, code, body, want)
		}
	}

	// A restart keeps them (history.json, 0600); max_entries keeps the
	// newest 5.
	_ = a.Close(context.Background())
	if fi, err := os.Stat(filepath.Join(dir, "history.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("history.json: %v %v", fi, err)
	}
	start()
	if _, h, _ = get(""); len(h) != 3 {
		t.Fatalf("after a restart: %q", list(h))
	}
	step(map[string]reporting.State{"asset/origin-a": U, "api/edge": H})
	step(map[string]reporting.State{"asset/origin-a": H, "api/edge": H})
	if _, h, _ = get(""); list(h) != "1m15s resolved asset/origin-a, 1m0s resolved api/edge, 1m0s firing asset/origin-a, "+
		"45s resolved asset/origin-a, 30s firing api/edge" {
		t.Fatalf("max_entries 5: %q", list(h))
	}
	// max_age: a day later, none is left.
	clock.Add(24*time.Hour + time.Second)
	if _, h, _ = get(""); len(h) != 0 {
		t.Fatalf("a day later, max_age 24h: %q", list(h))
	}

	// A file that cannot be read: logged naming it, moved aside, empty.
	_ = a.Close(context.Background())
	p := filepath.Join(dir, "history.json")
	if err := os.WriteFile(p, []byte(`{"version":1,"entries":[{"at":`), 0o600); err != nil {
		t.Fatal(err)
	}
	start()
	if _, h, _ = get(""); len(h) != 0 {
		t.Fatalf("from a corrupt file: %q", list(h))
	}
	if l := logs.String(); !strings.Contains(l, "alert history unusable, moved aside") || !strings.Contains(l, "file="+p) {
		t.Fatalf("log lacks the unusable history naming %s:\n%s", p, l)
	}
	if _, err := os.Stat(p + ".bad"); err != nil {
		t.Fatal(err)
	}
	step(map[string]reporting.State{"asset/origin-a": U})
	if _, h, _ = get(""); len(h) != 1 {
		t.Fatalf("after the corrupt file: %q", list(h))
	}
}

// TestHistoryConfig: history.max_entries and history.max_age have
// defaults, and bad values are errors naming the key.
func TestHistoryConfig(t *testing.T) {
	var c Config
	if err := c.ValidateAndSetDefaults(); err != nil || c.History.MaxEntries != 1000 || c.History.MaxAge != 7*24*time.Hour {
		t.Fatalf("defaults: %+v %v", c.History, err)
	}
	c = Config{History: HistoryConfig{MaxEntries: 100001, MaxAge: -time.Hour}}
	err := c.ValidateAndSetDefaults()
	if err == nil || !strings.Contains(err.Error(), "history.max_entries: 100001: must be 1 to 100000") ||
		!strings.Contains(err.Error(), "history.max_age: -1h0m0s: must be positive") {
		t.Fatalf("bad values: %v", err)
	}
	c = Config{}
	c.SetKeys([]string{"history.max_entries"})
	if err := c.ValidateAndSetDefaults(); err == nil || !strings.Contains(err.Error(), "history.max_entries") {
		t.Fatalf("explicit 0: %v", err)
	}
}
