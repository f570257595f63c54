package influx

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// failingFile, in the outbox, holds when the current run of failed writes
// began (RFC 3339, UTC, nanoseconds). It is written at the first failed
// write and removed by the first one that works, so that "writes failing
// since" (Health) and the status page's "since" (FailingSince) keep the
// outage's start across a restart of vigil during the outage, as the
// outbox keeps its points. A file left by a run whose outbox was then
// empty is stale and ignored.
const failingFile = "writes-failing-since"

// restoreFailing reads failingFile in dir; zero when there is none, it
// does not parse, or nothing waits in the outbox (pending 0): then the
// file is removed.
func restoreFailing(dir string, pending int64) time.Time {
	path := filepath.Join(dir, failingFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(b)))
	if err != nil || pending == 0 || t.After(time.Now()) {
		_ = os.Remove(path)
		return time.Time{}
	}
	return t
}

// noteWrite keeps failingFile in step with a write's outcome err (after
// s.writes recorded it): written at the first failure of a run, removed at
// the first success. Errors writing it are ignored: only the "since" of a
// later run is at stake.
func (s *Store) noteWrite(err error) {
	s.failMu.Lock()
	defer s.failMu.Unlock()
	path := filepath.Join(s.out.dir, failingFile)
	if err == nil {
		if s.failFile {
			if rerr := os.Remove(path); rerr == nil || errors.Is(rerr, fs.ErrNotExist) {
				s.failFile = false
			}
		}
		s.failFrom = time.Time{}
		return
	}
	if s.failFile {
		return
	}
	since, _ := s.writes.State()
	if !s.failFrom.IsZero() {
		since = s.failFrom
	}
	tmp := path + ".tmp"
	if os.WriteFile(tmp, []byte(since.UTC().Format(time.RFC3339Nano)+"\n"), 0o600) == nil && os.Rename(tmp, path) == nil {
		s.failFile = true
	}
}

// writesState is s.writes' state, its start moved back to the one a
// previous run recorded (failingFile) while this run's writes have not
// yet worked.
func (s *Store) writesState() (time.Time, error) {
	since, err := s.writes.State()
	if err == nil {
		return since, nil
	}
	s.failMu.Lock()
	from := s.failFrom
	s.failMu.Unlock()
	if !from.IsZero() && from.Before(since) {
		since = from
	}
	return since, err
}

// FailingSince is when the store's current failures began: the first
// failed write or read of the runs of failures going on (writes' start
// kept across restarts, see failingFile); zero when the last write and the
// last read worked. The status page's degraded banner and Vigil-Degraded
// header date the outage from it (reporting.FailingSincer), so they agree
// with Health's lines.
func (s *Store) FailingSince() time.Time {
	var first time.Time
	if since, err := s.writesState(); err != nil {
		first = since
	}
	if since, err := s.reads.State(); err != nil && (first.IsZero() || since.Before(first)) {
		first = since
	}
	return first
}
