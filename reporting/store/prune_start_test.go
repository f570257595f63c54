package store

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// logBuf is a concurrency-safe log sink.
type logBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// seedOld writes n verdicts 10 days old and one fresh one into dir's store.
func seedOld(t *testing.T, dir string, now time.Time, n int) {
	t.Helper()
	// This store's own start-up prune runs in the background while the
	// rows go in: on its clock they are not old yet.
	past := now.Add(-30 * 24 * time.Hour)
	s, err := Open(dir, Options{Now: func() time.Time { return past }, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := 0; i < n; i += 2000 {
		vs := make([]reporting.Verdict, 0, 2000)
		for j := i; j < min(i+2000, n); j++ {
			vs = append(vs, reporting.Verdict{Check: "c", Target: fmt.Sprint("t", j%50), State: reporting.StateHealthy, OK: true,
				At: now.Add(-10*24*time.Hour + time.Duration(j)*time.Millisecond)})
		}
		if err := s.Publish(ctx, vs); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Publish(ctx, []reporting.Verdict{{Check: "c", Target: "fresh", State: reporting.StateHealthy, OK: true, At: now.Add(-time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func oldRows(t *testing.T, s *Store, now time.Time) int {
	t.Helper()
	var n int
	if err := s.r.QueryRow("SELECT count(*) FROM verdicts WHERE at < ?", now.Add(-DefaultRetention).UnixNano()).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestStartupPruneInBackground: Open returns while the start-up prune of a
// large backlog is still going (it used to block start-up, with no log, for
// as long as it took: 20 s for 1.5 M rows, and liveness probes killed the
// process); reads and writes work meanwhile; the log says when it starts,
// how many verdicts it deletes, and when it ends. Close during the prune
// stops it promptly and the next start finishes it.
func TestStartupPruneInBackground(t *testing.T) {
	const n = 3*pruneChunk + 123 // four chunks
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	dir := t.TempDir()
	seedOld(t, dir, now, n)

	// Hold the prune after its first chunk until released or closed.
	chunked := make(chan struct{}, 100)
	release := make(chan struct{})
	afterPruneChunk = func(ctx context.Context) {
		chunked <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
	}
	t.Cleanup(func() { afterPruneChunk = nil })

	var logs logBuf
	opened := make(chan *Store, 1)
	go func() {
		s, err := Open(dir, Options{Now: clock, Log: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Error(err)
		}
		opened <- s
	}()
	var s *Store
	select {
	case s = <-opened:
	case <-time.After(15 * time.Second):
		close(release) // let the blocked Open finish
		<-opened
		t.Fatal("Open waited for the start-up prune to finish")
	}
	if s == nil {
		t.FailNow()
	}
	select {
	case <-chunked:
	case <-time.After(15 * time.Second):
		t.Fatal("no start-up prune")
	}
	want := fmt.Sprintf(`level=INFO msg="store: pruning verdicts older than the retention in the background" retention=168h0m0s before=2026-02-22T12:00:00Z verdicts=%d`, n)
	if !strings.Contains(logs.String(), want) {
		t.Fatalf("log at the start of the prune:\n%s\nwant a line with\n%s", logs.String(), want)
	}
	if got := oldRows(t, s, now); got != n-pruneChunk {
		t.Fatalf("after one chunk: %d old rows left, want %d", got, n-pruneChunk)
	}

	// Meanwhile the store takes writes and answers reads.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Publish(ctx, []reporting.Verdict{{Check: "c", Target: "during", State: reporting.StateHealthy, OK: true, At: now}}); err != nil {
		t.Fatalf("publish during the prune: %v", err)
	}
	vs, err := s.Verdicts(ctx, time.Hour)
	if err != nil || len(vs) != 2 {
		t.Fatalf("verdicts during the prune: %d, %v; want fresh and during", len(vs), err)
	}

	close(release)
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(logs.String(), `msg="store: pruned"`) {
		if time.Now().After(deadline) {
			t.Fatalf("no end of the prune in the log:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// latest: the 50 series whose newest verdict is 10 days old.
	if want := fmt.Sprintf(`level=INFO msg="store: pruned" verdicts=%d signals=0 rollups=0 latest=50 duration=`, n); !strings.Contains(logs.String(), want) {
		t.Fatalf("log at the end of the prune:\n%s\nwant a line with %s…", logs.String(), want)
	}
	if got := oldRows(t, s, now); got != 0 {
		t.Fatalf("after the prune: %d old rows left", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	t.Run("close during the prune", func(t *testing.T) {
		dir := t.TempDir()
		seedOld(t, dir, now, n)
		chunked = make(chan struct{}, 100)
		release = make(chan struct{}) // never closed: only Close ends the wait
		var logs logBuf
		s, err := Open(dir, Options{Now: clock, Log: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		<-chunked
		closed := make(chan error, 1)
		go func() { closed <- s.Close() }()
		select {
		case err := <-closed:
			if err != nil {
				t.Fatalf("Close: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("Close waited for the start-up prune to finish")
		}
		if want := fmt.Sprintf(`msg="store: pruning stopped by close; the rest is pruned at the next start" verdicts=%d`, pruneChunk); !strings.Contains(logs.String(), want) {
			t.Fatalf("log after Close:\n%s\nwant a line with %s", logs.String(), want)
		}
		afterPruneChunk = nil
		s, err = Open(dir, Options{Now: clock, Log: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		deadline := time.Now().Add(15 * time.Second)
		for oldRows(t, s, now) > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("the next start did not finish the prune: %d old rows left", oldRows(t, s, now))
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}
