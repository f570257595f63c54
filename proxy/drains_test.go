package proxy

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// statefulProxy is a proxy started with Run on a real listener, with its
// admin API on another, its state in dir and its log kept.
type statefulProxy struct {
	p     *Proxy
	url   string // data plane
	admin string // admin API
	log   *skewLog
	stop  func()
}

func runStateful(t *testing.T, cfg Config, dir string) *statefulProxy {
	t.Helper()
	lb := &skewLog{}
	p, err := New(cfg, nil, slog.New(slog.NewTextHandler(lb, nil)), WithRegistry(prometheus.NewRegistry()), WithStateDir(dir))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	eventually(t, "Run to listen", func() bool { return len(p.Addrs()) > 0 })
	admin := httptest.NewServer(p.AdminHandler())
	rp := &statefulProxy{p: p, url: "http://" + p.Addrs()[0].String(), admin: admin.URL, log: lb}
	stopped := false
	rp.stop = func() {
		if stopped {
			return
		}
		stopped = true
		admin.Close()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("Run did not return")
		}
	}
	t.Cleanup(rp.stop)
	return rp
}

func (rp *statefulProxy) post(t *testing.T, path string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, rp.admin+path, nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func (rp *statefulProxy) get(t *testing.T) string {
	t.Helper()
	resp, err := http.Get(rp.url + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// A drain survives a restart of the proxy on the same state dir (the file
// is private), an undrain too, and a saved drain of an origin no longer in
// the config is dropped with a log line.
func TestDrainSurvivesRestart(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	dir := t.TempDir()
	cfg := pool1(PolicyRoundRobin, urls(a, b)...)
	cfg.AdminToken = "s3cret"

	first := runStateful(t, cfg, dir)
	if code := first.post(t, "/api/v1/origins/o0/drain?why=disk+swap&by=alice"); code != 200 {
		t.Fatalf("drain: %d", code)
	}
	since := first.p.Origins()[0].Since["drained"]
	first.stop()
	fi, err := os.Stat(filepath.Join(dir, drainsFile))
	if err != nil {
		t.Fatal(err)
	}
	if m := fi.Mode().Perm(); m != 0o600 {
		t.Fatalf("%s has mode %#o, want 0600", drainsFile, m)
	}

	second := runStateful(t, cfg, dir)
	st := second.p.Origins()
	if !st[0].Drained || st[0].Available || st[0].Why["drained"] != "disk swap" || st[0].DrainedBy != "alice" || !st[0].Since["drained"].Equal(since) || st[1].Drained {
		t.Fatalf("after the restart: %+v, want o0 drained by alice since %v for \"disk swap\", o1 not", st, since)
	}
	for i := 0; i < 4; i++ {
		if body := second.get(t); body != "ok b" {
			t.Fatalf("request %d after the restart reached %q, want only b (a is drained)", i, body)
		}
	}
	if l := second.log.String(); !strings.Contains(l, "restored a drain") || !strings.Contains(l, "origin=o0") || !strings.Contains(l, `why="disk swap"`) || !strings.Contains(l, "by=alice") {
		t.Fatalf("no log line for the restored drain:\n%s", l)
	}
	if code := second.post(t, "/api/v1/origins/o0/undrain"); code != 200 {
		t.Fatalf("undrain: %d", code)
	}
	second.stop()

	third := runStateful(t, cfg, dir)
	if st := third.p.Origins(); st[0].Drained || !st[0].Available {
		t.Fatalf("an undrain did not survive the restart: %+v", st[0])
	}
	if code := third.post(t, "/api/v1/origins/o1/drain"); code != 200 {
		t.Fatalf("drain: %d", code)
	}
	// Without ?by= the API names no one; the log has the address the
	// request came from (the unauthenticated API does not show it).
	if st := third.p.Origins(); st[1].DrainedBy != "" || !strings.Contains(third.log.String(), "from=127.0.0.1") {
		t.Fatalf("drain without ?by=: drained_by %q, want empty, and from=127.0.0.1 in the log", st[1].DrainedBy)
	}
	// Drained again with the same why by someone else: by follows.
	if code := third.post(t, "/api/v1/origins/o1/drain?why=drained+by+admin&by=bob"); code != 200 {
		t.Fatalf("redrain: %d", code)
	}
	if st := third.p.Origins(); st[1].DrainedBy != "bob" {
		t.Fatalf("redrain by bob: drained_by %q", st[1].DrainedBy)
	}
	long := strings.Repeat("x", maxBy+1)
	if code := third.post(t, "/api/v1/origins/o0/drain?by="+long); code != 400 {
		t.Fatalf("drain with a %d-byte by: %d, want 400", len(long), code)
	}
	third.stop()

	// o1 (b) is gone from the config: its drain is dropped, and said so.
	fourth := runStateful(t, pool1(PolicyRoundRobin, urls(a)...), dir)
	if st := fourth.p.Origins(); len(st) != 1 || st[0].Drained {
		t.Fatalf("with b removed: %+v", st)
	}
	if l := fourth.log.String(); !strings.Contains(l, "dropped a saved drain: the origin is no longer in the config") || !strings.Contains(l, "url="+b.srv.URL) {
		t.Fatalf("no log line for the dropped drain:\n%s", l)
	}
	fourth.stop()
	raw, err := os.ReadFile(filepath.Join(dir, drainsFile))
	if err != nil {
		t.Fatal(err)
	}
	var doc drainsDoc
	if err := json.Unmarshal(raw, &doc); err != nil || len(doc.Drains) != 0 {
		t.Fatalf("drains file after the drop: %s (%v), want no drain", raw, err)
	}
}

// An unreadable drains file is logged and the proxy starts with no drain.
func TestDrainsFileUnreadable(t *testing.T) {
	a := newBackend(t, "a")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, drainsFile), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	rp := runStateful(t, pool1(PolicyRoundRobin, urls(a)...), dir)
	if st := rp.p.Origins(); st[0].Drained {
		t.Fatalf("%+v", st[0])
	}
	if body := rp.get(t); body != "ok a" {
		t.Fatalf("GET: %q", body)
	}
	if l := rp.log.String(); !strings.Contains(l, "the drains file is unreadable") {
		t.Fatalf("no log line for the unreadable file:\n%s", l)
	}

}

// TestRedrainUpdatesWhy: draining an origin that is already drained with a
// new reason shows the new reason (and keeps since).
func TestRedrainUpdatesWhy(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	h := start(t, pool1(PolicyRoundRobin, urls(a, b)...), nil, false)
	h.p.Drain("o0", "deploy 1")
	o := h.origin("web", "o0")
	o.mu.Lock()
	since := o.since[bit(flagDrained)]
	o.mu.Unlock()
	time.Sleep(10 * time.Millisecond)
	h.p.Drain("o0", "disk replacement")
	o.mu.Lock()
	why, since2 := o.why[bit(flagDrained)], o.since[bit(flagDrained)]
	o.mu.Unlock()
	if why != "disk replacement" || !since2.Equal(since) {
		t.Errorf("after a second drain: why %q since %v, want %q since %v", why, since2, "disk replacement", since)
	}
}
