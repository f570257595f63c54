//go:build linux

package checks_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// exhaustFDs lowers this process's open-file limit to a little above what
// is open and opens /dev/null until the limit is reached, so that the next
// socket() fails with EMFILE. It returns the lowered limit and the function
// that frees the descriptors and restores the limit.
func exhaustFDs(t *testing.T) (uint64, func()) {
	t.Helper()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	lim := old
	lim.Cur = uint64(len(ents)) + 64
	if lim.Cur > old.Cur {
		t.Fatalf("only %d descriptors allowed, %d open", old.Cur, len(ents))
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	var files []*os.File
	release := func() {
		for _, f := range files {
			f.Close()
		}
		files = nil
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
			t.Errorf("restoring the open-file limit: %v", err)
		}
	}
	for i := 0; i < 1000; i++ {
		f, err := os.Open(os.DevNull)
		if err != nil {
			if !errors.Is(err, syscall.EMFILE) {
				release()
				t.Fatalf("opening %s: %v, want EMFILE", os.DevNull, err)
			}
			return lim.Cur, release
		}
		files = append(files, f)
	}
	release()
	t.Fatal("the open-file limit was never reached")
	return 0, nil
}

// TestLocalDialFailureIsTheAgents: a run whose dial fails because the agent
// is out of file descriptors is not the target's outage: cause internal
// ("could not run", vigil's own trouble) with a message naming the
// process's limit, not connect_refused or connect. The target is a real,
// healthy listener, which passes once descriptors are free again.
func TestLocalDialFailureIsTheAgents(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	h, err := checks.NewHTTP(checks.HTTPSpec{}, checks.Expect{}, checks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	tc, err := checks.NewTCP(checks.TCPSpec{}, checks.Expect{}, checks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tcpURL := "tcp://" + strings.TrimPrefix(srv.URL, "http://")
	run := func() (checks.Result, checks.Result) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return h.Run(ctx, checks.Target{Name: "o", URL: srv.URL}), tc.Run(ctx, checks.Target{Name: "o", URL: tcpURL})
	}

	limit, release := exhaustFDs(t)
	hr, tr := run()
	release()

	want := "agent: cannot open a connection to the target: too many open files (this process's limit is " + strconv.FormatUint(limit, 10) + ": raise it"
	for name, res := range map[string]checks.Result{"http": hr, "tcp": tr} {
		if res.OK || res.Cause != checks.CauseInternal || !strings.HasPrefix(res.Err, want) || !res.CouldNotRun() {
			t.Errorf("%s with no descriptor left: ok %v cause %q err %q; want cause internal, err %q…", name, res.OK, res.Cause, res.Err, want)
		}
	}
	hr, tr = run()
	if !hr.OK || !tr.OK {
		t.Fatalf("after the descriptors were freed: http %v %q, tcp %v %q; want both to pass", hr.Cause, hr.Err, tr.Cause, tr.Err)
	}
}

// TestLocalDialErrorsUnchangedForTheTarget: a refused connection is still
// the target's connect_refused.
func TestLocalDialErrorsUnchangedForTheTarget(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	tc, err := checks.NewTCP(checks.TCPSpec{}, checks.Expect{}, checks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if res := tc.Run(ctx, checks.Target{Name: "o", URL: "tcp://" + addr}); res.Cause != checks.CauseConnectRefused {
		t.Fatalf("closed port: cause %q err %q, want connect_refused", res.Cause, res.Err)
	}
}
