package canary

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// The load benchmarks run only with VIGIL_BENCH=1 (make bench, or
// canary/bench/run.sh); they take a minute or more each and print their
// figures. VIGIL_BENCH_SECONDS shortens or lengthens each measurement
// (default 60).
const (
	envBench       = "VIGIL_BENCH"
	envBenchSecs   = "VIGIL_BENCH_SECONDS"
	envBenchOrigin = "VIGIL_BENCH_ORIGIN"
)

func benchSeconds() time.Duration {
	if n, err := strconv.Atoi(os.Getenv(envBenchSecs)); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	return 60 * time.Second
}

// procStat is one process's CPU time and memory from /proc.
type procStat struct {
	cpu     time.Duration // utime + stime
	rss, hw int64         // VmRSS, VmHWM, bytes
}

func readProc(pid int) (procStat, error) {
	var ps procStat
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ps, err
	}
	// Fields after the parenthesised command name; utime and stime are
	// fields 14 and 15 (1-based), in clock ticks (USER_HZ, 100 on Linux).
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	ps.cpu = time.Duration(ut+st) * (time.Second / 100)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ps, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			ps.rss = kb << 10
		case "VmHWM":
			ps.hw = kb << 10
		}
	}
	return ps, nil
}

// benchOrigin serves 200 "ok" on every path until its stdin closes.
func benchOrigin() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("listen:", err)
		os.Exit(3)
	}
	fmt.Println(ln.Addr().String())
	body := []byte("ok\n")
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write(body)
	}))
}

// startBenchOrigin runs benchOrigin in a child process so its CPU is not
// counted against the canary; it returns the origin's base URL.
func startBenchOrigin(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestBenchScale10k$")
	cmd.Env = append(os.Environ(), envBenchOrigin+"=1")
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("origin: %v", err)
	}
	return "http://" + strings.TrimSpace(line)
}

// lagRecorder keeps every schedule lag.
type lagRecorder struct {
	mu   sync.Mutex
	lags []time.Duration
}

func (l *lagRecorder) add(d time.Duration) { l.mu.Lock(); l.lags = append(l.lags, d); l.mu.Unlock() }

func (l *lagRecorder) quantile(q float64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lags) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), l.lags...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(int(q*float64(len(s))), len(s)-1)]
}

// runLoad runs n pairs of one HTTP check at interval against url for d and
// reports the canary process's CPU, peak RSS, schedule lag and run count.
// withStore publishes every verdict to an embedded store (as vigil canary
// and vigil run do: batched SQLite writes, rollups); without it verdicts
// stay in memory (scheduler and probes only).
func runLoad(t *testing.T, url string, n int, interval, d time.Duration, withStore bool) (cpu time.Duration, hwm int64, p50, p99 time.Duration, runs, fails uint64) {
	return runLoadWith(t, url, n, interval, d, nil, withStore)
}

// runLoadWith is runLoad with every pair's probe replaced by probe when it
// is not nil.
func runLoadWith(t *testing.T, url string, n int, interval, d time.Duration, probe checks.Check, withStore bool) (cpu time.Duration, hwm int64, p50, p99 time.Duration, runs, fails uint64) {
	var skipped uint64
	defer func() { t.Logf("BENCH %d pairs: skipped runs (previous run still in flight): %d", n, skipped) }()
	targets := make(map[string]string, n)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("t%05d", i)
		targets[names[i]] = url
	}
	cfg := testConfig(t, targets, CheckConfig{Name: "load", Targets: names, Interval: interval,
		HTTP: &checks.HTTPSpec{Path: "/healthz"}}) // default timeout: min(10s, 80% of the interval)
	cfg.Agent.Concurrency = 256 // the default (testConfig sets 16)
	pairs := compile(t, cfg)
	if probe == nil {
		probe = pairs[0].Probe
	}
	cw := &concWatch{inner: probe}
	for i := range pairs {
		pairs[i].Probe = cw
	}
	defer func() {
		t.Logf("BENCH %d pairs: most runs in flight at once: %d (agent.concurrency %d)", n, cw.max.Load(), cfg.Agent.Concurrency)
	}()
	o := Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if withStore {
		st, err := store.Open(t.TempDir(), store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		o.Sink = st
	}
	c, err := New(cfg, pairs, o)
	if err != nil {
		t.Fatal(err)
	}
	rec := &lagRecorder{}
	c.lagHook = rec.add
	runtime.GC()
	before, _ := readProc(os.Getpid())
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := c.Run(ctx); err != nil {
		t.Fatal(err)
	}
	after, _ := readProc(os.Getpid())
	for _, v := range c.Latest() {
		_ = v
	}
	c.mu.Lock()
	for _, e := range c.entries {
		runs += e.passes.Load() + e.fails.Load()
		fails += e.fails.Load()
		skipped += e.skipped.Load()
	}
	c.mu.Unlock()
	return after.cpu - before.cpu, after.hw, rec.quantile(0.5), rec.quantile(0.99), runs, fails
}

// TestBenchScale10k: 10,000 pairs at a 10 s interval against a local
// endpoint (another process) for VIGIL_BENCH_SECONDS. Targets: RSS ≤ 256 MiB,
// p99 schedule lag ≤ 100 ms, CPU ≤ 1 core.
func TestBenchScale10k(t *testing.T) {
	if os.Getenv(envBenchOrigin) != "" {
		benchOrigin()
		return
	}
	if os.Getenv(envBench) != "1" {
		t.Skip("load benchmark: set VIGIL_BENCH=1 (make bench)")
	}
	url := startBenchOrigin(t)
	d := benchSeconds()
	t.Logf("BENCH host: %d CPUs, load average %s", runtime.NumCPU(), loadavg())
	for _, withStore := range []bool{false, true} {
		what := "with the embedded store (as vigil canary runs)"
		if !withStore {
			what = "scheduler and probes only, no store"
		}
		cpu, hwm, p50, p99, runs, fails := runLoad(t, url, 10000, 10*time.Second, d, withStore)
		cores := cpu.Seconds() / d.Seconds()
		t.Logf("BENCH scale10k, %s: pairs=10000 interval=10s duration=%s runs=%d (%.0f/s) fails=%d cpu=%.1fs (%.2f cores, %.0fµs per run) peak_rss=%.0fMiB lag_p50=%s lag_p99=%s",
			what, d, runs, float64(runs)/d.Seconds(), fails, cpu.Seconds(), cores, cpu.Seconds()/float64(max(runs, 1))*1e6, float64(hwm)/(1<<20), p50, p99)
		if fails > runs/100 {
			t.Errorf("%d of %d runs failed against a healthy local origin", fails, runs)
		}
	}
	// The scheduler alone (a check that returns at once), to tell its own
	// lag from the host's: on a busy host both are dominated by waiting
	// for a CPU.
	fd := max(d/3, 10*time.Second)
	cpu, _, p50, p99, runs, _ := runLoadWith(t, url, 10000, 10*time.Second, fd, nopCheck{}, false)
	t.Logf("BENCH scale10k scheduler only (no-op check): duration=%s runs=%d cpu=%.1fs (%.2f cores) lag_p50=%s lag_p99=%s load average %s",
		fd, runs, cpu.Seconds(), cpu.Seconds()/fd.Seconds(), p50, p99, loadavg())
}

// TestBenchVsBlackbox: 500 HTTP checks per second against the same local
// endpoint for VIGIL_BENCH_SECONDS each, first from the vigil canary
// (500 pairs at 1 s), then from prometheus-blackbox-exporter driven through
// /probe?module=http_2xx at 500 requests per second; compares the CPU
// seconds of each process.
func TestBenchVsBlackbox(t *testing.T) {
	if os.Getenv(envBench) != "1" {
		t.Skip("load benchmark: set VIGIL_BENCH=1 (make bench)")
	}
	bin := "/usr/bin/prometheus-blackbox-exporter"
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("blackbox_exporter not installed (%v): apt-get install prometheus-blackbox-exporter", err)
	}
	url := startBenchOrigin(t)
	d := benchSeconds()

	t.Logf("BENCH host: %d CPUs, load average %s", runtime.NumCPU(), loadavg())
	// No store: blackbox_exporter keeps nothing either.
	vcpu, vhwm, _, vp99, vruns, vfails := runLoad(t, url, 500, time.Second, d, false)
	vnow, _ := readProc(os.Getpid())
	t.Logf("BENCH vigil: 500 pairs @1s for %s: runs=%d fails=%d cpu=%.2fs rss=%.0fMiB (peak of the test process %.0fMiB) lag_p99=%s",
		d, vruns, vfails, vcpu.Seconds(), float64(vnow.rss)/(1<<20), float64(vhwm)/(1<<20), vp99)

	// blackbox_exporter with the stock http_2xx module.
	dir := t.TempDir()
	conf := filepath.Join(dir, "blackbox.yml")
	if err := os.WriteFile(conf, []byte("modules:\n  http_2xx:\n    prober: http\n    timeout: 5s\n    http:\n      preferred_ip_protocol: ip4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "--config.file="+conf, "--web.listen-address="+addr, "--log.level=error")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	probe := "http://" + addr + "/probe?module=http_2xx&target=" + url + "/healthz"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}, Timeout: 10 * time.Second}
	waitFor(t, "blackbox_exporter up", func() bool {
		resp, err := client.Get("http://" + addr + "/-/healthy")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	before, _ := readProc(cmd.Process.Pid)
	// Requests go out on an absolute 2 ms grid (500/s); a driver that fell
	// behind catches up rather than skipping, so both sides do the same
	// number of checks.
	var sent, ok, bad atomic.Int64
	var wg sync.WaitGroup
	begin := time.Now()
	total := int(d / (2 * time.Millisecond))
	for i := 0; i < total; i++ {
		if w := time.Until(begin.Add(time.Duration(i) * 2 * time.Millisecond)); w > 0 {
			time.Sleep(w)
		}
		sent.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := client.Get(probe)
			if err != nil {
				bad.Add(1)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(b), "probe_success 1") {
				ok.Add(1)
			} else {
				bad.Add(1)
			}
		}()
	}
	wg.Wait()
	after, _ := readProc(cmd.Process.Pid)
	bcpu := after.cpu - before.cpu
	t.Logf("BENCH blackbox_exporter: /probe at 500/s for %s: probes=%d ok=%d failed=%d cpu=%.2fs peak_rss=%.0fMiB",
		d, sent.Load(), ok.Load(), bad.Load(), bcpu.Seconds(), float64(after.hw)/(1<<20))
	// Normalise per check run, since neither side hits exactly 500/s.
	vPer := vcpu.Seconds() / float64(max(vruns, 1))
	bPer := bcpu.Seconds() / float64(max(ok.Load()+bad.Load(), 1))
	t.Logf("BENCH ratio vigil/blackbox: cpu %.2f (per check %.1fµs vs %.1fµs); target ≤ 0.5",
		vcpu.Seconds()/max(bcpu.Seconds(), 1e-9), vPer*1e6, bPer*1e6)
}

// loadavg returns the 1, 5 and 15 minute load averages: other load on the
// host inflates schedule lag.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// BenchmarkMachineObserve measures one state-machine step.
func BenchmarkMachineObserve(b *testing.B) {
	m := NewMachine(testParams())
	at := t0
	outs := []Outcome{Pass, Pass, Pass, Fail, Pass, Slow, Pass, Pass}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		at = at.Add(time.Second)
		m.Observe(at, outs[i%len(outs)])
	}
}

// concWatch records the most runs in flight at once.
type concWatch struct {
	inner    checks.Check
	now, max atomic.Int64
}

func (w *concWatch) Run(ctx context.Context, t checks.Target) checks.Result {
	n := w.now.Add(1)
	for {
		m := w.max.Load()
		if n <= m || w.max.CompareAndSwap(m, n) {
			break
		}
	}
	defer w.now.Add(-1)
	return w.inner.Run(ctx, t)
}

// nopCheck passes at once.
type nopCheck struct{}

func (nopCheck) Run(context.Context, checks.Target) checks.Result { return checks.Result{OK: true} }

// BenchmarkDispatch measures the canary's own cost per run — scheduling,
// judging, verdict and metrics — with a check that does nothing.
func BenchmarkDispatch(b *testing.B) {
	cfg := testConfig(b, map[string]string{"x": "http://127.0.0.1:1"},
		CheckConfig{Name: "n", Targets: []string{"x"}, HTTP: &checks.HTTPSpec{}})
	pairs, err := cfg.Compile(CompileOptions{})
	if err != nil {
		b.Fatal(err)
	}
	pairs[0].Probe = nopCheck{}
	c, err := New(cfg, pairs, Options{Sink: discardSink{}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Trigger("n", "x"); err != nil {
			b.Fatal(err)
		}
	}
}

type discardSink struct{}

func (discardSink) Publish(context.Context, []reporting.Verdict) error { return nil }
