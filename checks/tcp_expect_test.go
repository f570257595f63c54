package checks_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// pongServer answers "+PONG\r\n" to "PING\r\n", as Redis does, after a
// two-line greeting-free start; anything else gets "-ERR\r\n".
func pongServer(t *testing.T) string {
	t.Helper()
	u := checktest.RawOrigin(t, func(c net.Conn, br *bufio.Reader) {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		if line == "PING\r\n" {
			c.Write([]byte("+PONG\r\n"))
		} else {
			c.Write([]byte("-ERR unknown\r\n+INFO\r\n"))
		}
		br.ReadString('\n') // hold the connection until the client closes it
	})
	return "tcp://" + strings.TrimPrefix(u, "http://")
}

// TestTCPExpectLines: a tcp.expect regex matches at line starts and ends,
// as tcp.query's does ("~^\+PONG$" against "+PONG\r\n"), also on a later
// line; a substring still matches anywhere.
func TestTCPExpectLines(t *testing.T) {
	srv := pongServer(t)
	cases := []struct {
		name, send, expect string
		ok                 bool
	}{
		{"anchored regex, line ends in CRLF", "PING\r\n", `~^\+PONG$`, true},
		{"anchored regex on the second line", "HELLO\r\n", `~^\+INFO$`, true},
		{"regex spanning lines", "HELLO\r\n", `~unknown\r\n\+INFO`, true},
		{"substring", "PING\r\n", "PONG", true},
		{"anchored regex that does not match", "PING\r\n", `~^PONG$`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			chk, err := checks.NewTCP(checks.TCPSpec{Send: c.send, Expect: c.expect}, checks.Expect{}, checks.Options{Timeout: 500 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			r := chk.Run(context.Background(), checks.Target{Name: "redis", URL: srv})
			if r.OK != c.ok {
				t.Fatalf("expect %q: ok %v cause %q err %q, want ok %v", c.expect, r.OK, r.Cause, r.Err, c.ok)
			}
			if !c.ok && r.Cause != checks.CauseBody {
				t.Errorf("cause %q err %q, want cause body", r.Cause, r.Err)
			}
		})
	}
}

// TestTCPExpectCaret: a tcp.expect starting with "^" (a regex habit) is a
// config error suggesting "~^…", as for tcp.query.
func TestTCPExpectCaret(t *testing.T) {
	spec := checks.TCPSpec{Send: "PING\r\n", Expect: "^+PONG"}
	err := spec.ValidateAndSetDefaults()
	want := `expect: "^+PONG" is a substring; write "~^+PONG" for a regular expression`
	if err == nil || err.Error() != want || !errors.Is(err, checks.ErrBadValue) {
		t.Fatalf("err %v, want %q (ErrBadValue)", err, want)
	}
	if _, err := checks.NewTCP(checks.TCPSpec{Expect: "^+PONG"}, checks.Expect{}, checks.Options{}); err == nil || !strings.HasPrefix(err.Error(), "tcp.expect: ") {
		t.Fatalf("NewTCP: %v, want an error naming tcp.expect", err)
	}
}
