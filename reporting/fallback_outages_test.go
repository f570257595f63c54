package reporting_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/influx"
)

// TestFallbackTwoOutagesNoPageLoads: InfluxDB (an HTTP server answering
// 503 while "down") fails, a page load turns the page degraded, InfluxDB
// works again for a few seconds while nobody loads the page, then fails
// again. The page's Vigil-Degraded header dates the second outage from its
// own start, not the first one's, and the recovery lines' failed_for are
// each outage's length: the first outage's start is forgotten once the
// store works again, without a page load.
func TestFallbackTwoOutagesNoPageLoads(t *testing.T) {
	var down atomic.Bool
	influxd := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if down.Load() {
			http.Error(w, `{"code":"unavailable","message":"influxd is stopping"}`, http.StatusServiceUnavailable)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/write") {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "text/csv; charset=utf-8") // no rows
	}))
	defer influxd.Close()
	primary, err := influx.Open(influx.Config{URL: influxd.URL, Bucket: "vigil/autogen", Timeout: 2 * time.Second},
		t.TempDir(), influx.Options{Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer primary.Close()
	var logs lockedLog
	f := &reporting.Fallback{Primary: primary, Own: &fakeSource{vs: []reporting.Verdict{{Check: "c", Region: "eu"}}},
		Name: "InfluxDB", Retry: 200 * time.Millisecond, Log: slog.New(slog.NewTextHandler(&logs, nil))}
	page := httptest.NewServer(f.Mark(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		vs, err := f.Verdicts(r.Context(), 0)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		io.WriteString(w, regions(vs))
	})))
	defer page.Close()
	load := func() (mark, body string) {
		t.Helper()
		resp, err := http.Get(page.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.Header.Get(reporting.DegradedHeader), string(b)
	}
	since := regexp.MustCompile(`since (\S+):`)
	markSince := func(mark string) time.Time {
		t.Helper()
		m := since.FindStringSubmatch(mark)
		if m == nil {
			t.Fatalf("%s: %q, want a degraded mark with its since", reporting.DegradedHeader, mark)
		}
		at, err := time.Parse(time.RFC3339, m[1])
		if err != nil {
			t.Fatal(err)
		}
		return at
	}
	waitLog := func(what string, n int) {
		t.Helper()
		for end := time.Now().Add(10 * time.Second); strings.Count(logs.String(), what) < n; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("no %d× %q in the log within 10s:\n%s", n, what, logs.String())
			}
		}
	}

	// Outage 1, seen by a page load.
	down.Store(true)
	start1 := time.Now()
	mark, body := load()
	if body != "eu" || markSince(mark).Before(start1.Truncate(time.Second)) {
		t.Fatalf("outage 1: %q, %q; want Own's results with the mark", mark, body)
	}
	// A second later InfluxDB works again; nobody loads the page.
	time.Sleep(time.Second)
	down.Store(false)
	end1 := time.Now()
	// Outage 2 starts 1.5s later (the Fallback probes a failing store
	// every second, here).
	time.Sleep(1500 * time.Millisecond)
	down.Store(true)
	start2 := time.Now()
	time.Sleep(300 * time.Millisecond)
	mark, body = load()
	if body != "eu" {
		t.Fatalf("outage 2: %q, want Own's results", body)
	}
	if got := markSince(mark); got.Before(start2.Truncate(time.Second)) {
		t.Fatalf("outage 2 began at %s, the page's %s says since %s (outage 1 began at %s): the first outage's start was kept",
			start2.UTC().Format(time.RFC3339Nano), reporting.DegradedHeader, got.Format(time.RFC3339), start1.UTC().Format(time.RFC3339Nano))
	}
	time.Sleep(time.Second)
	down.Store(false)
	end2 := time.Now()
	waitLog("store answers reads again", 2)
	var failedFor []time.Duration
	for _, m := range regexp.MustCompile(`store answers reads again.* failed_for=(\S+)`).FindAllStringSubmatch(logs.String(), -1) {
		d, err := time.ParseDuration(m[1])
		if err != nil {
			t.Fatal(err)
		}
		failedFor = append(failedFor, d)
	}
	// Each outage's length, rounded to the second, plus the watch's
	// 1s between probes.
	for i, real := range []time.Duration{end1.Sub(start1), end2.Sub(start2)} {
		if i >= len(failedFor) || failedFor[i] > real+2*time.Second {
			t.Errorf("recovery lines' failed_for %v; outage %d lasted %s\n%s", failedFor, i+1, real.Round(time.Millisecond), logs.String())
		}
	}
}

// lockedLog is a log destination safe for the Fallback's goroutines.
type lockedLog struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// sincerSource is a fakeSource that reports when its current failures
// began (reporting.FailingSincer).
type sincerSource struct {
	*fakeSource
	mu    sync.Mutex
	since time.Time
}

func (s *sincerSource) FailingSince() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.since
}

func (s *sincerSource) setSince(t time.Time) {
	s.mu.Lock()
	s.since = t
	s.mu.Unlock()
}

// TestFallbackFailingSinceEndsOutage: for a Primary that knows when its
// failures began (InfluxDB's writes and reads by anyone), a run that began
// after the degraded state's start dates the notice from that run, and a
// Primary that reported no failure after it had starts a new outage at the
// next failed read, with its own since and failed_for.
func TestFallbackFailingSinceEndsOutage(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 17, 25, 41, 0, time.UTC)
	now := t0
	primary := &sincerSource{fakeSource: &fakeSource{}}
	var logs lockedLog
	f := &reporting.Fallback{Primary: primary, Own: &fakeSource{vs: []reporting.Verdict{{Region: "eu"}}}, Name: "InfluxDB",
		Retry: time.Hour, Log: slog.New(slog.NewTextHandler(&logs, nil)), Now: func() time.Time { return now }}
	read := func() {
		t.Helper()
		if vs, err := f.Verdicts(t.Context(), 0); err != nil || regions(vs) != "eu" {
			t.Fatalf("Verdicts = %s, %v; want Own's", regions(vs), err)
		}
	}
	primary.set(errDown)
	primary.setSince(t0)
	read()
	want := "InfluxDB unreachable since 2026-12-01T17:25:41Z"
	if got := f.Notice(); !strings.HasPrefix(got, want) {
		t.Fatalf("outage 1: Notice %q, want %q", got, want)
	}
	// InfluxDB worked from 17:27:21 (a write, someone's read); outage 2's
	// first failure at 17:33:48.
	now = t0.Add(8 * time.Minute)
	primary.setSince(time.Date(2026, 12, 1, 17, 33, 48, 0, time.UTC))
	want = "InfluxDB unreachable since 2026-12-01T17:33:48Z"
	if got := f.Notice(); !strings.HasPrefix(got, want) {
		t.Fatalf("outage 2: Notice %q, want %q (outage 1's start forgotten)", got, want)
	}
	// It works again (no failure at all), and fails again at 17:40:00:
	// the next failed read, although within Retry, tries it and starts
	// a new outage.
	primary.setSince(time.Time{})
	_ = f.Notice()
	now = time.Date(2026, 12, 1, 17, 40, 0, 0, time.UTC)
	before := primary.count()
	read()
	if primary.count() != before+1 {
		t.Fatalf("Primary read %d times after it reported no failure, want once", primary.count()-before)
	}
	primary.setSince(now) // the store counted the failed read
	want = "InfluxDB unreachable since 2026-12-01T17:40:00Z"
	if got := f.Notice(); !strings.HasPrefix(got, want) {
		t.Fatalf("outage 3: Notice %q, want %q", got, want)
	}
	primary.set(nil)
	primary.setSince(time.Time{})
	now = now.Add(30 * time.Second)
	// Retry is an hour: the read goes to Primary because it reported no
	// failure.
	if _, err := f.Verdicts(t.Context(), 0); err != nil || f.Notice() != "" {
		t.Fatalf("after outage 3: %v, Notice %q; want Primary's answer and no notice", err, f.Notice())
	}
	if !strings.Contains(logs.String(), "failed_for=30s") {
		t.Errorf("no recovery line with failed_for=30s (outage 3's length):\n%s", logs.String())
	}
}
