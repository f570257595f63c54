package checks_test

import (
	"bufio"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// strictSMTP is a Postfix-like server with a pregreet test: a client that
// speaks before the 220 banner (sent after 150 ms) gets "554 … early
// talker" and is dropped; EHLO gets a three-line 250 answer. It returns
// the server's tcp:// URL.
func strictSMTP(t *testing.T) string {
	t.Helper()
	u := checktest.RawOrigin(t, func(c net.Conn, br *bufio.Reader) {
		c.SetReadDeadline(time.Now().Add(150 * time.Millisecond))
		if _, err := br.Peek(1); err == nil {
			c.Write([]byte("554 5.5.1 Error: early talker (pregreet)\r\n"))
			return
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		c.Write([]byte("220 mail.test ESMTP\r\n"))
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			switch {
			case strings.HasPrefix(line, "EHLO "):
				c.Write([]byte("250-mail.test\r\n250-PIPELINING\r\n250 STARTTLS\r\n"))
			case strings.HasPrefix(line, "QUIT"):
				c.Write([]byte("221 2.0.0 Bye\r\n"))
				return
			default:
				c.Write([]byte("502 5.5.2 Error: command not recognized\r\n"))
			}
		}
	})
	return "tcp://" + strings.TrimPrefix(u, "http://")
}

func runTCP(t *testing.T, spec checks.TCPSpec) checks.Result {
	t.Helper()
	c, err := checks.NewTCP(spec, checks.Expect{}, checks.Options{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c.Run(context.Background(), checks.Target{Name: "smtp", URL: strictSMTP(t)})
}

// tcp.send is written before the banner, so a server that rejects early
// talkers cannot be probed with send/expect; the failure shows what the
// server said. tcp.query waits for the banner first and passes.
func TestTCPQueryWaitsForTheBanner(t *testing.T) {
	res := runTCP(t, checks.TCPSpec{Send: "EHLO vigil\r\n", Expect: "250 STARTTLS"})
	want := `tcp expect: 250 STARTTLS not received (got 42 bytes: "554 5.5.1 Error: early talker (pregreet)\r\n")`
	if res.OK || res.Cause != checks.CauseBody || res.Err != want {
		t.Errorf("send/expect: ok %v cause %s err %q\nwant body %q", res.OK, res.Cause, res.Err, want)
	}

	res = runTCP(t, checks.TCPSpec{Query: []checks.TCPQueryStep{
		{Expect: "~^220 "}, {Send: "EHLO vigil\r\n"}, {Expect: "~^250 STARTTLS$"}, {Send: "QUIT\r\n", Expect: ""}, {Expect: "221"},
	}})
	if !res.OK {
		t.Fatalf("query: %s: %s %+v", res.Cause, res.Err, res.Assertions)
	}
	if len(res.Assertions) != 3 || res.Assertions[1].Name != "tcp query[2].expect" || !res.Assertions[1].OK {
		t.Errorf("assertions %+v", res.Assertions)
	}
	if res.Phases.TTFB <= 0 {
		t.Errorf("ttfb %v", res.Phases.TTFB)
	}
}

func TestTCPQueryFailureShowsWhatArrived(t *testing.T) {
	res := runTCP(t, checks.TCPSpec{Query: []checks.TCPQueryStep{
		{Expect: "~^220 "}, {Send: "EHLO vigil\r\n"}, {Expect: "~^250 AUTH"},
	}})
	want := `tcp query[2].expect: ~^250 AUTH not received in 3 line(s) (got "250-mail.test\r\n250-PIPELINING\r\n250 STARTTLS\r\n")`
	if res.OK || res.Cause != checks.CauseBody || res.Err != want {
		t.Errorf("ok %v cause %s err %q\nwant body %q", res.OK, res.Cause, res.Err, want)
	}
	last := res.Assertions[len(res.Assertions)-1]
	if last.Name != "tcp query[2].expect" || last.OK || last.Want != "~^250 AUTH" {
		t.Errorf("assertion %+v", last)
	}
}

func TestTCPExpectExcerptIsBounded(t *testing.T) {
	long := strings.Repeat("x", 300) + "\x00\xff"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		c.Write([]byte(long))
		c.Close()
	}()
	c, err := checks.NewTCP(checks.TCPSpec{Expect: "OK"}, checks.Expect{}, checks.Options{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	res := c.Run(context.Background(), checks.Target{Name: "o", URL: "tcp://" + ln.Addr().String()})
	want := `tcp expect: OK not received (got 302 bytes: "` + strings.Repeat("x", 100) + `"…)`
	if res.Cause != checks.CauseBody || res.Err != want {
		t.Errorf("cause %s err %q\nwant %q", res.Cause, res.Err, want)
	}
}

func TestTCPQueryConfigErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		spec checks.TCPSpec
		want string
	}{
		{"query and send", checks.TCPSpec{Send: "x", Query: []checks.TCPQueryStep{{Expect: "a"}}},
			"tcp.query: set either query or send/expect, not both"},
		{"empty step", checks.TCPSpec{Query: []checks.TCPQueryStep{{Expect: "a"}, {}}},
			"tcp.query[1]: want expect, send or both"},
		{"caret without tilde", checks.TCPSpec{Query: []checks.TCPQueryStep{{Expect: "^220"}}},
			`tcp.query[0].expect: "^220" is a substring; write "~^220" for a regular expression`},
		{"bad regex", checks.TCPSpec{Query: []checks.TCPQueryStep{{Expect: "~(?!x)"}}},
			"tcp.query[0].expect: bad regex"},
		{"empty list", checks.TCPSpec{Query: []checks.TCPQueryStep{}},
			"tcp.query: empty list"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := checks.NewTCP(c.spec, checks.Expect{}, checks.Options{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v\nwant %q", err, c.want)
			}
		})
	}
}
