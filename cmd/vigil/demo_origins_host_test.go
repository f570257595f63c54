package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestDemoOriginsFaultSwitchHost: the fault switch of `vigil demo origins`
// on a loopback --listen refuses a request whose Host is another name (a
// DNS-rebinding page in the user's browser, which sends Sec-Fetch-Site:
// same-origin) with 421, leaving the origin as it was, as the agent
// listener does; Host 127.0.0.1:P and localhost:P switch it.
func TestDemoOriginsFaultSwitchHost(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := ln.Addr().String()
	ln.Close()
	var out checktest.SyncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	cmd := newRootCmd()
	cmd.SetOut(&out)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{"demo", "origins", "--origin-port", "0", "--listen", listen})
	exited := make(chan error, 1)
	go func() { exited <- cmd.ExecuteContext(ctx) }()
	defer func() {
		cancel()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			t.Error("vigil demo origins did not stop within 10s")
		}
	}()
	var originB string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-exited:
			t.Fatalf("vigil demo origins exited: %v\n%s", err, out.String())
		default:
		}
		s := out.String()
		if strings.Contains(s, "fault switches on ") {
			for _, l := range strings.Split(s, "\n") {
				if u, ok := strings.CutPrefix(l, "origin-b "); ok {
					originB = u
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no \"fault switches on\" line within 10s:\n%s", s)
		}
	}
	if originB == "" {
		t.Fatalf("no origin-b URL printed:\n%s", out.String())
	}
	// The origin's state as a user sees it: corrupt changes the bytes of
	// its /asset.bin.
	body := func() string {
		resp, err := http.Get(originB + "/asset.bin")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.Status + " " + string(b)
	}
	healthy := body()
	post := func(host string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, "http://"+listen+"/demo/fault",
			strings.NewReader(url.Values{"origin": {"origin-b"}, "mode": {"corrupt"}}.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	_, port, _ := net.SplitHostPort(listen)
	for _, host := range []string{"rebind.evil.com", "rebind.evil.com:" + port, "10.0.0.1:" + port, "[::ffff:127.0.0.1]:" + port} {
		code, b := post(host)
		if code != http.StatusMisdirectedRequest || !strings.Contains(b, "loopback") {
			t.Errorf("Host %s: %d %q, want 421 naming the loopback rule", host, code, b)
		}
		if got := body(); got != healthy {
			t.Fatalf("Host %s: origin-b changed (%q, was %q)", host, got, healthy)
		}
	}
	for _, host := range []string{"localhost:" + port, listen} {
		code, b := post(host)
		if code != http.StatusOK || !strings.Contains(b, "origin-b") {
			t.Errorf("Host %s: %d %q, want 200", host, code, b)
		}
	}
	if got := body(); got == healthy {
		t.Errorf("origin-b unchanged after the switch from Host %s: %q", listen, got)
	}
}
