package canary

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// notingStore is a store whose reads note a line (reporting.NoteRead), as
// the embedded store read through reporting.WithWaiting does while it
// refuses writes.
type notingStore struct {
	reporting.HistorySource
	note string
}

func (n notingStore) Verdicts(ctx context.Context, maxAge time.Duration) ([]reporting.Verdict, error) {
	reporting.NoteRead(ctx, n.note)
	return n.HistorySource.Verdicts(ctx, maxAge)
}

func (n notingStore) History(ctx context.Context, q reporting.HistoryQuery) ([]reporting.Verdict, error) {
	reporting.NoteRead(ctx, n.note)
	return n.HistorySource.History(ctx, q)
}

// TestAPISendsReadNotes: what the reads of /api/v1/verdicts and of the
// history note comes in the Vigil-Notice header (the JSON arrays keep
// their form); without notes there is no such header.
func TestAPISendsReadNotes(t *testing.T) {
	st, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := testConfig(t, map[string]string{"o1": "http://127.0.0.1:1"},
		CheckConfig{Name: "home", Targets: []string{"o1"}, Interval: time.Hour, HTTP: &checks.HTTPSpec{Path: "/"}})
	c, err := New(cfg, compile(t, cfg), Options{Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-time.Minute)
	if err := st.Publish(context.Background(), []reporting.Verdict{{Check: "home", Target: "o1", Region: "test-region",
		Vantage: "v1", State: reporting.StateHealthy, OK: true, At: at, Expires: at.Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	const note = "store.embedded refuses writes since 2026-12-01T10:00:00Z: disk I/O error (778). The latest states shown include verdicts waiting in this process's memory for retry; history and uptime are incomplete from 2026-12-01T10:00:00Z."
	for _, tc := range []struct {
		note, want string
	}{{note, note}, {"", ""}} {
		srv := httptest.NewServer(c.Handler(notingStore{st, tc.note}))
		for _, path := range []string{"/api/v1/verdicts", "/api/v1/checks/home/history"} {
			resp, err := srv.Client().Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			var vs []reporting.Verdict
			err = json.NewDecoder(resp.Body).Decode(&vs)
			resp.Body.Close()
			if resp.StatusCode != 200 || err != nil || len(vs) != 1 {
				t.Errorf("GET %s = %d, %d verdicts, %v: want 200 and the JSON array of one verdict", path, resp.StatusCode, len(vs), err)
			}
			if got := resp.Header.Get(reporting.ReadNotesHeader); got != tc.want {
				t.Errorf("GET %s with note %q: %s %q, want %q", path, tc.note, reporting.ReadNotesHeader, got, tc.want)
			}
		}
		srv.Close()
	}
}
