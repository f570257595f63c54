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
// passive observations; `writers` holds, per series and canary instance,
// the At of its first and last verdicts, from which Verdicts finds two
// canaries writing one series (reporting.FindDuplicates).
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
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers driver "sqlite"

	"github.com/vigil-synthetics/vigil/reporting"
)

// FileName is the database file created in the directory given to Open.
const FileName = "vigil.db"

// PruneInterval is how often retention pruning runs (also once in the
// background right after Open).
const PruneInterval = time.Hour

// pruneChunk is how many raw rows one pruning statement deletes: the
// writer connection is free between chunks, so publishes wait for at most
// one chunk.
const pruneChunk = 5000

// afterPruneChunk, if set (tests), runs between two chunks of a prune.
var afterPruneChunk func(ctx context.Context)

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
	// Log receives the start-up prune's progress, pruning errors and
	// recovered panics. Default slog.Default().
	Log *slog.Logger
	// Duplicates receives the canary instances Verdicts finds writing the
	// same series. Default reporting.Duplicates (the process's).
	Duplicates *reporting.DuplicateWatch
}

// Store is the embedded SQLite store. It is safe for concurrent use.
type Store struct {
	w, r *sql.DB // w: the single writer connection; r: readers
	opts Options
	log  *slog.Logger
	dups *reporting.DuplicateWatch

	mu     sync.RWMutex // closed
	closed bool
	once   sync.Once
	// ctx is cancelled by Close: a prune in progress stops at once.
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when pruneLoop returns
	// indexed is closed when the read indexes exist (at once unless a
	// large file of an older version gains them in the background) or
	// their creation ended otherwise.
	indexed chan struct{}
	// failedIndexed: the partial indexes of failed runs exist, so reads of
	// failed runs name them (the planner, without statistics, prefers the
	// index of every run and walks a day of passing runs).
	failedIndexed atomic.Bool
}

var (
	_ reporting.Sink          = (*Store)(nil)
	_ reporting.HistorySource = (*Store)(nil)
	_ reporting.WriterSource  = (*Store)(nil)
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
	held_until INTEGER NOT NULL DEFAULT 0, instance TEXT NOT NULL DEFAULT '', since INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS verdicts_at ON verdicts(at);
CREATE TABLE IF NOT EXISTS latest (
	check_name TEXT NOT NULL, target TEXT NOT NULL, tier TEXT NOT NULL, region TEXT NOT NULL, vantage TEXT NOT NULL,
	state TEXT NOT NULL, ok INTEGER NOT NULL, cause TEXT NOT NULL, err TEXT NOT NULL, status_code INTEGER NOT NULL,
	ttfb INTEGER NOT NULL, duration INTEGER NOT NULL, dns INTEGER NOT NULL, connect INTEGER NOT NULL, tls INTEGER NOT NULL, transfer INTEGER NOT NULL,
	streak INTEGER NOT NULL, interval INTEGER NOT NULL, at INTEGER NOT NULL, expires INTEGER NOT NULL,
	artifact TEXT NOT NULL, url TEXT NOT NULL, cert_expiry INTEGER NOT NULL DEFAULT 0, proto TEXT NOT NULL DEFAULT '',
	held_until INTEGER NOT NULL DEFAULT 0, instance TEXT NOT NULL DEFAULT '', since INTEGER NOT NULL DEFAULT 0,
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
CREATE TABLE IF NOT EXISTS writers (
	check_name TEXT NOT NULL, target TEXT NOT NULL, region TEXT NOT NULL, vantage TEXT NOT NULL, instance TEXT NOT NULL,
	first_at INTEGER NOT NULL, last_at INTEGER NOT NULL,
	PRIMARY KEY (check_name, target, region, vantage, instance)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS writers_last ON writers(last_at);
CREATE TABLE IF NOT EXISTS signals (
	id INTEGER PRIMARY KEY,
	pool TEXT NOT NULL, origin TEXT NOT NULL, region TEXT NOT NULL, vantage TEXT NOT NULL,
	at INTEGER NOT NULL, window INTEGER NOT NULL, requests INTEGER NOT NULL, status_5xx INTEGER NOT NULL,
	conn_errors INTEGER NOT NULL, timeouts INTEGER NOT NULL, p95 INTEGER NOT NULL, ejected INTEGER NOT NULL, reason TEXT NOT NULL,
	out INTEGER NOT NULL DEFAULT 0, out_by TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS signals_at ON signals(at);
`

// readIndexes are the indexes History and Rollups read by: each filter
// (check; check × target) followed by the time column, so a read costs what
// its window and limit hold, not the history kept. They replace
// verdicts_series (check, target, region, at), whose region column kept the
// time range of a check × target read from being used; createIndexes drops
// it once they exist.
var readIndexes = []struct{ name, def string }{
	{"verdicts_check_at", "verdicts(check_name, at)"},
	{"verdicts_target_at", "verdicts(check_name, target, at)"},
	{"rollups_target", "rollups(check_name, target, minute)"},
	// Failed runs only (a check page's failures of the day, an alert's
	// cause): partial, so they hold only the failed runs.
	{"verdicts_check_failed_at", "verdicts(check_name, at) WHERE ok = 0"},
	{"verdicts_target_failed_at", "verdicts(check_name, target, at) WHERE ok = 0"},
}

// indexInBackground is how many verdicts a file lacking readIndexes (one
// written by an older version) must hold for Open to leave creating them to
// the background, logged, instead of creating them before it returns:
// about 2 s per million verdicts, once.
var indexInBackground int64 = 100000

// missingIndexes returns the names of the readIndexes the file lacks.
func missingIndexes(db *sql.DB) ([]string, error) {
	var missing []string
	for _, ix := range readIndexes {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type='index' AND name=?`, ix.name).Scan(&n); err != nil {
			return nil, err
		}
		if n == 0 {
			missing = append(missing, ix.name)
		}
	}
	return missing, nil
}

// createIndexes creates the missing readIndexes, then drops verdicts_series.
func createIndexes(ctx context.Context, w *sql.DB) error {
	for _, ix := range readIndexes {
		if _, err := w.ExecContext(ctx, "CREATE INDEX IF NOT EXISTS "+ix.name+" ON "+ix.def); err != nil {
			return fmt.Errorf("index %s: %w", ix.name, err)
		}
	}
	_, err := w.ExecContext(ctx, "DROP INDEX IF EXISTS verdicts_series")
	return err
}

// indexLogged creates the readIndexes of a large file for pruneLoop,
// logging the start and the end. Reads work meanwhile (more slowly) and
// writes wait for it. A Close stops it; the next start begins again.
func (s *Store) indexLogged(rows int64, missing []string) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("store: indexing panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	s.log.Info("store: indexing the stored history in the background for faster reads (once, after an upgrade)",
		"verdicts", rows, "indexes", missing)
	began := time.Now()
	err := createIndexes(s.ctx, s.w)
	took := time.Since(began).Round(time.Millisecond).String()
	switch {
	case err != nil && s.ctx.Err() != nil:
		s.log.Info("store: indexing stopped by close; it starts again at the next start", "duration", took)
	case err != nil:
		s.log.Warn("store: indexing failed; history reads stay slow until a start where it works", "err", err, "duration", took)
	default:
		s.log.Info("store: indexed the stored history", "duration", took)
	}
}

// Open opens or creates <dir>/vigil.db, applies the schema (a large file of
// an older version gains its read indexes in the background: readIndexes)
// and starts pruning in the background: expired rows once right away, then every
// PruneInterval. Open does not wait for the first prune (a large backlog
// takes a while: e.g. 20 s for 1.5 million rows); reads and writes work
// meanwhile, and it logs when it starts and ends.
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
	if o.Duplicates == nil {
		o.Duplicates = reporting.Duplicates
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
	// Files written before cert_expiry, proto, held_until, instance and
	// since existed gain the columns (their rows read with no instance and
	// an unknown since: 0 is the zero time); "duplicate column" errors
	// mean they are already there.
	for _, t := range []string{"verdicts", "latest"} {
		_, _ = w.Exec("ALTER TABLE " + t + " ADD COLUMN cert_expiry INTEGER NOT NULL DEFAULT 0")
		_, _ = w.Exec("ALTER TABLE " + t + " ADD COLUMN proto TEXT NOT NULL DEFAULT ''")
		_, _ = w.Exec("ALTER TABLE " + t + " ADD COLUMN held_until INTEGER NOT NULL DEFAULT 0")
		_, _ = w.Exec("ALTER TABLE " + t + " ADD COLUMN instance TEXT NOT NULL DEFAULT ''")
		_, _ = w.Exec("ALTER TABLE " + t + " ADD COLUMN since INTEGER NOT NULL DEFAULT 0")
	}
	// Likewise signals before out and out_by (a row written then reads as
	// not out: only the passive ejection was recorded).
	_, _ = w.Exec("ALTER TABLE signals ADD COLUMN out INTEGER NOT NULL DEFAULT 0")
	_, _ = w.Exec("ALTER TABLE signals ADD COLUMN out_by TEXT NOT NULL DEFAULT ''")
	if _, err := w.Exec(schema); err != nil {
		w.Close()
		return nil, fmt.Errorf("store: schema %s: %w", path, err)
	}
	if err := ensureHourly(w); err != nil {
		w.Close()
		return nil, fmt.Errorf("store: schema %s: hourly rollups: %w", path, err)
	}
	missing, err := missingIndexes(w)
	var backlog int64
	if err == nil && len(missing) > 0 {
		err = w.QueryRow(`SELECT count(*) FROM verdicts`).Scan(&backlog)
	}
	if err == nil && backlog < indexInBackground {
		backlog, err = 0, createIndexes(context.Background(), w)
	}
	if err != nil {
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
	s := &Store{w: w, r: r, opts: o, log: o.Log, dups: o.Duplicates, done: make(chan struct{}), indexed: make(chan struct{})}
	if backlog == 0 {
		s.failedIndexed.Store(true) // created above
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	go s.pruneLoop(backlog, missing)
	return s, nil
}

// pruned counts the rows one prune deleted, by table.
type pruned struct {
	verdicts, signals, latest, rollups, hourly, writers int64
}

func (p pruned) any() bool { return p.verdicts+p.signals+p.latest+p.rollups+p.hourly+p.writers > 0 }

// Prune deletes raw verdicts and signals older than Retention, rollups older
// than RollupRetention and latest entries older than Retention. It runs at
// Open and every PruneInterval; it deletes in chunks so writers are not held
// up for long.
func (s *Store) Prune(ctx context.Context) error {
	_, err := s.prune(ctx, s.opts.Now())
	return err
}

// prune is Prune at now; it returns what it deleted, also when it fails
// or ctx ends part-way.
func (s *Store) prune(ctx context.Context, now time.Time) (pruned, error) {
	var done pruned
	if err := s.enter(); err != nil {
		return done, err
	}
	defer s.mu.RUnlock()
	raw := now.Add(-s.opts.Retention).UnixNano()
	roll := now.Add(-s.opts.RollupRetention).UnixNano()
	for _, p := range []struct {
		table, col string
		before     int64
		n          *int64
	}{
		{"verdicts", "at", raw, &done.verdicts}, {"signals", "at", raw, &done.signals},
		{"latest", "at", raw, &done.latest}, {"rollups", "minute", roll, &done.rollups},
		// An hour goes once all its minutes have.
		{"rollups_hourly", "hour", roll - hourNanos + 1, &done.hourly},
		{"writers", "last_at", raw, &done.writers},
	} {
		for {
			var res sql.Result
			var err error
			if p.table == "latest" || p.table == "rollups" || p.table == "rollups_hourly" || p.table == "writers" {
				// WITHOUT ROWID tables: one statement (few rows).
				res, err = s.w.ExecContext(ctx, "DELETE FROM "+p.table+" WHERE "+p.col+" < ?", p.before)
			} else {
				res, err = s.w.ExecContext(ctx, "DELETE FROM "+p.table+" WHERE rowid IN (SELECT rowid FROM "+p.table+" WHERE "+p.col+" < ? LIMIT ?)", p.before, pruneChunk)
			}
			if err == nil && ctx.Err() != nil {
				err = ctx.Err()
			}
			if err != nil {
				if ctx.Err() != nil {
					err = ctx.Err() // the driver's "interrupted" says less
				}
				return done, fmt.Errorf("store: prune %s: %w", p.table, err)
			}
			n, _ := res.RowsAffected()
			*p.n += n
			if n < pruneChunk || p.table == "latest" || p.table == "rollups" || p.table == "rollups_hourly" || p.table == "writers" {
				break
			}
			if afterPruneChunk != nil {
				afterPruneChunk(ctx)
			}
		}
	}
	return done, nil
}

// pruneLoop first creates the read indexes of a file of an older version
// holding unindexed verdicts (unindexed > 0), then prunes once, logging the
// start and the end of both (a large backlog takes a while), then every
// PruneInterval, until Close.
func (s *Store) pruneLoop(unindexed int64, missing []string) {
	defer close(s.done)
	if unindexed > 0 {
		s.indexLogged(unindexed, missing)
		if m, err := missingIndexes(s.w); err == nil && len(m) == 0 {
			s.failedIndexed.Store(true)
		}
	}
	close(s.indexed)
	s.pruneLogged(true)
	t := time.NewTicker(PruneInterval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			s.pruneLogged(false)
		}
	}
}

// pruneLogged runs one prune for pruneLoop. The one at start logs at info
// level (when there is anything to delete) how many verdicts it is about
// to delete and, at the end, what it deleted and how long it took; the
// hourly ones log that at debug level. A Close during the prune stops it:
// the rest is deleted at the next start.
func (s *Store) pruneLogged(start bool) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("store: pruning panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	level := slog.LevelDebug
	if start {
		level = slog.LevelInfo
	}
	now := s.opts.Now()
	before := now.Add(-s.opts.Retention)
	if start {
		// An indexed count: well under a second for millions of rows.
		var old int64
		err := s.r.QueryRowContext(s.ctx, "SELECT count(*) FROM verdicts WHERE at < ?", before.UnixNano()).Scan(&old)
		if err == nil && old > 0 {
			s.log.Info("store: pruning verdicts older than the retention in the background",
				"retention", s.opts.Retention.String(), "before", before.UTC().Format(time.RFC3339), "verdicts", old)
		}
	}
	began := time.Now()
	done, err := s.prune(s.ctx, now)
	took := time.Since(began).Round(time.Millisecond).String()
	switch {
	case errors.Is(err, ErrClosed):
	case err != nil && s.ctx.Err() != nil:
		s.log.Info("store: pruning stopped by close; the rest is pruned at the next start", "verdicts", done.verdicts,
			"signals", done.signals, "rollups", done.rollups, "latest", done.latest, "duration", took)
	case err != nil:
		s.log.Warn("store: pruning failed", "err", err, "verdicts", done.verdicts, "duration", took)
	case done.any():
		s.log.Log(context.Background(), level, "store: pruned", "verdicts", done.verdicts, "signals", done.signals,
			"rollups", done.rollups, "latest", done.latest, "duration", took)
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

// Close stops pruning (a prune in progress ends after its current chunk),
// waits for in-flight calls, checkpoints the WAL and closes the file.
// Later calls return nil.
func (s *Store) Close() error {
	var err error
	s.once.Do(func() {
		s.cancel()
		<-s.done
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		_, _ = s.w.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
		err = errors.Join(s.r.Close(), s.w.Close())
	})
	return err
}
