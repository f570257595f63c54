package store_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
	"github.com/vigil-synthetics/vigil/reporting/storetest"
)

func open(t testing.TB, dir string, o store.Options) *store.Store {
	t.Helper()
	s, err := store.Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestContract(t *testing.T) {
	storetest.RunContract(t, func(t *testing.T) storetest.Store {
		return open(t, t.TempDir(), store.Options{})
	})
}

func TestCreatesFileInDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "data")
	s := open(t, dir, store.Options{})
	if err := s.Publish(context.Background(), []reporting.Verdict{{Check: "c", Target: "t", State: reporting.StateHealthy, OK: true}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, store.FileName)); err != nil {
		t.Fatal(err)
	}
	// A zero At is stamped with the store clock.
	got, err := s.Verdicts(context.Background(), time.Minute)
	if err != nil || len(got) != 1 || got[0].At.IsZero() {
		t.Fatalf("Verdicts = %+v, %v; want one verdict stamped now", got, err)
	}
}

func TestReopenKeepsData(t *testing.T) {
	dir := t.TempDir()
	s, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC().Truncate(time.Millisecond)
	v := reporting.Verdict{Check: "c", Target: "t", Region: "r", State: reporting.StateDegraded, At: at, TTFB: 42 * time.Millisecond}
	if err := s.Publish(context.Background(), []reporting.Verdict{v}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if err := s.Publish(context.Background(), []reporting.Verdict{v}); err != store.ErrClosed {
		t.Fatalf("Publish after Close = %v, want ErrClosed", err)
	}
	s2 := open(t, dir, store.Options{})
	got, err := s2.Verdicts(context.Background(), 0)
	if err != nil || len(got) != 1 || got[0].State != reporting.StateDegraded || !got[0].At.Equal(at) {
		t.Fatalf("after reopen Verdicts = %+v, %v", got, err)
	}
	r, err := s2.Rollups(context.Background(), reporting.HistoryQuery{})
	if err != nil || len(r) != 1 || r[0].Total != 1 || r[0].TTFBMax != 42*time.Millisecond {
		t.Fatalf("after reopen Rollups = %+v, %v", r, err)
	}
}

func TestRetention(t *testing.T) {
	dir := t.TempDir()
	var clock atomic.Int64
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock.Store(now.UnixNano())
	o := store.Options{Retention: 48 * time.Hour, RollupRetention: 10 * 24 * time.Hour,
		Now: func() time.Time { return time.Unix(0, clock.Load()).UTC() }}
	s := open(t, dir, o)
	ctx := context.Background()
	var vs []reporting.Verdict
	for _, age := range []time.Duration{12 * 24 * time.Hour, 5 * 24 * time.Hour, 24 * time.Hour, time.Hour} {
		vs = append(vs, reporting.Verdict{Check: "c", Target: fmt.Sprint(age), State: reporting.StateHealthy, OK: true, At: now.Add(-age)})
	}
	if err := s.Publish(ctx, vs); err != nil {
		t.Fatal(err)
	}
	if err := s.PublishSignals(ctx, []reporting.Signal{{Pool: "p", Origin: "old", At: now.Add(-3 * 24 * time.Hour)}, {Pool: "p", Origin: "new", At: now.Add(-time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Prune(ctx); err != nil {
		t.Fatal(err)
	}
	h, _ := s.History(ctx, reporting.HistoryQuery{})
	if len(h) != 2 || h[0].Target != "24h0m0s" || h[1].Target != "1h0m0s" {
		t.Fatalf("raw verdicts after pruning at 48h: %+v", h)
	}
	l, _ := s.Verdicts(ctx, 0)
	if len(l) != 2 {
		t.Fatalf("latest after pruning: %d series, want 2", len(l))
	}
	r, _ := s.Rollups(ctx, reporting.HistoryQuery{})
	if len(r) != 3 { // 5d, 1d, 1h kept; 12d gone
		t.Fatalf("rollups after pruning at 10d: %d, want 3: %+v", len(r), r)
	}
	sig, _ := s.Signals(ctx, time.Time{})
	if len(sig) != 1 || sig[0].Origin != "new" {
		t.Fatalf("signals after pruning: %+v", sig)
	}
	// Pruning also runs at Open, in the background.
	s.Close()
	clock.Store(now.Add(6 * 24 * time.Hour).UnixNano())
	s2 := open(t, dir, o)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		r, _ = s2.Rollups(ctx, reporting.HistoryQuery{})
		if len(r) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rollups after reopening 6 days later: %d, want 2", len(r))
		}
	}
	if h, _ := s2.History(ctx, reporting.HistoryQuery{}); len(h) != 0 {
		t.Fatalf("raw verdicts after reopening 6 days later: %d, want 0", len(h))
	}
}

func TestConcurrentWritersAndReaders(t *testing.T) {
	s := open(t, t.TempDir(), store.Options{})
	ctx := context.Background()
	base := time.Now().Add(-time.Hour)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				v := reporting.Verdict{Check: fmt.Sprint("c", w), Target: "t", State: reporting.StateHealthy, OK: true,
					At: base.Add(time.Duration(i) * time.Second), Streak: i}
				if err := s.Publish(ctx, []reporting.Verdict{v}); err != nil {
					errs <- err
					return
				}
			}
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if _, err := s.Verdicts(ctx, 0); err != nil {
					errs <- err
					return
				}
				if _, err := s.Rollups(ctx, reporting.HistoryQuery{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, _ := s.Verdicts(ctx, 0)
	if len(got) != 4 {
		t.Fatalf("%d series, want 4", len(got))
	}
	for _, v := range got {
		if v.Streak != 49 {
			t.Fatalf("latest of %s has streak %d, want 49", v.Check, v.Streak)
		}
	}
	h, _ := s.History(ctx, reporting.HistoryQuery{})
	if len(h) != 200 {
		t.Fatalf("History has %d verdicts, want 200", len(h))
	}
}

const childEnv = "VIGIL_STORE_CRASH_CHILD"

// TestCrashChild is the child side of TestSurvivesKill9: it writes batches of
// 10 verdicts forever and prints the sequence number of each committed batch.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(childEnv)
	if dir == "" {
		t.Skip("child process of TestSurvivesKill9")
	}
	s, err := store.Open(dir, store.Options{})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	base := time.Now().Add(-time.Hour)
	for b := 0; ; b++ {
		batch := make([]reporting.Verdict, 10)
		for i := range batch {
			n := b*10 + i
			batch[i] = reporting.Verdict{Check: "crash", Target: fmt.Sprint("t", i), State: reporting.StateHealthy, OK: true,
				Streak: n, At: base.Add(time.Duration(n) * time.Millisecond), Err: "padding to make the row a little larger than it needs to be"}
		}
		if err := s.Publish(context.Background(), batch); err != nil {
			fmt.Println("ERR", err)
			os.Exit(2)
		}
		fmt.Println(b) // committed
	}
}

func TestSurvivesKill9(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(out)
	lastAcked := -1
	for sc.Scan() {
		line := sc.Text()
		b, err := strconv.Atoi(line)
		if err != nil {
			t.Fatalf("child: %s", line)
		}
		lastAcked = b
		if b == 150 {
			// Mid-write: the child is already inside the next transaction or about to be.
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	_ = cmd.Wait()
	// Drain anything printed between our last read and the kill: those were committed too.
	for sc.Scan() {
		if b, err := strconv.Atoi(sc.Text()); err == nil {
			lastAcked = b
		}
	}
	if lastAcked < 150 {
		t.Fatalf("child committed only %d batches before dying", lastAcked+1)
	}
	s := open(t, dir, store.Options{})
	h, err := s.History(context.Background(), reporting.HistoryQuery{Check: "crash"})
	if err != nil {
		t.Fatal(err)
	}
	wantMin := (lastAcked + 1) * 10
	if len(h) < wantMin || len(h)%10 != 0 {
		t.Fatalf("after kill -9: %d verdicts, want at least %d acknowledged ones and whole batches only", len(h), wantMin)
	}
	for i, v := range h {
		if v.Streak != i {
			t.Fatalf("verdict %d has sequence %d: a committed verdict is missing", i, v.Streak)
		}
	}
	latest, _ := s.Verdicts(context.Background(), 0)
	if len(latest) != 10 {
		t.Fatalf("latest has %d series, want 10", len(latest))
	}
	r, _ := s.Rollups(context.Background(), reporting.HistoryQuery{Check: "crash"})
	total := 0
	for _, x := range r {
		total += x.Total
	}
	if total != len(h) {
		t.Fatalf("rollups count %d runs, raw has %d: rollups and raw rows must commit together", total, len(h))
	}
}
