package store_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// A vigil.db whose signals table predates out and out_by opens, keeps its
// signals (read as not out) and stores whether an origin was out from then on.
func TestOpensSignalsFromBeforeOut(t *testing.T) {
	dir := t.TempDir()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond)
	for _, q := range []string{
		`CREATE TABLE signals (id INTEGER PRIMARY KEY, pool TEXT NOT NULL, origin TEXT NOT NULL, region TEXT NOT NULL, vantage TEXT NOT NULL,
	at INTEGER NOT NULL, window INTEGER NOT NULL, requests INTEGER NOT NULL, status_5xx INTEGER NOT NULL,
	conn_errors INTEGER NOT NULL, timeouts INTEGER NOT NULL, p95 INTEGER NOT NULL, ejected INTEGER NOT NULL, reason TEXT NOT NULL)`,
		`INSERT INTO signals (pool, origin, region, vantage, at, window, requests, status_5xx, conn_errors, timeouts, p95, ejected, reason)
	VALUES ('web', 'old', 'eu', 'p1', ?, 10000000000, 5, 5, 0, 0, 0, 1, 'consecutive_5xx')`,
	} {
		var args []any
		if q[0] == 'I' {
			args = append(args, old.UnixNano())
		}
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s := open(t, dir, store.Options{})
	at := time.Now().UTC().Truncate(time.Millisecond)
	if err := s.PublishSignals(context.Background(), []reporting.Signal{{Pool: "web", Origin: "new", Region: "eu", Vantage: "p1",
		At: at, Window: 10 * time.Second, Out: true, OutBy: "verdict_down"}}); err != nil {
		t.Fatalf("PublishSignals into the upgraded file: %v", err)
	}
	got, err := s.Signals(context.Background(), time.Time{})
	if err != nil || len(got) != 2 {
		t.Fatalf("Signals = %+v, %v; want the old row and the new one", got, err)
	}
	if got[0].Origin != "old" || !got[0].Ejected || got[0].Reason != "consecutive_5xx" || got[0].Out || got[0].OutBy != "" {
		t.Errorf("old signal = %+v; want it kept, ejected, with out false", got[0])
	}
	if got[1].Origin != "new" || got[1].Ejected || !got[1].Out || got[1].OutBy != "verdict_down" {
		t.Errorf("new signal = %+v; want out by verdict_down, not ejected", got[1])
	}
}
