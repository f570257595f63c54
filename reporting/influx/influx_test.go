package influx_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/influx"
	"github.com/vigil-synthetics/vigil/reporting/influx/influxtest"
	"github.com/vigil-synthetics/vigil/reporting/storetest"
)

func openStore(t testing.TB, rawURL, bucket, dir string, o influx.Options) *influx.Store {
	t.Helper()
	if o.MinBackoff == 0 {
		o.MinBackoff, o.MaxBackoff = 50*time.Millisecond, 500*time.Millisecond
	}
	st, err := influx.Open(influx.Config{URL: rawURL, Bucket: bucket, FlushInterval: 50 * time.Millisecond, Timeout: 5 * time.Second}, dir, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestContract(t *testing.T) {
	s := influxtest.Start(t)
	storetest.RunContract(t, func(t *testing.T) storetest.Store {
		return openStore(t, s.URL, s.NewDatabase(t), t.TempDir(), influx.Options{})
	})
}

// recorder is a reverse proxy in front of influxd that records the body of
// every write InfluxDB accepted, in order. While influxd is down it closes
// the client's connection, so the sink sees a network error as in a real
// outage.
type recorder struct {
	mu       sync.Mutex
	accepted [][]byte
}

func (rc *recorder) start(t *testing.T, upstream string) string {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
				return
			}
		}
		w.WriteHeader(http.StatusBadGateway)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/write") {
			rp.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		sw := &statusWriter{ResponseWriter: w}
		rp.ServeHTTP(sw, r)
		if sw.status/100 == 2 {
			rc.mu.Lock()
			rc.accepted = append(rc.accepted, body)
			rc.mu.Unlock()
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return s.ResponseWriter.(http.Hijacker).Hijack()
}

var streakRE = regexp.MustCompile(`streak=(\d+)i`)

// order returns the streak numbers of accepted points in delivery order.
func (rc *recorder) order() []int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []int
	for _, b := range rc.accepted {
		for _, m := range streakRE.FindAllSubmatch(b, -1) {
			n, _ := strconv.Atoi(string(m[1]))
			out = append(out, n)
		}
	}
	return out
}

func outageVerdict(base time.Time, i int) reporting.Verdict {
	return reporting.Verdict{Check: "outage", Target: "origin-a", Tier: reporting.TierShallow, Region: "eu-west", Vantage: "canary-1",
		State: reporting.StateHealthy, OK: true, StatusCode: 200, TTFB: time.Duration(i%50) * time.Millisecond,
		Streak: i, At: base.Add(time.Duration(i) * time.Millisecond), Expires: base.Add(time.Hour)}
}

// TestOutageLosesNothing: influxd stops while the canary publishes, the
// canary restarts during the outage, influxd comes back — every verdict
// arrives exactly once and in order. VIGIL_OUTAGE sets the outage length
// (default 3s; the acceptance run uses 30s).
func TestOutageLosesNothing(t *testing.T) {
	outage := 3 * time.Second
	if d, err := time.ParseDuration(os.Getenv("VIGIL_OUTAGE")); err == nil && d > 0 {
		outage = d
	}
	s := influxtest.Start(t)
	bucket := s.NewDatabase(t)
	var rc recorder
	proxyURL := rc.start(t, s.URL)
	dir := t.TempDir()
	ctx := context.Background()
	base := time.Now().Add(-time.Hour).Truncate(time.Second)

	a, err := influx.Open(influx.Config{URL: proxyURL, Bucket: bucket, FlushInterval: 50 * time.Millisecond, Timeout: 2 * time.Second},
		dir, influx.Options{MinBackoff: 50 * time.Millisecond, MaxBackoff: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	publish := func(st *influx.Store, count int) {
		for i := 0; i < count; i += 10 {
			batch := make([]reporting.Verdict, 10)
			for j := range batch {
				batch[j] = outageVerdict(base, n)
				n++
			}
			if err := st.Publish(ctx, batch); err != nil {
				t.Fatal(err)
			}
		}
	}
	publish(a, 50)
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	if err := a.Flush(fctx); err != nil {
		t.Fatal(err)
	}
	cancel()

	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	outageEnd := time.Now().Add(outage)
	half := time.Now().Add(outage / 2)
	for time.Now().Before(half) {
		publish(a, 20)
		time.Sleep(100 * time.Millisecond)
	}
	if st := a.Stats(); st.Pending == 0 || st.Retries == 0 {
		t.Fatalf("during the outage: %+v; want pending points and retries", st)
	}
	// Canary restart during the outage.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b := openStore(t, proxyURL, bucket, dir, influx.Options{})
	if p := b.Stats().Pending; p == 0 {
		t.Fatal("the reopened outbox has nothing pending")
	}
	for time.Now().Before(outageEnd) {
		publish(b, 20)
		time.Sleep(100 * time.Millisecond)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	fctx, cancel = context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := b.Flush(fctx); err != nil {
		t.Fatal(err)
	}
	st := b.Stats()
	if st.Rejected != 0 || st.SpoolDropped != 0 || st.Pending != 0 {
		t.Fatalf("stats after recovery: %+v", st)
	}

	// Exactly once: every sequence number once in InfluxDB.
	h, err := b.History(ctx, reporting.HistoryQuery{Check: "outage"})
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != n {
		t.Fatalf("InfluxDB holds %d verdicts, published %d", len(h), n)
	}
	for i, v := range h {
		if v.Streak != i {
			t.Fatalf("verdict %d in InfluxDB has sequence %d", i, v.Streak)
		}
	}
	// In order: accepted writes carried the sequence numbers in publish
	// order (a batch re-sent after a restart may repeat a prefix; it never
	// goes backwards past what was already delivered).
	ord := rc.order()
	next := 0
	for i, x := range ord {
		if x > next {
			t.Fatalf("delivery %d carried sequence %d before %d was delivered", i, x, next)
		}
		if x == next {
			next++
		}
	}
	if next != n {
		t.Fatalf("deliveries covered sequences 0..%d, want 0..%d", next-1, n-1)
	}
	t.Logf("%d verdicts, outage %s, %d accepted points (%d re-sent), %d retries", n, outage, len(ord), len(ord)-n, st.Retries)
}

// TestRejectedPointsAreDroppedNotRetried writes into a database where a
// field already has another type: InfluxDB answers 400 (field type
// conflict) and the sink must count and drop those points, deliver the
// others, and not retry forever.
func TestRejectedPointsAreDroppedNotRetried(t *testing.T) {
	s := influxtest.Start(t)
	bucket := s.NewDatabase(t)
	db := strings.TrimSuffix(bucket, "/autogen")
	at := time.Now().Add(-time.Minute)
	// A foreign writer made "vigil_verdict.streak" a string in this shard.
	resp, err := http.Post(s.URL+"/write?db="+db, "text/plain",
		strings.NewReader(fmt.Sprintf("vigil_verdict,check=foreign streak=\"x\" %d\n", at.Add(-time.Second).UnixNano())))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	st := openStore(t, s.URL, bucket, t.TempDir(), influx.Options{})
	var vs []reporting.Verdict
	for i := 0; i < 8; i++ {
		vs = append(vs, outageVerdict(at, i))
	}
	if err := st.Publish(context.Background(), vs); err != nil {
		t.Fatal(err)
	}
	// Signals go to another measurement and are unaffected.
	if err := st.PublishSignals(context.Background(), []reporting.Signal{{Pool: "p", Origin: "o", At: at, Requests: 5}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got := st.Stats()
	if got.Rejected != 8 || got.Written != 1 || got.Pending != 0 {
		t.Fatalf("stats = %+v; want 8 rejected, the signal written, nothing pending", got)
	}
	sig, err := st.Signals(context.Background(), time.Time{})
	if err != nil || len(sig) != 1 || sig[0].Requests != 5 {
		t.Fatalf("Signals = %+v, %v", sig, err)
	}
}

// BenchmarkInfluxPublish measures sustained verdict writes into a local
// influxd through the outbox (batch_size 500): Publish in batches of 100,
// then wait until all are delivered.
func BenchmarkInfluxPublish(b *testing.B) {
	s := influxtest.Start(b)
	st, err := influx.Open(influx.Config{URL: s.URL, Bucket: s.NewDatabase(b), FlushInterval: 100 * time.Millisecond}, b.TempDir(), influx.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	base := time.Now().Add(-time.Hour)
	batch := make([]reporting.Verdict, 100)
	n := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range batch {
			batch[j] = reporting.Verdict{Check: fmt.Sprint("check-", n%100), Target: fmt.Sprint("origin-", n%10), Region: "eu-west",
				Vantage: "canary-1", Tier: reporting.TierShallow, State: reporting.StateHealthy, OK: true, StatusCode: 200,
				TTFB: time.Duration(n%500) * time.Millisecond, At: base.Add(time.Duration(n) * time.Millisecond), Expires: base.Add(time.Hour)}
			n++
		}
		if err := st.Publish(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	if err := st.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "verdicts/s")
}

// BenchmarkInfluxVerdicts measures Source latency: the latest verdict of
// 10,000 series (two points each) by Flux last() + pivot.
func BenchmarkInfluxVerdicts(b *testing.B) {
	s := influxtest.Start(b)
	st, err := influx.Open(influx.Config{URL: s.URL, Bucket: s.NewDatabase(b), BatchSize: 5000, Timeout: time.Minute}, b.TempDir(), influx.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	base := time.Now().Add(-10 * time.Minute)
	const series = 10000
	for run := 0; run < 2; run++ {
		batch := make([]reporting.Verdict, 0, series)
		for i := 0; i < series; i++ {
			batch = append(batch, reporting.Verdict{Check: fmt.Sprint("check-", i/10), Target: fmt.Sprint("origin-", i%10), Region: "eu-west",
				Tier: reporting.TierShallow, State: reporting.StateHealthy, OK: true, At: base.Add(time.Duration(run) * time.Minute)})
		}
		if err := st.Publish(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	if err := st.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v, err := st.Verdicts(ctx, time.Hour)
		if err != nil || len(v) != series {
			b.Fatalf("Verdicts = %d, %v", len(v), err)
		}
	}
}

const crashEnv = "VIGIL_INFLUX_CRASH_CHILD"

// TestCrashChild is the child of TestOutboxSurvivesKill9: InfluxDB is
// unreachable, it publishes batches of 10 and prints each acknowledged one.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashEnv)
	if dir == "" {
		t.Skip("child process of TestOutboxSurvivesKill9")
	}
	st, err := influx.Open(influx.Config{URL: "http://127.0.0.1:1", Bucket: "db/rp"}, dir, influx.Options{})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	base := time.Now().Add(-time.Hour)
	for b := 0; ; b++ {
		batch := make([]reporting.Verdict, 10)
		for i := range batch {
			batch[i] = outageVerdict(base, b*10+i)
		}
		if err := st.Publish(context.Background(), batch); err != nil {
			fmt.Println("ERR", err)
			os.Exit(2)
		}
		fmt.Println(b)
	}
}

// TestOutboxSurvivesKill9: a canary killed with SIGKILL while InfluxDB is
// down keeps every acknowledged verdict, then delivers them to a real influxd
// in order, exactly once.
func TestOutboxSurvivesKill9(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(out)
	last := -1
	for sc.Scan() {
		b, err := strconv.Atoi(sc.Text())
		if err != nil {
			t.Fatalf("child: %s", sc.Text())
		}
		last = b
		if b == 100 {
			cmd.Process.Signal(syscall.SIGKILL)
			break
		}
	}
	cmd.Wait()
	for sc.Scan() {
		if b, err := strconv.Atoi(sc.Text()); err == nil {
			last = b
		}
	}
	acked := (last + 1) * 10
	s := influxtest.Start(t)
	st := openStore(t, s.URL, s.NewDatabase(t), dir, influx.Options{})
	if p := st.Stats().Pending; p < int64(acked) {
		t.Fatalf("after kill -9 the outbox holds %d points, %d were acknowledged", p, acked)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	h, err := st.History(ctx, reporting.HistoryQuery{Check: "outage"})
	if err != nil {
		t.Fatal(err)
	}
	if len(h) < acked {
		t.Fatalf("InfluxDB holds %d verdicts, %d were acknowledged", len(h), acked)
	}
	for i, v := range h {
		if v.Streak != i {
			t.Fatalf("verdict %d has sequence %d", i, v.Streak)
		}
	}
}

// TestMalformedLinesIsolatedBySplitting: a server that refuses a whole batch
// with 400 (no partial write) — the sink halves the batch until only the bad
// points are dropped, and delivers the rest in order.
func TestMalformedLinesIsolatedBySplitting(t *testing.T) {
	var mu sync.Mutex
	var stored []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte("check=bad")) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"code":"invalid","message":"unable to parse points"}`)
			return
		}
		mu.Lock()
		stored = append(stored, strings.Split(strings.TrimSpace(string(body)), "\n")...)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	st := openStore(t, srv.URL, "db/rp", t.TempDir(), influx.Options{})
	at := time.Now().Add(-time.Minute)
	var vs []reporting.Verdict
	for i := 0; i < 20; i++ {
		v := outageVerdict(at, i)
		if i == 3 || i == 11 || i == 12 {
			v.Check = "bad"
		}
		vs = append(vs, v)
	}
	if err := st.Publish(context.Background(), vs); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if s := st.Stats(); s.Rejected != 3 || s.Written != 17 || s.Retries != 0 {
		t.Fatalf("stats = %+v; want 3 rejected, 17 written, no retries", s)
	}
	mu.Lock()
	defer mu.Unlock()
	prev := -1
	for _, l := range stored {
		m := streakRE.FindStringSubmatch(l)
		n, _ := strconv.Atoi(m[1])
		if n <= prev || n == 3 || n == 11 || n == 12 {
			t.Fatalf("stored order %v", stored)
		}
		prev = n
	}
}

// TestServerErrorsAreRetried: 503 and 429 keep the points and retry until
// the server accepts them.
func TestServerErrorsAreRetried(t *testing.T) {
	var mu sync.Mutex
	calls, stored := 0, 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		calls++
		switch calls {
		case 1:
			w.WriteHeader(http.StatusServiceUnavailable)
		case 2:
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			stored += bytes.Count(body, []byte("\n")) + 1
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	defer srv.Close()
	st := openStore(t, srv.URL, "db/rp", t.TempDir(), influx.Options{})
	var vs []reporting.Verdict
	for i := 0; i < 5; i++ {
		vs = append(vs, outageVerdict(time.Now(), i))
	}
	if err := st.Publish(context.Background(), vs); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if s := st.Stats(); stored != 5 || s.Retries != 2 || s.Rejected != 0 || s.Written != 5 {
		t.Fatalf("stored %d, stats %+v; want 5 stored after 2 retries", stored, s)
	}
}

// BenchmarkInfluxRollups measures one SLO read: per-minute rollups of one
// check × target in 3 regions over 24 h of 30 s runs (8,640 verdicts), among
// 20 other checks' data.
func BenchmarkInfluxRollups(b *testing.B) {
	s := influxtest.Start(b)
	st, err := influx.Open(influx.Config{URL: s.URL, Bucket: s.NewDatabase(b), BatchSize: 5000, Timeout: time.Minute}, b.TempDir(), influx.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	now := time.Now()
	start := now.Add(-24 * time.Hour)
	var batch []reporting.Verdict
	for c := 0; c < 21; c++ {
		for _, region := range []string{"eu-west", "us-east", "ap-south"} {
			for at := start; at.Before(now); at = at.Add(30 * time.Second) {
				if c > 0 && at.Before(now.Add(-time.Hour)) {
					continue // the other checks only have the last hour
				}
				batch = append(batch, reporting.Verdict{Check: fmt.Sprint("check-", c), Target: "origin-a", Region: region,
					State: reporting.StateHealthy, OK: at.Minute()%17 != 0, TTFB: time.Duration(at.Second()+10) * time.Millisecond, At: at})
			}
		}
	}
	if err := st.Publish(ctx, batch); err != nil {
		b.Fatal(err)
	}
	if err := st.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := st.Rollups(ctx, reporting.HistoryQuery{Check: "check-0", Target: "origin-a", From: start, To: now})
		if err != nil || len(r) < 3*1439 {
			b.Fatalf("Rollups = %d rows, %v", len(r), err)
		}
	}
}
