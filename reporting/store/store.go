// Package store is vigil's embedded verdict store: one SQLite file
// (<data_dir>/vigil.db, pure-Go modernc.org/sqlite) that keeps raw verdicts
// and signals for Options.Retention (default 7 days) and per-minute rollups
// for Options.RollupRetention (default 35 days).
//
// Layout: `verdicts` holds every raw verdict; `latest` holds the newest
// verdict per check × target × region × vantage and is upserted in the same
// transaction, so Verdicts is one indexed scan however long the history;
// `rollups` holds one row per check × target × region × minute, updated on
// write, with a compact log-linear TTFB histogram (buckets within 1.6 % of
// the value) from which the minute's p95 is read; `signals` holds the proxy's
// passive observations.
//
// Durability: WAL with synchronous=NORMAL — a batch whose Publish returned
// nil survives a crash of the process (kill -9); an OS crash or power loss
// may lose the last commits but never corrupts the file. All writes go
// through one connection; reads use a separate pool and never wait for it.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers driver "sqlite"

	"github.com/vigil-synthetics/vigil/reporting"
)

// FileName is the database file created in the directory given to Open.
const FileName = "vigil.db"

// PruneInterval is how often retention pruning runs (also once at Open).
const PruneInterval = time.Hour

// ErrClosed is returned by every method after Close.
var ErrClosed = errors.New("store: closed")

// Options tune Open. Zero values take the defaults.
type Options struct {
	// Retention is how long raw verdicts and signals are kept. Default 7 days.
	Retention time.Duration
	// RollupRetention is how long per-minute rollups are kept. Default 35 days.
	RollupRetention time.Duration
	// Now is the clock (for tests). Default time.Now.
	Now func() time.Time
	// Log receives pruning errors and recovered panics. Default slog.Default().
	Log *slog.Logger
}

// Store is the embedded SQLite store. It is safe for concurrent use.
type Store struct {
	w, r *sql.DB // w: the single writer connection; r: readers
	opts Options
	log  *slog.Logger

	mu     sync.RWMutex // closed
	closed bool
	once   sync.Once
	stop   chan struct{}
	done   chan struct{}
}

var (
	_ reporting.Sink          = (*Store)(nil)
	_ reporting.HistorySource = (*Store)(nil)
	_ reporting.SignalSink    = (*Store)(nil)
	_ reporting.SignalSource  = (*Store)(nil)
)

const schema = `
CREATE TABLE IF NOT EXISTS verdicts (
	id INTEGER PRIMARY KEY,
	check_name TEXT NOT NULL, target TEXT NOT NULL, tier TEXT NOT NULL, region TEXT NOT NULL, vantage TEXT NOT NULL,
	state TEXT NOT NULL, ok INTEGER NOT NULL, cause TEXT NOT NULL, err TEXT NOT NULL, status_code INTEGER NOT NULL,
	ttfb INTEGER NOT NULL, duration INTEGER NOT NULL, dns INTEGER NOT NULL, connect INTEGER NOT NULL, tls INTEGER NOT NULL, transfer INTEGER NOT NULL,
	streak INTEGER NOT NULL, interval INTEGER NOT NULL, at INTEGER NOT NULL, expires INTEGER NOT NULL,
	artifact TEXT NOT NULL, url TEXT NOT NULL, cert_expiry INTEGER NOT NULL DEFAULT 0, proto TEXT NOT NULL DEFAULT '',
	held_until INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS verdicts_at ON verdicts(at);
CREATE INDEX IF NOT EXISTS verdicts_series ON verdicts(check_name, target, region, at);
CREATE TABLE IF NOT EXISTS latest (
	check_name TEXT NOT NULL, target TEXT NOT NULL, tier TEXT NOT NULL, region TEXT NOT NULL, vantage TEXT NOT NULL,
	state TEXT NOT NULL, ok INTEGER NOT NULL, cause TEXT NOT NULL, err TEXT NOT NULL, status_code INTEGER NOT NULL,
	ttfb INTEGER NOT NULL, duration INTEGER NOT NULL, dns INTEGER NOT NULL, connect INTEGER NOT NULL, tls INTEGER NOT NULL, transfer INTEGER NOT NULL,
	streak INTEGER NOT NULL, interval INTEGER NOT NULL, at INTEGER NOT NULL, expires INTEGER NOT NULL,
	artifact TEXT NOT NULL, url TEXT NOT NULL, cert_expiry INTEGER NOT NULL DEFAULT 0, proto TEXT NOT NULL DEFAULT '',
	held_until INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (check_name, target, region, vantage)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS latest_at ON latest(at);
CREATE TABLE IF NOT EXISTS rollups (
	check_name TEXT NOT NULL, target TEXT NOT NULL, region TEXT NOT NULL, minute INTEGER NOT NULL,
	total INTEGER NOT NULL, failed INTEGER NOT NULL, unhealthy INTEGER NOT NULL,
	ttfb_sum INTEGER NOT NULL, ttfb_max INTEGER NOT NULL, ttfb_hist BLOB NOT NULL,
	PRIMARY KEY (check_name, target, region, minute)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS rollups_minute ON rollups(minute);
CREATE TABLE IF NOT EXISTS signals (
	id INTEGER PRIMARY KEY,
	pool TEXT NOT NULL, origin TEXT NOT NULL, region TEXT NOT NULL, vantage TEXT NOT NULL,
	at INTEGER NOT NULL, window INTEGER NOT NULL, requests INTEGER NOT NULL, status_5xx INTEGER NOT NULL,
	conn_errors INTEGER NOT NULL, timeouts INTEGER NOT NULL, p95 INTEGER NOT NULL, ejected INTEGER NOT NULL, reason TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS signals_at ON signals(at);
`

// Open opens or creates <dir>/vigil.db, applies the schema, prunes expired
// rows once and starts the hourly pruning loop.
func Open(dir string, o Options) (*Store, error) {
	if o.Retention <= 0 {
		o.Retention = DefaultRetention
	}
	if o.RollupRetention <= 0 {
		o.RollupRetention = max(DefaultRollupRetention, o.Retention)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	path := filepath.Join(dir, FileName)
	// The database is private to this user (0600). SQLite creates it and
	// its -wal and -shm files itself, giving the latter the mode of the
	// database file; so the file is created here first, and files left by
	// a version that made them 0644 are tightened below.
	if f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
		f.Close()
	} else if !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("store: create %s: %w", path, err)
	}
	// SQLite says only "unable to open database file (14)" when it may not
	// read or write the file or create its -wal and -shm files beside it:
	// check both first and name the path.
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err) // "open <path>: permission denied"
	}
	f.Close()
	if err := dirWritable(dir); err != nil {
		return nil, fmt.Errorf("store: data dir %s: vigil.db needs its -wal and -shm files beside it: %w", dir, err)
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_txlock", "immediate")
	w, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	// Files written before cert_expiry, proto and held_until existed gain
	// the columns;
	// "duplicate column" errors mean they are already there.
	for _, t := range []string{"verdicts", "latest"} {
		_, _ = w.Exec("ALTER TABLE " + t + " ADD COLUMN cert_expiry INTEGER NOT NULL DEFAULT 0")
		_, _ = w.Exec("ALTER TABLE " + t + " ADD COLUMN proto TEXT NOT NULL DEFAULT ''")
		_, _ = w.Exec("ALTER TABLE " + t + " ADD COLUMN held_until INTEGER NOT NULL DEFAULT 0")
	}
	if _, err := w.Exec(schema); err != nil {
		w.Close()
		return nil, fmt.Errorf("store: schema %s: %w", path, err)
	}
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		if fi, err := os.Stat(f); err == nil && fi.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(f, 0o600); err != nil {
				o.Log.Warn("store: file is open to other users and could not be made private", "file", f, "error", err)
			}
		}
	}
	rq := url.Values{}
	rq.Add("_pragma", "busy_timeout(10000)")
	rq.Add("_pragma", "query_only(1)")
	r, err := sql.Open("sqlite", "file:"+path+"?"+rq.Encode())
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	r.SetMaxOpenConns(4)
	r.SetMaxIdleConns(4)
	s := &Store{w: w, r: r, opts: o, log: o.Log, stop: make(chan struct{}), done: make(chan struct{})}
	if err := s.Prune(context.Background()); err != nil {
		s.log.Warn("store: pruning at open failed", "err", err)
	}
	go s.pruneLoop()
	return s, nil
}

// Prune deletes raw verdicts and signals older than Retention, rollups older
// than RollupRetention and latest entries older than Retention. It runs at
// Open and every PruneInterval; it deletes in chunks so writers are not held
// up for long.
func (s *Store) Prune(ctx context.Context) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	now := s.opts.Now()
	raw := now.Add(-s.opts.Retention).UnixNano()
	roll := now.Add(-s.opts.RollupRetention).UnixNano()
	for _, p := range []struct {
		table, col string
		before     int64
	}{
		{"verdicts", "at", raw}, {"signals", "at", raw}, {"latest", "at", raw}, {"rollups", "minute", roll},
	} {
		for {
			var res sql.Result
			var err error
			if p.table == "latest" || p.table == "rollups" {
				// WITHOUT ROWID tables: one statement (few rows).
				res, err = s.w.ExecContext(ctx, "DELETE FROM "+p.table+" WHERE "+p.col+" < ?", p.before)
			} else {
				res, err = s.w.ExecContext(ctx, "DELETE FROM "+p.table+" WHERE rowid IN (SELECT rowid FROM "+p.table+" WHERE "+p.col+" < ? LIMIT 5000)", p.before)
			}
			if err != nil {
				return fmt.Errorf("store: prune %s: %w", p.table, err)
			}
			n, _ := res.RowsAffected()
			if n < 5000 || p.table == "latest" || p.table == "rollups" {
				break
			}
		}
	}
	return nil
}

func (s *Store) pruneLoop() {
	defer close(s.done)
	t := time.NewTicker(PruneInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			func() {
				defer func() {
					if r := recover(); r != nil {
						s.log.Error("store: pruning panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
					}
				}()
				if err := s.Prune(context.Background()); err != nil && !errors.Is(err, ErrClosed) {
					s.log.Warn("store: pruning failed", "err", err)
				}
			}()
		}
	}
}

// enter takes the read lock unless the store is closed; callers must
// s.mu.RUnlock() when it returns nil.
func (s *Store) enter() error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	return nil
}

// Close stops pruning, waits for in-flight calls, checkpoints the WAL and
// closes the file. Later calls return nil.
func (s *Store) Close() error {
	var err error
	s.once.Do(func() {
		close(s.stop)
		<-s.done
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		_, _ = s.w.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
		err = errors.Join(s.r.Close(), s.w.Close())
	})
	return err
}
