// Package influxtest starts a real InfluxDB 1.8 (influxd with Flux enabled,
// unless FluxOff; with authentication under Auth) on free local ports for
// tests.
//
// influxd is looked up in $VIGIL_INFLUXD, then .cache/bin/influxd under the
// module root, then $PATH. When it is missing the test calls
// checktest.NeedDependency: it fails under CI=true and is skipped otherwise.
package influxtest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// Server is a running influxd.
type Server struct {
	// URL is the HTTP API base, e.g. "http://127.0.0.1:41234".
	URL string

	bin, dir, conf string
	t              testing.TB
	mu             sync.Mutex
	cmd            *exec.Cmd
	exited         chan struct{}
	out            *lockedWriter
	dbs            atomic.Int64
	user, pass     string // Auth's admin, for Query
}

// Find returns the influxd binary path or an error saying where it looked.
func Find() (string, error) {
	if p := os.Getenv("VIGIL_INFLUXD"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("VIGIL_INFLUXD=%s: %w", p, err)
		}
		return p, nil
	}
	var tried []string
	if root, err := moduleRoot(); err == nil {
		p := filepath.Join(root, ".cache", "bin", "influxd")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		tried = append(tried, p)
	}
	p, err := exec.LookPath("influxd")
	if err == nil {
		return p, nil
	}
	tried = append(tried, "$PATH")
	return "", fmt.Errorf("influxd not found (looked in $VIGIL_INFLUXD, %s); build it with `GOBIN=$PWD/.cache/bin go install github.com/influxdata/influxdb/cmd/influxd@v1.8.10`", strings.Join(tried, ", "))
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Option changes how Start configures influxd.
type Option func(*options)

type options struct {
	fluxOff    bool
	user, pass string
}

// FluxOff starts influxd with `[http] flux-enabled = false`, InfluxDB 1.8's
// default: writes work, Flux reads are refused with 403.
func FluxOff() Option { return func(o *options) { o.fluxOff = true } }

// Auth starts influxd with `[http] auth-enabled = true` and an admin user
// user with password pass; Query authenticates as them.
func Auth(user, pass string) Option { return func(o *options) { o.user, o.pass = user, pass } }

// Start runs influxd with Flux enabled (unless FluxOff), data under
// t.TempDir(), reporting disabled, and waits until /ping answers. It is
// stopped on cleanup.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	var o options
	for _, f := range opts {
		f(&o)
	}
	bin, err := Find()
	checktest.NeedDependency(t, "influxd (InfluxDB 1.8.10)", err)
	dir := t.TempDir()
	conf := filepath.Join(dir, "influxdb.conf")
	var s *Server
	// The ports are free when picked and closed again before influxd binds
	// them, so another process may take one in between: influxd then exits
	// with "address already in use", and new ports are picked.
	for attempt := 1; ; attempt++ {
		httpPort, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		rpcPort, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		cfg := fmt.Sprintf(`reporting-disabled = true
	bind-address = "127.0.0.1:%d"
	[meta]
	  dir = %q
	[data]
	  dir = %q
	  wal-dir = %q
	  query-log-enabled = false
	  wal-fsync-delay = "0s"
	[coordinator]
	  log-queries-after = "0s"
	[retention]
	  enabled = false
	[monitor]
	  store-enabled = false
	[http]
	  enabled = true
	  bind-address = "127.0.0.1:%d"
	  flux-enabled = %t
	  auth-enabled = %t
	  log-enabled = false
	  write-tracing = false
	  pprof-enabled = false
	[continuous_queries]
	  enabled = false
	[subscriber]
	  enabled = false
	[logging]
	  level = "warn"
	`, rpcPort, filepath.Join(dir, "meta"), filepath.Join(dir, "data"), filepath.Join(dir, "wal"), httpPort, !o.fluxOff, o.user != "")
		if err := os.WriteFile(conf, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		s = &Server{URL: fmt.Sprintf("http://127.0.0.1:%d", httpPort), bin: bin, dir: dir, conf: conf, t: t}
		err = s.Start()
		if err == nil {
			break
		}
		if attempt == 5 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatal(err)
		}
		t.Logf("influxtest: a port was taken before influxd bound it; picking others (%v)", firstLine(err.Error()))
	}
	if o.user != "" {
		// With no user yet, influxd takes this one statement unauthenticated.
		if _, err := s.Query("", fmt.Sprintf("CREATE USER %q WITH PASSWORD '%s' WITH ALL PRIVILEGES", o.user, o.pass)); err != nil {
			s.Stop()
			t.Fatal(err)
		}
		s.user, s.pass = o.user, o.pass
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Logf("influxd stop: %v", err)
		}
	})
	return s
}

// Start (re)starts a stopped server on the same port and data; it waits until
// /ping answers (at most 60 s).
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("influxtest: already running")
	}
	s.out = &lockedWriter{}
	cmd := exec.Command(s.bin, "run", "-config", s.conf)
	cmd.Env = append(os.Environ(), "INFLUXDB_REPORTING_DISABLED=true")
	cmd.Stdout = s.out
	cmd.Stderr = s.out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("influxtest: start %s: %w", s.bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.cmd, s.exited = cmd, exited
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			s.cmd = nil
			return fmt.Errorf("influxtest: influxd exited at start:\n%s", s.out.String())
		default:
		}
		resp, err := http.Get(s.URL + "/ping")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusNoContent {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	<-exited
	s.cmd = nil
	return fmt.Errorf("influxtest: influxd did not answer /ping within 60s:\n%s", s.out.String())
}

// Stop terminates influxd (SIGTERM, then SIGKILL after 20 s) and waits for it.
// Stopping a stopped server is a no-op.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.cmd = nil
	return nil
}

// Query runs an InfluxQL statement (e.g. CREATE DATABASE) and returns the
// JSON answer; with Auth, as its admin.
func (s *Server) Query(db, q string) (string, error) {
	v := url.Values{"q": {q}}
	if db != "" {
		v.Set("db", db)
	}
	req, err := http.NewRequest(http.MethodPost, s.URL+"/query", strings.NewReader(v.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if s.user != "" {
		req.SetBasicAuth(s.user, s.pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || bytes.Contains(b, []byte(`"error"`)) {
		return "", fmt.Errorf("influxtest: %s: %s: %s", q, resp.Status, b)
	}
	return string(b), nil
}

// NewDatabase creates a fresh database and returns its bucket name
// ("<db>/autogen").
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("vigil_test_%d", s.dbs.Add(1))
	if _, err := s.Query("", "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	return name + "/autogen"
}

// Log returns influxd's output so far (for failure messages).
func (s *Server) Log() string {
	s.mu.Lock()
	out := s.out
	s.mu.Unlock()
	if out == nil {
		return ""
	}
	return out.String()
}

type lockedWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
