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

// A vigil.db written before the cert_expiry, proto, instance and since
// columns existed opens, keeps its rows (read with no instance and an
// unknown since, not 1970) and stores the fields from then on.
func TestOpensDatabaseFromBeforeNewColumns(t *testing.T) {
	dir := t.TempDir()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	cols := `check_name TEXT NOT NULL, target TEXT NOT NULL, tier TEXT NOT NULL, region TEXT NOT NULL, vantage TEXT NOT NULL,
	state TEXT NOT NULL, ok INTEGER NOT NULL, cause TEXT NOT NULL, err TEXT NOT NULL, status_code INTEGER NOT NULL,
	ttfb INTEGER NOT NULL, duration INTEGER NOT NULL, dns INTEGER NOT NULL, connect INTEGER NOT NULL, tls INTEGER NOT NULL, transfer INTEGER NOT NULL,
	streak INTEGER NOT NULL, interval INTEGER NOT NULL, at INTEGER NOT NULL, expires INTEGER NOT NULL,
	artifact TEXT NOT NULL, url TEXT NOT NULL`
	old := time.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond)
	for _, q := range []string{
		`CREATE TABLE verdicts (id INTEGER PRIMARY KEY, ` + cols + `)`,
		`CREATE TABLE latest (` + cols + `, PRIMARY KEY (check_name, target, region, vantage)) WITHOUT ROWID`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	for _, tbl := range []string{"verdicts", "latest"} {
		if _, err := db.Exec(`INSERT INTO `+tbl+` (check_name, target, tier, region, vantage, state, ok, cause, err, status_code,
			ttfb, duration, dns, connect, tls, transfer, streak, interval, at, expires, artifact, url)
			VALUES ('old', 't', 'deep', 'r', 'v', 'healthy', 1, '', '', 200, 1, 2, 0, 0, 0, 0, 3, 30000000000, ?, 0, '', '')`,
			old.UnixNano()); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s := open(t, dir, store.Options{})
	at := time.Now().UTC().Truncate(time.Millisecond)
	cert := at.Add(30 * 24 * time.Hour).Truncate(time.Second)
	if err := s.Publish(context.Background(), []reporting.Verdict{{Check: "new", Target: "t", Region: "r", Vantage: "v",
		State: reporting.StateHealthy, OK: true, StatusCode: 200, Proto: "HTTP/2.0", At: at, CertExpiry: cert,
		Instance: "host-1a2b3c4d", Since: at.Add(-time.Hour)}}); err != nil {
		t.Fatalf("Publish into the upgraded file: %v", err)
	}
	got, err := s.Verdicts(context.Background(), 0)
	if err != nil || len(got) != 2 {
		t.Fatalf("Verdicts = %+v, %v; want the old row and the new one", got, err)
	}
	if got[0].Check != "new" || got[0].Proto != "HTTP/2.0" || !got[0].CertExpiry.Equal(cert) || got[0].Instance != "host-1a2b3c4d" {
		t.Errorf("new verdict = check %q proto %q cert %v instance %q; want new, HTTP/2.0, %v, host-1a2b3c4d",
			got[0].Check, got[0].Proto, got[0].CertExpiry, got[0].Instance, cert)
	}
	if !got[0].Since.Equal(at.Add(-time.Hour)) {
		t.Errorf("new verdict since %v, want %v", got[0].Since, at.Add(-time.Hour))
	}
	if !got[1].Since.IsZero() {
		t.Errorf("old verdict since %v, want the zero time (unknown)", got[1].Since)
	}
	if got[1].Check != "old" || got[1].Proto != "" || got[1].Instance != "" || len(got[1].Duplicates) > 0 || !got[1].CertExpiry.IsZero() || !got[1].At.Equal(old) || got[1].Streak != 3 {
		t.Errorf("old verdict = %+v; want it kept, with no protocol and no certificate expiry", got[1])
	}
}
