package canary

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// TestSlotSameAcrossProcesses: two schedulers started at different times
// (a restart 12 s later, a deploy days later) put a pair on the same
// wall-clock slots: (slot − Unix epoch) mod interval is the pair's spread,
// and the first run is within one interval of the start.
func TestSlotSameAcrossProcesses(t *testing.T) {
	starts := []time.Time{
		t0.Add(7*time.Second + 300*time.Millisecond),
		t0.Add(19*time.Second + 300*time.Millisecond),        // restarted 12 s later
		t0.Add(3*24*time.Hour + 17*time.Minute + 1234567890), // deployed days later
	}
	for _, interval := range []time.Duration{time.Second, 10 * time.Second, 60 * time.Second, 7 * time.Minute, time.Hour} {
		for i := range 50 {
			key := fmt.Sprintf("check%d\x00target%d\x00http://origin-%d/", i%7, i, i)
			var slots []time.Time
			for _, now := range starts {
				p := plan{interval: interval}
				first := p.first(key, now)
				if first.Before(now) || !first.Before(now.Add(interval)) {
					t.Fatalf("%s %q started at %s: first run %s later, want within one interval", interval, key, now.Format(time.TimeOnly), first.Sub(now))
				}
				if got, want := time.Duration(first.UnixNano()%int64(interval)), spread(key, interval); got != want {
					t.Fatalf("%s %q started at %s: slot at %s of the interval, want %s", interval, key, now.Format(time.TimeOnly), got, want)
				}
				slots = append(slots, first)
			}
			for j := 1; j < len(slots); j++ {
				if d := slots[j].Sub(slots[0]); d%interval != 0 {
					t.Fatalf("%s %q: a scheduler started %s later runs %s off the first one's slots", interval, key, starts[j].Sub(starts[0]), d%interval)
				}
			}
		}
	}
}

// simRun is one scheduled run of a pair in simulated time.
type simRun struct {
	key string
	at  time.Time
}

// simulateRestarts runs the schedule of keys in simulated time from start
// to end, in processes that each live for life and are then killed (runs
// planned after that are never made); the next starts down later. Each run is stored when it starts
// (the worst case for a kill: no run is lost mid-way), and every process
// resumes from the last stored start as Canary.Restore does. It returns
// the runs by key.
func simulateRestarts(keys []string, interval time.Duration, jitterFrac float64, start, end time.Time, life, down time.Duration) map[string][]time.Time {
	stored := map[string]time.Time{}
	runs := map[string][]time.Time{}
	for boot := start; boot.Before(end); boot = boot.Add(life + down) {
		death := boot.Add(life)
		if death.After(end) {
			death = end
		}
		for _, key := range keys {
			p := plan{interval: interval, jitter: jitterFrac}
			next := p.first(key, boot)
			if n, ok := p.resume(stored[key], boot); ok {
				next = n
			}
			for next.Before(death) {
				runs[key] = append(runs[key], next)
				stored[key] = next
				next = p.advance(next)
			}
		}
	}
	return runs
}

// TestRestartLoopKeepsRuns: the reviewer's crash loop — a restart every
// 12 s with 60 s checks — in simulated time. Before slots were counted from
// the epoch, 3 of 4 pairs never ran in 75 s and the fourth ran every 12.5 s.
// Now every pair runs once per interval: never twice within one interval
// (less its jitter) and never a gap longer than an interval plus its
// jitter, also when the slot falls between two processes (a slow start).
func TestRestartLoopKeepsRuns(t *testing.T) {
	const interval = 60 * time.Second
	keys := []string{"home\x00a\x00http://a/", "home\x00b\x00http://b/", "api\x00a\x00http://a/api", "api\x00b\x00http://b/api"}
	for _, tc := range []struct {
		name   string
		jitter float64
		life   time.Duration
		down   time.Duration // between a kill and the next start
		span   time.Duration
	}{
		{"reported: 75 s, restart every 12 s", 0.1, 12 * time.Second, 0, 75 * time.Second},
		{"an hour, restart every 12 s", 0.1, 12 * time.Second, 0, time.Hour},
		{"an hour, restart every 12 s, 2 s to start", 0.1, 10 * time.Second, 2 * time.Second, time.Hour},
		{"an hour, restart every 7 s, 30% jitter", 0.3, 7 * time.Second, 0, time.Hour},
		{"an hour, restart every 2 s, no jitter", 0, 1500 * time.Millisecond, 500 * time.Millisecond, time.Hour},
		{"an hour, restart every 90 s", 0.1, 80 * time.Second, 10 * time.Second, time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := t0.Add(4*time.Second + 321*time.Millisecond) // not on a minute
			window := time.Duration(tc.jitter * float64(interval))
			for try := range 20 { // jitter is random: several draws
				runs := simulateRestarts(keys, interval, tc.jitter, start, start.Add(tc.span), tc.life, tc.down)
				for _, key := range keys {
					name := strings.ReplaceAll(key, "\x00", " ")
					got := runs[key]
					// Once per interval: every slot whose jitter window ends
					// within the span runs; no more runs than slots, counting
					// the one before the first start when its window was
					// still open (the pair had not run: it runs then).
					least, most := int((tc.span-window)/interval), int((tc.span+window+interval-1)/interval)
					if len(got) < least || len(got) > most {
						t.Fatalf("try %d: %s ran %d times in %s of restarts every %s, want %d to %d (once per interval): %v",
							try, name, len(got), tc.span, tc.life, least, most, offsets(start, got))
					}
					for i := 1; i < len(got); i++ {
						// A slot whose run fell between two processes runs at
						// the next start, with a new jitter: up to down +
						// window later.
						if gap, slack := got[i].Sub(got[i-1]), 2*window+tc.down; gap < interval-slack || gap > interval+slack {
							t.Fatalf("try %d: %s: runs %s apart, want %s ± %s: %v", try, name, gap, interval, slack, offsets(start, got))
						}
					}
					if len(got) > 0 {
						if first := got[0].Sub(start); first >= interval+window {
							t.Fatalf("try %d: %s: first run %s after the first start, want within %s", try, name, first, interval+window)
						}
					}
				}
			}
		})
	}
}

func offsets(start time.Time, ts []time.Time) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Sub(start).Round(10 * time.Millisecond).String()
	}
	return out
}

// TestRestartResumesMissedSlot: what the first run after a restart is,
// from when the stored verdict's run started. A slot whose run was not made
// because of the restart is made at start; a slot that ran is not run
// again; a long outage or a first start does not become a burst.
func TestRestartResumesMissedSlot(t *testing.T) {
	const interval = 60 * time.Second // 10% jitter: a 6 s window after each slot
	key := "home\x00a\x00http://a/"
	slot := slotAfter(key, interval, t0) // the slot the restart came after
	for _, tc := range []struct {
		name string
		last time.Duration // stored run's start, from slot (none: no run stored)
		none bool
		boot time.Duration // from slot
		// want: the first run in [from, to) after slot; zero to: the next slot
		from, to time.Duration
	}{
		{name: "killed before the jittered run", last: -interval + time.Second, boot: 2 * time.Second, from: 2 * time.Second, to: 6 * time.Second},
		{name: "the slot ran", last: time.Second, boot: 2 * time.Second},
		{name: "the slot ran late", last: 5 * time.Second, boot: 20 * time.Second},
		{name: "down over the slot (a deploy)", last: -interval + 4*time.Second, boot: 10 * time.Second, from: 10 * time.Second, to: 16 * time.Second},
		{name: "down over two slots", last: -2*interval + time.Second, boot: 10 * time.Second},
		{name: "down over the slot, next slot near", last: -interval + time.Second, boot: 31 * time.Second},
		{name: "nothing stored, inside the window", none: true, boot: 2 * time.Second, from: 2 * time.Second, to: 6 * time.Second},
		{name: "nothing stored, after the window", none: true, boot: 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 50 {
				boot := slot.Add(tc.boot)
				var last time.Time
				if !tc.none {
					last = slot.Add(tc.last)
				}
				p := plan{interval: interval, jitter: 0.1}
				first := p.first(key, boot)
				if n, ok := p.resume(last, boot); ok {
					first = n
				}
				if tc.to == 0 {
					if first.Before(slot.Add(interval)) || !first.Before(slot.Add(interval+6*time.Second)) {
						t.Fatalf("first run %s after the slot, want the next slot (%s + jitter)", first.Sub(slot), interval)
					}
					return
				}
				if first.Before(slot.Add(tc.from)) || !first.Before(slot.Add(tc.to)) {
					t.Fatalf("first run %s after the slot, want the missed slot's run in [%s, %s)", first.Sub(slot), tc.from, tc.to)
				}
				if next := p.advance(first); next.Before(slot.Add(interval)) || !next.Before(slot.Add(interval+6*time.Second)) {
					t.Fatalf("after the made-up run: next %s after the slot, want the next slot (%s + jitter)", next.Sub(slot), interval)
				}
			}
		})
	}
}

// TestCanaryRestartLoop: real canaries over a real store and a real origin,
// restarted every 200 ms with 1 s checks for 5 s. Each pair runs about once
// a second (4 to 6 times; at least twice under load), never twice within 0.5 s. Before, a pair whose
// spread was over 200 ms never ran and one under it ran at every restart.
func TestCanaryRestartLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for 5 s (-short)")
	}
	var mu sync.Mutex
	hits := map[string][]time.Time{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path] = append(hits[r.URL.Path], time.Now())
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	targets := map[string]string{}
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		targets[n] = srv.URL + "/" + n
	}
	names := make([]string, 0, len(targets))
	for n := range targets {
		names = append(names, n)
	}
	sort.Strings(names)
	dir := t.TempDir()
	const interval, life, span = time.Second, 200 * time.Millisecond, 5 * time.Second
	begin := time.Now()
	for time.Since(begin) < span {
		st, err := store.Open(dir, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		cfg := testConfig(t, targets, CheckConfig{Name: "home", Targets: names, Interval: interval, HTTP: &checks.HTTPSpec{}})
		c, err := New(cfg, compile(t, cfg), Options{Sink: st, Log: testLog(t), PublishEvery: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		vs, err := st.Verdicts(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		c.Restore(vs)
		ctx, cancel := context.WithTimeout(context.Background(), min(life, span-time.Since(begin)))
		_ = c.Run(ctx)
		cancel()
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	elapsed := time.Since(begin)
	mu.Lock()
	defer mu.Unlock()
	for _, n := range names {
		got := hits["/"+n]
		// 4 to 6 on a quiet machine; under load each restart's store open
		// and close leave longer gaps (a CI run saw 3, none in the first
		// 2.8 s). The faults this test is for give 0 or about 25.
		if len(got) < 2 || len(got) > 6 {
			t.Errorf("target %s: %d runs in %s of restarts every %s with a %s interval, want 2 to 6 (about 5): %v",
				n, len(got), elapsed.Round(time.Millisecond), life, interval, offsets(begin, got))
			continue
		}
		for i := 1; i < len(got); i++ {
			if gap := got[i].Sub(got[i-1]); gap < interval/2 {
				t.Errorf("target %s: runs %s apart, want about %s: %v", n, gap.Round(time.Millisecond), interval, offsets(begin, got))
				break
			}
		}
	}
}
