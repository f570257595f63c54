package reporting_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/influx"
	"github.com/vigil-synthetics/vigil/reporting/store"
	"github.com/vigil-synthetics/vigil/reporting/storetest"
)

// fakeSource answers every read with its verdicts, or err; it counts reads.
type fakeSource struct {
	mu    sync.Mutex
	vs    []reporting.Verdict
	err   error
	reads int
	// block makes reads wait for their context and return its error.
	block bool
}

var _ reporting.HistorySource = (*fakeSource)(nil)

func (s *fakeSource) set(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

func (s *fakeSource) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

func (s *fakeSource) read(ctx context.Context) ([]reporting.Verdict, error) {
	s.mu.Lock()
	s.reads++
	vs, err, block := s.vs, s.err, s.block
	s.mu.Unlock()
	if block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return vs, err
}

func (s *fakeSource) Verdicts(ctx context.Context, _ time.Duration) ([]reporting.Verdict, error) {
	return s.read(ctx)
}

func (s *fakeSource) History(ctx context.Context, _ reporting.HistoryQuery) ([]reporting.Verdict, error) {
	return s.read(ctx)
}

func (s *fakeSource) Rollups(ctx context.Context, _ reporting.HistoryQuery) ([]reporting.Rollup, error) {
	vs, err := s.read(ctx)
	var rs []reporting.Rollup
	for _, v := range vs {
		rs = append(rs, reporting.Rollup{Check: v.Check, Target: v.Target, Region: v.Region, Total: 1})
	}
	return rs, err
}

// latestOnly is a Source without history, as a canary's memory is.
type latestOnly struct{ vs []reporting.Verdict }

func (l latestOnly) Verdicts(context.Context, time.Duration) ([]reporting.Verdict, error) {
	return l.vs, nil
}

var errDown = errors.New("dial tcp 127.0.0.1:8086: connect: connection refused")

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func regions(vs []reporting.Verdict) string {
	var rs []string
	for _, v := range vs {
		rs = append(rs, v.Region)
	}
	return strings.Join(rs, ",")
}

// TestFallback walks one outage: Primary's regions while it answers, the
// canary's own region (and a notice saying since when) while it fails, a
// retry of Primary at most every Retry, and Primary again once it answers.
func TestFallback(t *testing.T) {
	primary := &fakeSource{vs: []reporting.Verdict{{Check: "c", Region: "eu"}, {Check: "c", Region: "us"}}}
	own := &fakeSource{vs: []reporting.Verdict{{Check: "c", Region: "eu"}}}
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	f := &reporting.Fallback{Primary: primary, Own: own, Name: "InfluxDB", Retry: 5 * time.Second, Log: quiet(),
		Now: func() time.Time { return now }}
	ctx := context.Background()

	type step struct {
		name       string
		advance    time.Duration
		primaryErr error
		wantRegion string // of Verdicts, History and Rollups
		wantTries  int    // reads of Primary so far
		wantNotice string
	}
	for _, s := range []step{
		{name: "primary answers", wantRegion: "eu,us", wantTries: 3},
		{name: "primary fails: own results", primaryErr: errDown, wantRegion: "eu", wantTries: 4,
			wantNotice: "InfluxDB unreachable since 2026-11-30T10:00:00Z: showing this canary's own results only"},
		{name: "within Retry: primary not tried", advance: 4 * time.Second, primaryErr: errDown, wantRegion: "eu", wantTries: 4,
			wantNotice: "InfluxDB unreachable since 2026-11-30T10:00:00Z"},
		{name: "after Retry: one try, still failing", advance: 2 * time.Second, primaryErr: errDown, wantRegion: "eu", wantTries: 5,
			wantNotice: "InfluxDB unreachable since 2026-11-30T10:00:00Z"},
		{name: "primary back but not yet retried", advance: time.Second, wantRegion: "eu", wantTries: 5,
			wantNotice: "InfluxDB unreachable since 2026-11-30T10:00:00Z"},
		{name: "primary back and retried", advance: 5 * time.Second, wantRegion: "eu,us", wantTries: 8},
		{name: "fails again: a new since", advance: time.Minute, primaryErr: errDown, wantRegion: "eu", wantTries: 9,
			wantNotice: "InfluxDB unreachable since 2026-11-30T10:01:12Z"},
	} {
		now = now.Add(s.advance)
		primary.set(s.primaryErr)
		vs, err := f.Verdicts(ctx, 0)
		if err != nil || regions(vs) != s.wantRegion {
			t.Fatalf("%s: Verdicts = %s, %v; want regions %s", s.name, regions(vs), err, s.wantRegion)
		}
		hs, err := f.History(ctx, reporting.HistoryQuery{Check: "c"})
		if err != nil || regions(hs) != s.wantRegion {
			t.Fatalf("%s: History = %s, %v; want regions %s", s.name, regions(hs), err, s.wantRegion)
		}
		rs, err := f.Rollups(ctx, reporting.HistoryQuery{Check: "c"})
		if err != nil || len(rs) != strings.Count(s.wantRegion, ",")+1 {
			t.Fatalf("%s: Rollups = %d rows, %v; want the regions %s", s.name, len(rs), err, s.wantRegion)
		}
		if got := primary.count(); got != s.wantTries {
			t.Errorf("%s: Primary read %d times in all, want %d", s.name, got, s.wantTries)
		}
		if got := f.Notice(); (s.wantNotice == "") != (got == "") || !strings.HasPrefix(got, s.wantNotice) {
			t.Errorf("%s: Notice = %q, want %q", s.name, got, s.wantNotice)
		}
	}
}

func TestFallbackOwnWithoutHistory(t *testing.T) {
	f := &reporting.Fallback{Primary: &fakeSource{err: errDown}, Own: latestOnly{[]reporting.Verdict{{Check: "c", Region: "eu"}}},
		Name: "InfluxDB", Log: quiet()}
	ctx := context.Background()
	if vs, err := f.Verdicts(ctx, 0); err != nil || regions(vs) != "eu" {
		t.Fatalf("Verdicts = %s, %v; want the canary's own (eu)", regions(vs), err)
	}
	_, err := f.History(ctx, reporting.HistoryQuery{Check: "c"})
	if err == nil || !strings.Contains(err.Error(), "InfluxDB unreachable") || !strings.Contains(err.Error(), "keeps no history of its own") {
		t.Errorf("History error = %v; want InfluxDB unreachable and no history of its own", err)
	}
	if _, err := f.Rollups(ctx, reporting.HistoryQuery{Check: "c"}); err == nil {
		t.Error("Rollups with no own history and Primary down: no error")
	}
}

func TestFallbackBothFail(t *testing.T) {
	f := &reporting.Fallback{Primary: &fakeSource{err: errDown}, Own: &fakeSource{err: errors.New("database is locked")},
		Name: "InfluxDB", Log: quiet()}
	_, err := f.Verdicts(context.Background(), 0)
	if err == nil || !errors.Is(err, errDown) || !strings.Contains(err.Error(), "database is locked") {
		t.Fatalf("error = %v; want both Primary's and Own's", err)
	}
}

// TestFallbackCallerGone: a read cancelled by its caller says nothing about
// Primary: no degraded state, no answer from Own.
func TestFallbackCallerGone(t *testing.T) {
	own := &fakeSource{vs: []reporting.Verdict{{Region: "eu"}}}
	f := &reporting.Fallback{Primary: &fakeSource{block: true}, Own: own, Log: quiet()}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	if _, err := f.Verdicts(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
	if n := f.Notice(); n != "" || own.count() != 0 {
		t.Errorf("after a cancelled read: Notice %q, Own read %d times; want neither", n, own.count())
	}
}

// TestFallbackPrimarySpentDeadline: a Primary that hangs past the caller's
// deadline still leaves the caller an answer from Own.
func TestFallbackPrimarySpentDeadline(t *testing.T) {
	f := &reporting.Fallback{Primary: &fakeSource{block: true}, Own: &fakeSource{vs: []reporting.Verdict{{Region: "eu"}}},
		Name: "InfluxDB", Log: quiet()}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	vs, err := f.Verdicts(ctx, 0)
	if err != nil || regions(vs) != "eu" {
		t.Fatalf("Verdicts = %s, %v; want Own's (eu)", regions(vs), err)
	}
	if f.Notice() == "" {
		t.Error("no notice after Primary timed out")
	}
}

// TestFallbackMark: responses carry Vigil-Degraded while reads come from
// Own, and not once Primary answers again.
func TestFallbackMark(t *testing.T) {
	primary := &fakeSource{err: errDown}
	f := &reporting.Fallback{Primary: primary, Own: &fakeSource{}, Name: "InfluxDB", Retry: time.Nanosecond, Log: quiet()}
	h := f.Mark(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := f.Verdicts(r.Context(), 0); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		io.WriteString(w, "[]")
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	get := func() (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get(reporting.DegradedHeader)
	}
	if code, hdr := get(); code != 200 || !strings.HasPrefix(hdr, "InfluxDB unreachable since ") {
		t.Errorf("InfluxDB down: %d, %s: %q; want 200 and the notice", code, reporting.DegradedHeader, hdr)
	}
	primary.set(nil)
	if code, hdr := get(); code != 200 || hdr != "" {
		t.Errorf("InfluxDB back: %d, %s: %q; want 200 and no header", code, reporting.DegradedHeader, hdr)
	}
	var nilF *reporting.Fallback
	if nilF.Mark(h) == nil || nilF.Notice() != "" {
		t.Error("a nil Fallback should pass the handler through and have no notice")
	}
}

// TestFallbackHangingInfluxDB: an InfluxDB that accepts connections and
// never answers costs one query per Retry, not one per read.
func TestFallbackHangingInfluxDB(t *testing.T) {
	var queries atomic.Int64
	stop := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		queries.Add(1)
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer hang.Close()
	defer close(stop) // before Close, which waits for the handlers
	primary, err := influx.Open(influx.Config{URL: hang.URL, Bucket: "vigil/autogen", Timeout: 200 * time.Millisecond},
		t.TempDir(), influx.Options{Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer primary.Close()
	f := &reporting.Fallback{Primary: primary, Own: &fakeSource{vs: []reporting.Verdict{{Region: "eu"}}},
		Name: "InfluxDB", Retry: time.Hour, Log: quiet()}
	for i := range 5 {
		vs, err := f.Verdicts(context.Background(), 0)
		if err != nil || regions(vs) != "eu" {
			t.Fatalf("read %d: %s, %v; want Own's (eu)", i, regions(vs), err)
		}
	}
	if n := queries.Load(); n != 1 {
		t.Errorf("InfluxDB got %d queries for 5 reads, want 1 (then none until Retry passes)", n)
	}
}

// TestFallbackContract: with InfluxDB at a dead port, reads through the
// Fallback are the embedded store's, whole: the store contract holds.
func TestFallbackContract(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	storetest.RunContract(t, func(t *testing.T) storetest.Store {
		own, err := store.Open(t.TempDir(), store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { own.Close() })
		primary, err := influx.Open(influx.Config{URL: dead, Bucket: "vigil/autogen", Timeout: time.Second},
			t.TempDir(), influx.Options{Log: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { primary.Close() })
		s := fallbackStore{own, &reporting.Fallback{Primary: primary, Own: own, Name: "InfluxDB", Log: quiet()}, new(atomic.Int64)}
		t.Cleanup(func() {
			if s.reads.Load() > 0 && s.f.Notice() == "" {
				t.Error("the reads did not fall back (no notice)")
			}
		})
		return s
	})
}

// fallbackStore writes to the embedded store and reads through a Fallback.
type fallbackStore struct {
	*store.Store
	f     *reporting.Fallback
	reads *atomic.Int64
}

func (s fallbackStore) Verdicts(ctx context.Context, maxAge time.Duration) ([]reporting.Verdict, error) {
	s.reads.Add(1)
	return s.f.Verdicts(ctx, maxAge)
}

func (s fallbackStore) History(ctx context.Context, q reporting.HistoryQuery) ([]reporting.Verdict, error) {
	s.reads.Add(1)
	return s.f.History(ctx, q)
}

func (s fallbackStore) Rollups(ctx context.Context, q reporting.HistoryQuery) ([]reporting.Rollup, error) {
	s.reads.Add(1)
	return s.f.Rollups(ctx, q)
}
