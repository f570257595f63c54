package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// logLine writes one access log line for a GET of path.
func logLine(a *accessLog, path string) {
	a.write(time.Now(), httptest.NewRequest("GET", path, nil), 200, 2, &accessEntry{})
}

// readLines returns the file's lines, failing on any that is not JSON.
func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 {
		return nil
	}
	if b[len(b)-1] != '\n' {
		t.Errorf("%s does not end with a whole line: %q", path, b)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Errorf("%s: a line is not JSON (%v): %q", path, err, l)
		}
	}
	return lines
}

// TestAccessLogLineAfterReloadGoesToNewLog: a request that began before a
// reload (a long download, a WebSocket tunnel) and ends after the old log
// was closed gets its line in the new log (it was dropped), through any
// number of reloads; with the log turned off, the line is dropped.
func TestAccessLogLineAfterReloadGoesToNewLog(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-release
		}
		io.WriteString(w, "done")
	}))
	defer slow.Close()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	cfg := pool1(PolicyFirst, slow.URL)
	cfg.AccessLog = path
	h := start(t, cfg, nil, false)
	old := h.p.alog.Load()
	got := make(chan int, 1)
	go func() {
		code, _, _ := h.do("GET", "/slow", "")
		got <- code
	}()
	eventually(t, "the slow request to reach its origin", func() bool {
		for _, o := range h.p.Origins() {
			if o.InFlight > 0 {
				return true
			}
		}
		return false
	})
	// logrotate: rename, then reload; the old log closes 2 s later.
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := h.p.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the replaced log to be closed", func() bool {
		old.mu.RLock()
		defer old.mu.RUnlock()
		return old.closed
	})
	close(release)
	if code := <-got; code != 200 {
		t.Fatalf("slow request: %d", code)
	}
	h.p.closeAccessLog()
	lines := append(readLines(t, path+".1"), readLines(t, path)...)
	if n := strings.Count(strings.Join(lines, "\n"), `"path":"/slow"`); n != 1 {
		t.Errorf("%d lines for the request that ended after the reload, want 1:\n%s", n, strings.Join(lines, "\n"))
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), `"path":"/slow"`) {
		t.Errorf("the line is not in the new log: %q", b)
	}

	// Several reloads in a row: the line is handed on to the open log.
	var logs []*accessLog
	for i := range 3 {
		a, err := openAccessLog(filepath.Join(dir, "chain"+string(rune('0'+i))+".log"), false, testLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		logs = append(logs, a)
	}
	logs[0].next.Store(logs[1])
	logs[0].close()
	logs[1].next.Store(logs[2])
	logs[1].close()
	logLine(logs[0], "/chained")
	logs[2].close()
	if l := readLines(t, filepath.Join(dir, "chain2.log")); len(l) != 1 || !strings.Contains(l[0], `"path":"/chained"`) {
		t.Errorf("after two reloads the line went to %q, want the open log", l)
	}
	// Turned off (no successor): dropped, nothing blocks or panics.
	logLine(logs[2], "/off")
	if l := readLines(t, filepath.Join(dir, "chain2.log")); len(l) != 1 {
		t.Errorf("a line written after the log was turned off: %q", l)
	}
}

// TestAccessLogStalledPipeNeverBlocks: with access_log on a pipe nobody
// reads (a stuck log shipper on stdout), requests never wait for the log:
// 10,000 lines are handed over without waiting for the pipe, the ones that do not fit
// are dropped, counted and logged at most once a minute, and close gives
// up after about a second.
func TestAccessLogStalledPipeNeverBlocks(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	logs := &checktest.SyncBuffer{}
	a := newAccessLog("stdout", w, nil, false, 20*time.Millisecond, slog.New(slog.NewTextHandler(logs, nil)))
	path := "/" + strings.Repeat("a", 300)
	done := make(chan time.Duration, 1)
	go func() {
		t0 := time.Now()
		for range 10000 {
			logLine(a, path)
		}
		done <- time.Since(t0)
	}()
	select {
	case d := <-done:
		// Not a timing assertion (the machine may be loaded): a write that
		// waited for the pipe would never return.
		t.Logf("10000 writes to a stalled pipe took %v", d)
	case <-time.After(10 * time.Second):
		t.Fatal("writes blocked on a stalled pipe")
	}
	const warn = `msg="proxy: access log is behind; lines dropped" file=stdout dropped=`
	eventually(t, "the dropped lines to be logged", func() bool { return strings.Contains(logs.String(), warn) })
	// More drops within the minute: no second warning yet.
	for range 5000 {
		logLine(a, path)
	}
	time.Sleep(200 * time.Millisecond)
	if c := strings.Count(logs.String(), warn); c != 1 {
		t.Errorf("%d drop warnings within a minute, want 1:\n%s", c, logs.String())
	}
	t0 := time.Now()
	a.close()
	if d := time.Since(t0); d > 3*time.Second {
		t.Errorf("close on a stalled pipe took %v", d)
	}
	// Once the reader reads, the kept lines come out whole and the rest
	// of the drops is logged: every line is either read or counted.
	var read int
	var mu sync.Mutex
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := r.Read(buf)
			mu.Lock()
			read += bytes.Count(buf[:n], []byte("\n"))
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	dropped := func() (n int) {
		s := logs.String()
		for _, part := range strings.Split(s, warn)[1:] {
			var d int
			for i := 0; i < len(part) && part[i] >= '0' && part[i] <= '9'; i++ {
				d = d*10 + int(part[i]-'0')
			}
			n += d
		}
		return n
	}
	eventually(t, "every line read or counted as dropped", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return read+dropped() == 15000
	})
	if d := dropped(); d < 15000-accessLogQueue-3*accessLogBuffer/len(path) {
		t.Errorf("%d lines read and %d counted as dropped of 15000", read, d)
	}
}

// TestAccessLogWriteErrorLoggedOnce: a log whose writes fail (here a file
// opened read-only) says so once, not every second, and never claims it
// writes again while it does not.
func TestAccessLogWriteErrorLoggedOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.log")
	if err := os.WriteFile(path, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path) // read-only: every write fails
	if err != nil {
		t.Fatal(err)
	}
	logs := &checktest.SyncBuffer{}
	a := newAccessLog(path, f, f, false, 20*time.Millisecond, slog.New(slog.NewTextHandler(logs, nil)))
	for i := range 20 {
		logLine(a, "/x")
		time.Sleep(20 * time.Millisecond)
		if i == 0 {
			eventually(t, "the write error to be logged", func() bool { return strings.Contains(logs.String(), "write failed") })
		}
	}
	a.close()
	s := logs.String()
	if c := strings.Count(s, `msg="proxy: access log write failed; lines are lost until it works again" file=`+path); c != 1 {
		t.Errorf("the write error was logged %d times, want once:\n%s", c, s)
	}
	if strings.Contains(s, "writes again") {
		t.Errorf("\"writes again\" logged while every write failed:\n%s", s)
	}
}

// failingFile writes to a real file, but while fail is set each write puts
// only half its bytes there and fails (a disk filling up).
type failingFile struct {
	f    *os.File
	mu   sync.Mutex
	fail bool
}

func (ff *failingFile) set(fail bool) { ff.mu.Lock(); ff.fail = fail; ff.mu.Unlock() }

func (ff *failingFile) Write(p []byte) (int, error) {
	ff.mu.Lock()
	fail := ff.fail
	ff.mu.Unlock()
	if !fail {
		return ff.f.Write(p)
	}
	n, _ := ff.f.Write(p[:len(p)/2])
	return n, &os.PathError{Op: "write", Path: ff.f.Name(), Err: syscall.ENOSPC}
}

// TestAccessLogDiskFullKeepsWholeLines: a write that fails half-way is cut
// back off the file, so the file only ever holds whole JSON lines; the
// failure is logged once and "writes again" only once a write reached the
// file. On stdout, which cannot be cut back, the next line starts on a
// line of its own.
func TestAccessLogDiskFullKeepsWholeLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.log")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	ff := &failingFile{f: f}
	logs := &checktest.SyncBuffer{}
	a := newAccessLog(path, ff, f, false, 20*time.Millisecond, slog.New(slog.NewTextHandler(logs, nil)))
	defer a.close()
	has := func(p string) bool { b, _ := os.ReadFile(path); return strings.Contains(string(b), p) }
	logLine(a, "/before")
	eventually(t, "the first line on disk", func() bool { return has("/before") })

	ff.set(true)
	for range 5 {
		logLine(a, "/while-full-"+strings.Repeat("x", 100))
		time.Sleep(30 * time.Millisecond)
	}
	eventually(t, "the write error to be logged", func() bool { return strings.Contains(logs.String(), "write failed") })
	time.Sleep(60 * time.Millisecond)
	if l := readLines(t, path); len(l) != 1 {
		t.Errorf("while writes fail the file holds %d lines, want the 1 written before:\n%s", len(l), strings.Join(l, "\n"))
	}
	if s := logs.String(); strings.Contains(s, "writes again") {
		t.Errorf("\"writes again\" logged while writes fail:\n%s", s)
	}

	ff.set(false)
	logLine(a, "/after")
	eventually(t, "\"writes again\" to be logged", func() bool { return strings.Contains(logs.String(), "writes again") })
	if !has("/after") {
		t.Errorf("\"writes again\" logged before the line reached the file")
	}
	l := readLines(t, path)
	if len(l) != 2 || !strings.Contains(l[0], "/before") || !strings.Contains(l[1], "/after") {
		t.Errorf("file after recovery:\n%s", strings.Join(l, "\n"))
	}
	s := logs.String()
	if strings.Count(s, "write failed") != 1 || strings.Count(s, "writes again") != 1 {
		t.Errorf("want one failure and one recovery logged:\n%s", s)
	}

	t.Run("stdout", func(t *testing.T) {
		out := &halfWriter{}
		out.fail = true
		a := newAccessLog("stdout", out, nil, false, 20*time.Millisecond, testLogger(t))
		logLine(a, "/half")
		eventually(t, "a failed write", func() bool { return out.String() != "" })
		out.mu.Lock()
		out.fail = false
		out.mu.Unlock()
		logLine(a, "/whole")
		a.close()
		lines := strings.Split(out.String(), "\n")
		if len(lines) != 3 || !strings.HasPrefix(lines[1], "{") || !strings.Contains(lines[1], "/whole") || lines[2] != "" {
			t.Errorf("the line after a half-written one is not on its own line: %q", out.String())
		}
	})
}

// halfWriter is a stdout whose writes, while fail is set, take half the
// bytes and fail.
type halfWriter struct {
	mu   sync.Mutex
	b    bytes.Buffer
	fail bool
}

func (h *halfWriter) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fail {
		h.b.Write(p[:len(p)/2])
		return len(p) / 2, errors.New("write /dev/stdout: no space left on device")
	}
	return h.b.Write(p)
}

func (h *halfWriter) String() string { h.mu.Lock(); defer h.mu.Unlock(); return h.b.String() }
