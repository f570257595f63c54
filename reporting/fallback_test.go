package reporting_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	influxhttp "github.com/influxdata/influxdb-client-go/v2/api/http"

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
	// hang makes reads (hangHistory: History and Rollups only) wait that
	// long and fail as a store's own timeout does, or end with their
	// context if it ends first.
	hang, hangHistory time.Duration
}

// errStoreTimeout is what influx.Store returns when its own timeout ends a
// query.
var errStoreTimeout = fmt.Errorf("influx: history: %w", context.DeadlineExceeded)

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

func (s *fakeSource) read(ctx context.Context, history bool) ([]reporting.Verdict, error) {
	s.mu.Lock()
	s.reads++
	vs, err, block, hang := s.vs, s.err, s.block, s.hang
	if history && s.hangHistory > 0 {
		hang = s.hangHistory
	}
	s.mu.Unlock()
	if block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if hang > 0 {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(hang):
			return nil, errStoreTimeout
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return vs, err
}

func (s *fakeSource) Verdicts(ctx context.Context, _ time.Duration) ([]reporting.Verdict, error) {
	return s.read(ctx, false)
}

func (s *fakeSource) History(ctx context.Context, _ reporting.HistoryQuery) ([]reporting.Verdict, error) {
	return s.read(ctx, true)
}

func (s *fakeSource) Rollups(ctx context.Context, _ reporting.HistoryQuery) ([]reporting.Rollup, error) {
	vs, err := s.read(ctx, true)
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

// errDown is what a read of an InfluxDB that refuses connections fails with.
var errDown error = &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}

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

// TestFallbackCallerDeadline: a read gives Primary only a share of its
// caller's time. A store that hangs is answered from Own within the
// caller's deadline, degraded; a query too slow for that share on a store
// that answers the probe fails alone, with a timeout, and is not answered
// from Own (here it even ends a degraded state, since the probe shows
// Primary answering).
func TestFallbackCallerDeadline(t *testing.T) {
	const deadline = 500 * time.Millisecond
	t.Run("store hangs on every read", func(t *testing.T) {
		own := &fakeSource{vs: []reporting.Verdict{{Region: "eu"}}}
		primary := &fakeSource{hang: time.Minute}
		f := &reporting.Fallback{Primary: primary, Own: own, Name: "InfluxDB", Log: quiet()}
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		start := time.Now()
		hs, err := f.History(ctx, reporting.HistoryQuery{Check: "c"})
		if took := time.Since(start); err != nil || regions(hs) != "eu" || took >= deadline {
			t.Fatalf("History with a %s deadline, Primary hung: %s, %v after %s; want Own's (eu) within the deadline",
				deadline, regions(hs), err, took.Round(time.Millisecond))
		}
		if n := f.Notice(); !strings.HasPrefix(n, "InfluxDB not answering since ") {
			t.Errorf("Notice = %q, want InfluxDB not answering since …", n)
		}
		if got := primary.count(); got != 2 {
			t.Errorf("Primary read %d times, want 2 (the read and one probe)", got)
		}
		if vs, err := f.Verdicts(context.Background(), 0); err != nil || regions(vs) != "eu" || primary.count() != 2 {
			t.Errorf("next read: %s, %v, Primary read %d times; want Own's (eu) without trying Primary", regions(vs), err, primary.count())
		}
	})
	t.Run("slow query on a store that answers", func(t *testing.T) {
		own := &fakeSource{vs: []reporting.Verdict{{Region: "eu"}}}
		primary := &fakeSource{err: errDown, vs: []reporting.Verdict{{Region: "eu"}, {Region: "us"}}}
		f := &reporting.Fallback{Primary: primary, Own: own, Name: "InfluxDB", Retry: time.Nanosecond, Log: quiet()}
		if _, err := f.Verdicts(context.Background(), 0); err != nil || f.Notice() == "" {
			t.Fatalf("Primary down: %v, Notice %q; want Own's answer and a notice", err, f.Notice())
		}
		primary.set(nil)
		primary.mu.Lock()
		primary.hangHistory = time.Minute
		primary.mu.Unlock()
		own.mu.Lock()
		own.reads = 0
		own.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		start := time.Now()
		_, err := f.History(ctx, reporting.HistoryQuery{Check: "c"})
		if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || took >= deadline {
			t.Fatalf("History too slow for its share of a %s deadline: error %v after %s; want context.DeadlineExceeded within the deadline",
				deadline, err, took.Round(time.Millisecond))
		}
		if own.count() != 0 {
			t.Errorf("Own read %d times, want none (a heavy query is not an outage)", own.count())
		}
		if n := f.Notice(); n != "" {
			t.Errorf("Notice = %q after a probe that Primary answered, want none", n)
		}
	})
}

// TestFallbackHungInfluxDBSequentialReads: an InfluxDB that accepts
// connections and never answers, read through the real client by a handler
// whose deadline equals store.influxdb.timeout (as the API's and the status
// page's 10 s equal its default). Every response is 200 from Own with the
// degraded mark, the first included; reads that wait on InfluxDB are one at
// a time and at least Retry apart, the others are quick.
func TestFallbackHungInfluxDBSequentialReads(t *testing.T) {
	const (
		timeout = time.Second // store.influxdb.timeout, and the handler's deadline
		retry   = 500 * time.Millisecond
		slow    = 400 * time.Millisecond // a read that waited on InfluxDB
	)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns sync.WaitGroup
	var held []net.Conn
	var heldMu sync.Mutex
	conns.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			heldMu.Lock()
			held = append(held, c) // accepted, never answered
			heldMu.Unlock()
		}
	})
	defer func() {
		ln.Close()
		conns.Wait()
		heldMu.Lock()
		for _, c := range held {
			c.Close()
		}
		heldMu.Unlock()
	}()
	primary, err := influx.Open(influx.Config{URL: "http://" + ln.Addr().String(), Bucket: "vigil/autogen", Timeout: timeout},
		t.TempDir(), influx.Options{Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer primary.Close()
	f := &reporting.Fallback{Primary: primary, Own: &fakeSource{vs: []reporting.Verdict{{Region: "eu"}}},
		Name: "InfluxDB", Retry: retry, Log: quiet()}
	srv := httptest.NewServer(f.Mark(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		vs, err := f.Verdicts(ctx, 0)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		io.WriteString(w, regions(vs))
	})))
	defer srv.Close()

	t0 := time.Now()
	type read struct {
		start, end time.Time
		code       int
		mark, body string
	}
	get := func() read {
		r := read{start: time.Now()}
		resp, err := http.Get(srv.URL)
		if err != nil {
			t.Error(err)
			return r
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		r.end, r.code, r.mark, r.body = time.Now(), resp.StatusCode, resp.Header.Get(reporting.DegradedHeader), string(b)
		return r
	}
	check := func(r read) {
		t.Helper()
		if r.code != 200 || r.body != "eu" || !strings.HasPrefix(r.mark, "InfluxDB not answering since ") {
			t.Errorf("read at +%s took %s: %d %q, %s %q; want 200 with Own's (eu) and the mark",
				r.start.Sub(t0).Round(time.Millisecond), r.end.Sub(r.start).Round(time.Millisecond), r.code, r.body,
				reporting.DegradedHeader, r.mark)
		}
	}

	first := get()
	check(first)
	if d := first.end.Sub(first.start); d >= timeout {
		t.Fatalf("first read took %s, want less than the handler's deadline %s", d, timeout)
	}
	// Two clients read one after another for 3 s.
	var mu sync.Mutex
	reads := []read{first}
	var clients sync.WaitGroup
	until := time.Now().Add(3 * time.Second)
	for range 2 {
		clients.Go(func() {
			for i := 0; i < 200 && time.Now().Before(until); i++ {
				r := get()
				mu.Lock()
				reads = append(reads, r)
				mu.Unlock()
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	clients.Wait()
	var slows []read
	for _, r := range reads {
		check(r)
		if r.end.Sub(r.start) >= slow {
			slows = append(slows, r)
		}
	}
	sort.Slice(slows, func(i, j int) bool { return slows[i].start.Before(slows[j].start) })
	for i := 1; i < len(slows); i++ {
		if gap := slows[i].start.Sub(slows[i-1].end); gap < retry-50*time.Millisecond {
			t.Errorf("reads that waited on InfluxDB at +%s and +%s: %s apart, want one at a time and Retry (%s) apart",
				slows[i-1].start.Sub(t0).Round(time.Millisecond), slows[i].start.Sub(t0).Round(time.Millisecond), gap.Round(time.Millisecond), retry)
		}
	}
	if len(slows) < 2 || len(slows) > 4 {
		t.Errorf("%d of %d reads waited on InfluxDB in 3 s, want 2 to 4 (the first, then one try every Retry + a try)", len(slows), len(reads))
	}
	if len(reads) < 20 {
		t.Errorf("only %d reads in 3 s: the reads that did not try InfluxDB were slow too", len(reads))
	}
}

// eventually polls cond every 5ms for at most 2s.
func eventually(cond func() bool) bool {
	for range 400 {
		if cond() {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}

// TestFallbackWhatCounts: which failed reads of Primary turn the Fallback
// degraded (the read is answered from Own, with a notice that says what is
// wrong) and which fail alone (the caller gets Primary's error, everyone
// else keeps Primary).
func TestFallbackWhatCounts(t *testing.T) {
	status := func(code int) error {
		return fmt.Errorf("influx: history: %w", &influxhttp.Error{StatusCode: code, Code: http.StatusText(code), Message: "m"})
	}
	dialTimeout := &net.OpError{Op: "dial", Net: "tcp", Err: timeoutErr{}}
	cases := []struct {
		name      string
		primary   *fakeSource
		counts    bool
		wantReads int    // of Primary: 2 when a probe followed the read
		notice    string // what is wrong, in the notice, when it counts
	}{
		{"400 bad query", &fakeSource{err: status(http.StatusBadRequest)}, false, 1, ""},
		{"413 query too large", &fakeSource{err: status(http.StatusRequestEntityTooLarge)}, false, 1, ""},
		{"422 unprocessable", &fakeSource{err: status(http.StatusUnprocessableEntity)}, false, 1, ""},
		{"timeout, probe answered", &fakeSource{hangHistory: 10 * time.Millisecond}, false, 2, ""},
		{"connection refused", &fakeSource{err: errDown}, true, 1, "unreachable"},
		{"dial timeout", &fakeSource{err: fmt.Errorf("influx: history: %w", dialTimeout)}, true, 1, "unreachable"},
		{"401 bad token", &fakeSource{err: status(http.StatusUnauthorized)}, true, 1, "unavailable (credentials rejected: 401 Unauthorized)"},
		{"403 forbidden", &fakeSource{err: status(http.StatusForbidden)}, true, 1, "unavailable (credentials rejected: 403 Forbidden)"},
		{"404 no such bucket", &fakeSource{err: status(http.StatusNotFound)}, true, 1, "unavailable (bucket not found)"},
		{"404 no such organization", &fakeSource{err: fmt.Errorf("influx: history: %w", &influxhttp.Error{StatusCode: 404,
			Code: "not found", Message: `organization name "acme" not found`})}, true, 1, "unavailable (organization not found)"},
		{"1.8: no database", &fakeSource{err: fmt.Errorf("influx: history: %w", &influxhttp.Error{StatusCode: 500,
			Code: "500 Internal Server Error", Message: "error\nfailed to initialize execute state: no database\n"})},
			true, 1, "unavailable (bucket not found)"},
		{"408 request timeout", &fakeSource{err: status(http.StatusRequestTimeout)}, true, 1, "unavailable (HTTP 408 Request Timeout)"},
		{"429 too many requests", &fakeSource{err: status(http.StatusTooManyRequests)}, true, 1, "unavailable (HTTP 429 Too Many Requests)"},
		{"500 internal error", &fakeSource{err: status(http.StatusInternalServerError)}, true, 1, "unavailable (HTTP 500 Internal Server Error)"},
		{"503 unavailable", &fakeSource{err: status(http.StatusServiceUnavailable)}, true, 1, "unavailable (HTTP 503 Service Unavailable)"},
		{"timeout, probe timed out too", &fakeSource{hang: 10 * time.Millisecond}, true, 2, "not answering"},
		{"answer does not parse", &fakeSource{err: errors.New("influx: history: parsing error, annotations not found")}, true, 1, "unavailable"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			own := &fakeSource{vs: []reporting.Verdict{{Region: "eu"}}}
			f := &reporting.Fallback{Primary: tc.primary, Own: own, Name: "InfluxDB", Log: quiet()}
			vs, err := f.History(context.Background(), reporting.HistoryQuery{Check: "c"})
			if tc.counts {
				want := "InfluxDB " + tc.notice + " since "
				if err != nil || regions(vs) != "eu" || !strings.HasPrefix(f.Notice(), want) {
					t.Errorf("History = %s, %v, Notice %q; want Own's (eu) and the notice %q…", regions(vs), err, f.Notice(), want)
				}
			} else {
				if err == nil || f.Notice() != "" || own.count() != 0 {
					t.Errorf("History = %s, %v, Notice %q, Own read %d times; want Primary's error, no notice, no read of Own",
						regions(vs), err, f.Notice(), own.count())
				}
			}
			if got := tc.primary.count(); got != tc.wantReads {
				t.Errorf("Primary read %d times, want %d", got, tc.wantReads)
			}
		})
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

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
	if n := queries.Load(); n != 2 {
		t.Errorf("InfluxDB got %d queries for 5 reads, want 2 (the first read and the probe that confirms the timeout, then none until Retry passes)", n)
	}
}

// TestFallbackRealInfluxDBErrors: through the real InfluxDB client, a query
// InfluxDB answers with 400 (the history query of one caller was bad) fails
// that read alone; InfluxDB answering 503 or refusing connections turns the
// Fallback degraded; a history query that runs past the client's timeout
// while the probe (latest verdicts) is answered fails alone.
func TestFallbackRealInfluxDBErrors(t *testing.T) {
	answer := func(code int, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			io.WriteString(w, body)
		}
	}
	// heavy hangs on the history query (it has group()) until the client
	// gives up, and answers every other query with no rows. It does not
	// count the read of the canary instances (duplicate canaries) that a
	// successful latest-verdicts read starts in the background.
	heavy := func(queries *atomic.Int64) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			if !strings.Contains(string(b), `r._field == "instance"`) {
				queries.Add(1)
			}
			if strings.Contains(string(b), "group()") {
				select {
				case <-r.Context().Done():
				case <-time.After(5 * time.Second):
				}
				return
			}
			w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		}
	}
	cases := []struct {
		name    string
		handler func(*atomic.Int64) http.HandlerFunc // nil: a dead port
		counts  bool
		queries int64
		wantErr string // in the History error when it does not count; else what is wrong, in the notice
	}{
		{"400 bad query", func(q *atomic.Int64) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				q.Add(1)
				answer(http.StatusBadRequest, `{"code":"invalid","message":"compilation failed: error @1:1-1:5: undefined identifier"}`)(w, r)
			}
		}, false, 1, "compilation failed"},
		{"history past the client timeout", heavy, false, 2, "deadline exceeded"},
		{"503 unavailable", func(q *atomic.Int64) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				q.Add(1)
				answer(http.StatusServiceUnavailable, `{"code":"unavailable","message":"service unavailable"}`)(w, r)
			}
		}, true, 1, "unavailable (HTTP 503 Service Unavailable)"},
		{"connection refused", nil, true, 0, "unreachable"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var queries atomic.Int64
			var url string
			if tc.handler == nil {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				url = "http://" + ln.Addr().String()
				ln.Close()
			} else {
				srv := httptest.NewServer(tc.handler(&queries))
				defer srv.Close()
				url = srv.URL
			}
			primary, err := influx.Open(influx.Config{URL: url, Bucket: "vigil/autogen", Timeout: 300 * time.Millisecond},
				t.TempDir(), influx.Options{Log: quiet()})
			if err != nil {
				t.Fatal(err)
			}
			defer primary.Close()
			own := &fakeSource{vs: []reporting.Verdict{{Region: "eu"}}}
			f := &reporting.Fallback{Primary: primary, Own: own, Name: "InfluxDB", Log: quiet()}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			vs, err := f.History(ctx, reporting.HistoryQuery{Check: "c"})
			if tc.counts {
				want := "InfluxDB " + tc.wantErr + " since "
				if err != nil || regions(vs) != "eu" || !strings.HasPrefix(f.Notice(), want) {
					t.Errorf("History = %s, %v, Notice %q; want Own's (eu) and the notice %q…", regions(vs), err, f.Notice(), want)
				}
			} else {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || f.Notice() != "" || own.count() != 0 {
					t.Errorf("History = %s, %v, Notice %q, Own read %d times; want an error with %q, no notice, no read of Own",
						regions(vs), err, f.Notice(), own.count(), tc.wantErr)
				}
			}
			if got := queries.Load(); got != tc.queries {
				t.Errorf("InfluxDB got %d queries, want %d", got, tc.queries)
			}
		})
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
