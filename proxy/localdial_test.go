//go:build linux

package proxy

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"syscall"
	"testing"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// closingOrigin answers 200 and closes every connection, so that each try
// through the proxy dials anew.
func closingOrigin(t *testing.T, name string) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		io.WriteString(w, "ok "+name)
	}))
	t.Cleanup(s.Close)
	return s
}

// TestLocalDialFailureNotBlamedOnOrigin: when the proxy runs out of file
// descriptors, a try's dial fails with EMFILE before any packet leaves. That
// is the proxy's failure, not the origins': the tries count under cause
// "local", no origin is ejected or charged in its signal, the client gets a
// 503, and an error line names the process's limit. (It was connect_refused,
// and the healthy origins were ejected.)
func TestLocalDialFailureNotBlamedOnOrigin(t *testing.T) {
	a, b, c := closingOrigin(t, "a"), closingOrigin(t, "b"), closingOrigin(t, "c")
	cfg := pool1(PolicyFirst, a.URL, b.URL, c.URL)
	cfg.Pools[0].Passive = PassiveConfig{Consecutive5xx: 2, SuccessRateStdev: -1}
	cfg.Pools[0].MaxEjected = 100
	logs := &tryLogs{}
	localLog.next.Store(0) // the error line's rate limit is per process
	h := startLog(t, cfg, nil, false, testEngine(), slog.New(slog.NewTextHandler(logs, nil)))
	// The client's connection to the proxy is opened (and kept alive) now,
	// so that the requests below need no new descriptor but the proxy's.
	if code, body, _ := h.do("GET", "/", ""); code != 200 || body != "ok a" {
		t.Fatalf("before: %d %q", code, body)
	}
	requests := map[string]int64{}
	for _, o := range h.pool("web").origins {
		requests[o.name] = o.stats.requests.Load()
	}

	limit, release := checktest.ExhaustFDs(t)
	// A descriptor freed after that (the first request's connections
	// closing, a finalizer) is taken again before each request.
	var extra []*os.File
	topUp := func() {
		for range 1000 {
			f, err := os.Open(os.DevNull)
			if err != nil {
				return
			}
			extra = append(extra, f)
		}
	}
	var codes []int
	for i := 0; i < 4; i++ {
		topUp()
		code, _, _ := h.do("GET", "/", "")
		codes = append(codes, code)
	}
	for _, f := range extra {
		f.Close()
	}
	release()

	for i, code := range codes {
		if code != http.StatusServiceUnavailable {
			t.Errorf("request %d with no descriptor left: %d, want 503", i, code)
		}
	}
	for _, o := range h.pool("web").origins {
		if o.has(flagPassive) {
			t.Errorf("origin %s ejected for the proxy's own EMFILE", o.name)
		}
		if n := o.stats.requests.Load(); n != requests[o.name] {
			t.Errorf("origin %s: %d tries in its signal, want %d (local failures are not the origin's)", o.name, n, requests[o.name])
		}
		if v, _ := h.metric("vigil_proxy_tries_total", map[string]string{"pool": "web", "origin": o.name, "result": CauseLocal}); v != 4 {
			t.Errorf("tries_total{origin=%s,result=local} = %v, want 4", o.name, v)
		}
		if v, _ := h.metric("vigil_proxy_tries_total", map[string]string{"pool": "web", "origin": o.name, "result": CauseConnectRefused}); v != 0 {
			t.Errorf("tries_total{origin=%s,result=connect_refused} = %v, want 0", o.name, v)
		}
	}
	if v, _ := h.metric("vigil_proxy_retries_total", map[string]string{"pool": "web", "cause": CauseLocal}); v != 8 {
		t.Errorf("retries_total{cause=local} = %v, want 8 (two retries in each of 4 requests)", v)
	}
	want := "proxy: cannot open a connection to an origin: too many open files (this process's limit is " + strconv.FormatUint(limit, 10) + ": raise it"
	if got := logs.lines("level=ERROR", want); len(got) != 1 {
		t.Errorf("%d error lines naming the limit, want 1 (rate-limited): %q\nall logs:\n%s", len(got), got, logs.String())
	}
	if code, body, _ := h.do("GET", "/", ""); code != 200 || body != "ok a" {
		t.Fatalf("after the descriptors were freed: %d %q, want the first origin's answer", code, body)
	}
}

// TestClassifyLocalAndConnect: a dial that failed for want of a local
// resource is "local"; one that failed for a reason classify does not know
// is "connect", not connect_refused.
func TestClassifyLocalAndConnect(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		err   error
		cause string
	}{
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("socket", syscall.EMFILE)}, CauseLocal},
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("socket", syscall.ENFILE)}, CauseLocal},
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.EADDRNOTAVAIL)}, CauseLocal},
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("socket", syscall.ENOBUFS)}, CauseLocal},
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("socket", syscall.EAFNOSUPPORT)}, CauseLocal},
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.EHOSTUNREACH)}, CauseConnect},
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, CauseConnectRefused},
	} {
		cause, conn := classify(&dialError{err: tt.err}, ctx)
		if cause != tt.cause || !conn {
			t.Errorf("%v: got %s/%v, want %s/true", tt.err, cause, conn, tt.cause)
		}
	}
}
