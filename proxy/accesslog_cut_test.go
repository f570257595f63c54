package proxy

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestCutHeadAccessLog: on the fast engine, a connection cut off in the
// middle of a request head gets one access log line, as nginx and HAProxy
// log one: 408 with cut header_timeout when read_header_timeout ran out
// (slowloris), 400 with cut closed_in_head when the client left, each with
// the client, when the head began, and head_bytes received. A connection
// that never sent a byte, or only an empty line, and a kept-alive one that
// stays idle get none. Before, such connections were only counted.
func TestCutHeadAccessLog(t *testing.T) {
	origin := rawResponder(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false)
	path := filepath.Join(t.TempDir(), "access.log")
	cfg := pool1(PolicyRoundRobin, origin)
	cfg.Engine = EngineFast
	cfg.AccessLog = path
	cfg.ReadHeaderTimeout = 400 * time.Millisecond
	cfg.IdleTimeout = 400 * time.Millisecond
	p, err := New(cfg, nil, testLogger(t), WithRegistry(prometheus.NewRegistry()))
	if err != nil {
		t.Fatal(err)
	}
	addr := runProxy(t, p)
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(10 * time.Second))
		return c
	}
	// closed waits until the proxy closes c.
	closed := func(c net.Conn) {
		t.Helper()
		if n, err := io.Copy(io.Discard, c); err != nil || n != 0 {
			t.Errorf("read %d bytes, %v; want the proxy to close the connection without an answer", n, err)
		}
	}
	const slowHead = "GET /slow HTTP/1.1\r\nHost: x\r\nX-A"
	const nextHead = "GET /next HTTP/1.1\r\nHo"
	const halfHead = "GET / HTTP/1.1\r\nHo"
	slow := dial()
	io.WriteString(slow, slowHead)
	silent := dial()
	blank := dial()
	io.WriteString(blank, "\r\n")
	// A kept-alive connection whose next head stalls, one that stays idle.
	next, idle := dial(), dial()
	for _, c := range []net.Conn{next, idle} {
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	io.WriteString(next, nextHead)
	half := dial()
	io.WriteString(half, halfHead)
	time.Sleep(100 * time.Millisecond)
	remoteHalf := half.LocalAddr().String()
	half.Close()
	for _, c := range []net.Conn{slow, silent, blank, next, idle} {
		closed(c)
	}

	var lines []cutLogLine
	read := func() { lines = readCutLog(t, path) }
	eventually(t, "5 access log lines", func() bool { read(); return len(lines) >= 5 })
	time.Sleep(1500 * time.Millisecond) // a line more would be flushed by now
	read()
	want := map[string]cutWant{ // by remote
		slow.LocalAddr().String(): {408, cutHeaderTimeout, len(slowHead), false},
		next.LocalAddr().String(): {408, cutHeaderTimeout, len(nextHead), false},
		remoteHalf:                {400, cutClosedInHead, len(halfHead), false},
	}
	served := checkCutLines(t, lines, want)
	if served != 2 || len(want) != 0 {
		t.Fatalf("%d lines of served requests (want 2), cut connections without a line: %v\nlines: %+v", served, want, lines)
	}
}

// cutLogLine is an access-log line as the cut-connection tests read it.
type cutLogLine struct {
	Remote    string   `json:"remote"`
	TLS       *bool    `json:"tls"`
	Status    int      `json:"status"`
	Bytes     *int     `json:"bytes"`
	Duration  *float64 `json:"duration"`
	Cut       string   `json:"cut"`
	HeadBytes int      `json:"head_bytes"`
	Path      string   `json:"path"`
	TS        string   `json:"ts"`
}

// readCutLog reads the access log at path as cutLogLines.
func readCutLog(t *testing.T, path string) []cutLogLine {
	t.Helper()
	b, _ := os.ReadFile(path)
	var lines []cutLogLine
	for _, s := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if s == "" {
			continue
		}
		var l cutLogLine
		if err := json.Unmarshal([]byte(s), &l); err != nil {
			t.Fatalf("access log line %q: %v", s, err)
		}
		lines = append(lines, l)
	}
	return lines
}

// cutWant is what the access-log line of a connection cut mid-head must
// say.
type cutWant struct {
	status int
	cut    string
	head   int
	tls    bool
}

// checkCutLines checks an access log's lines: each is a served request's
// (GET / answered 200) or the line of a cut connection in wants (by client
// address; those found are deleted from wants), with its status, cut,
// head_bytes and tls, no bytes, a duration (from 0.3 to 3 s for a head
// cut by a 400ms read_header_timeout), a ts and no path. It returns how
// many lines were of served requests.
func checkCutLines(t *testing.T, lines []cutLogLine, wants map[string]cutWant) (served int) {
	t.Helper()
	for _, l := range lines {
		if l.Path == "/" && l.Status == 200 {
			served++
			continue
		}
		w, found := wants[l.Remote]
		if !found {
			t.Errorf("unexpected line %+v", l)
			continue
		}
		delete(wants, l.Remote)
		if l.Status != w.status || l.Cut != w.cut || l.HeadBytes != w.head || l.Path != "" ||
			l.TLS == nil || *l.TLS != w.tls || l.Bytes == nil || *l.Bytes != 0 || l.Duration == nil {
			t.Errorf("line %+v, want status %d, cut %s, head_bytes %d, tls %v, bytes 0, a duration, no path", l, w.status, w.cut, w.head, w.tls)
		}
		if _, err := time.Parse(time.RFC3339Nano, l.TS); err != nil {
			t.Errorf("ts %q: %v", l.TS, err)
		}
		if l.Cut == cutHeaderTimeout && l.Duration != nil && (*l.Duration < 0.3 || *l.Duration > 3) {
			t.Errorf("duration %v of a head cut by read_header_timeout 400ms", *l.Duration)
		}
	}
	return served
}
