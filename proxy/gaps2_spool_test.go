package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSpooledBytesCountWhatReachedTheFile: the bytes of a spooled body that
// was not received whole still took room in body_temp_dir, and
// vigil_proxy_request_bodies_spooled_bytes_total counts them: a client that
// leaves after 150000 of 300000 bytes adds 150000, a chunked body stopped
// at max_body (100000) adds 100000; neither is a body spooled whole
// (vigil_proxy_request_bodies_spooled_total stays 0). Before, both added
// nothing, so the metric understated the disk the spool took.
func TestSpooledBytesCountWhatReachedTheFile(t *testing.T) {
	og := newSpoolOrigin(t)
	dir := filepath.Join(t.TempDir(), "spool")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := pool1(PolicyRoundRobin, og.srv.URL)
	cfg.BodyTempDir = dir
	cfg.MaxBody = 100000
	cfg.Pools[0].Retry.MaxBufferedBody = 1 << 10
	h := start(t, cfg, nil, false)
	web := map[string]string{"pool": "web"}
	val := func(name string) float64 {
		t.Helper()
		v, ok := h.metric(name, web)
		if !ok {
			t.Fatalf("%s{pool=\"web\"} does not exist", name)
		}
		return v
	}
	const (
		spooled = "vigil_proxy_request_bodies_spooled_total"
		bytes   = "vigil_proxy_request_bodies_spooled_bytes_total"
	)
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", strings.TrimPrefix(h.front.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		return c
	}

	// A client that leaves half-way through its upload.
	c := dial()
	fmt.Fprintf(c, "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", 90000, strings.Repeat("a", 45000))
	// The client leaves once the file holds all it sent.
	eventually(t, "the 45000 bytes sent in the spool file", func() bool { return spoolSize(t, dir) == 45000 })
	c.Close()
	eventually(t, "the spool file closed", func() bool { return openSpools(t, dir) == 0 })
	for i := 0; i < 100 && val(bytes) == 0; i++ { // counted as the file closes
		time.Sleep(10 * time.Millisecond)
	}
	if s, b := val(spooled), val(bytes); s != 0 || b != 45000 {
		t.Fatalf("after a client left at 45000 of 90000 bytes: spooled %v, bytes %v; want 0, 45000", s, b)
	}

	// A chunked body (no length to refuse it up front) over max_body.
	c = dial()
	defer c.Close()
	io.WriteString(c, "POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
	chunk := fmt.Sprintf("%x\r\n%s\r\n", 10000, strings.Repeat("b", 10000))
	go func() {
		for range 15 {
			if _, err := io.WriteString(c, chunk); err != nil {
				return
			}
		}
		io.WriteString(c, "0\r\n\r\n")
	}()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a body over max_body: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("chunked body over max_body: %d, want 413", resp.StatusCode)
	}
	if s, b := val(spooled), val(bytes); s != 0 || b != 45000+100000 {
		t.Fatalf("after a body stopped at max_body (100000): spooled %v, bytes %v; want 0, %d", s, b, 45000+100000)
	}
	if n := og.heads.Load(); n != 0 {
		t.Fatalf("the origin got %d requests, want none", n)
	}
}

// spoolSize is the size of this process's one open spool file in dir (-1
// when there is none): unlinked, it is found through /proc/self/fd.
func spoolSize(t *testing.T, dir string) int64 {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	for _, e := range ents {
		p := filepath.Join("/proc/self/fd", e.Name())
		if l, err := os.Readlink(p); err == nil && strings.HasPrefix(l, filepath.Join(dir, "vigil-body-")) {
			if fi, err := os.Stat(p); err == nil {
				return fi.Size()
			}
		}
	}
	return -1
}
