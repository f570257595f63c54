//go:build linux

package checks_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/checks/checktest"
)

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

	limit, release := checktest.ExhaustFDs(t)
	hr, tr := run()
	release()

	want := "agent: cannot open a connection to the target: too many open files (this process's limit is " + strconv.FormatUint(limit, 10) + ": raise it"
	for name, res := range map[string]checks.Result{"http": hr, "tcp": tr} {
		if res.OK || res.Cause != checks.CauseAgent || !res.Cause.AgentFault() || !strings.HasPrefix(res.Err, want) || !res.CouldNotRun() {
			t.Errorf("%s with no descriptor left: ok %v cause %q err %q; want cause agent, err %q…", name, res.OK, res.Cause, res.Err, want)
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
