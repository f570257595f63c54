package canary

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// Environment of the child process TestHistorySurvivesKill re-executes.
const (
	envChildDir    = "VIGIL_CANARY_CHILD_DIR"
	envChildOrigin = "VIGIL_CANARY_CHILD_ORIGIN"
)

// childCanary runs a canary writing into the embedded store until it is
// killed (or 60 s pass, should the parent vanish).
func childCanary(t *testing.T) {
	dir, origin := os.Getenv(envChildDir), os.Getenv(envChildOrigin)
	// The child dies of SIGKILL, so its own t.TempDir is never removed: keep
	// it inside the parent's, which the parent removes.
	tmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		fmt.Println("child: tmp:", err)
		os.Exit(3)
	}
	os.Setenv("TMPDIR", tmp)
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		fmt.Println("child: store:", err)
		os.Exit(3)
	}
	cfg := testConfig(t, map[string]string{"o1": origin},
		CheckConfig{Name: "home", Targets: []string{"o1"}, Rise: 2, Interval: 100 * time.Millisecond, ExpireAfter: time.Minute,
			HTTP: &checks.HTTPSpec{Path: "/healthz"}})
	c, err := New(cfg, compile(t, cfg), Options{Sink: st, Log: testLog(t), PublishEvery: 50 * time.Millisecond})
	if err != nil {
		fmt.Println("child:", err)
		os.Exit(3)
	}
	vs, err := st.Verdicts(context.Background(), 0)
	if err != nil {
		fmt.Println("child: verdicts:", err)
		os.Exit(3)
	}
	fmt.Printf("restored %d\n", c.Restore(vs))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_ = c.Run(ctx)
	os.Exit(0)
}

func TestHistorySurvivesKill(t *testing.T) {
	if os.Getenv(envChildDir) != "" {
		childCanary(t)
		return
	}
	if testing.Short() {
		t.Skip("re-executes the test binary twice (-short)")
	}
	o := checktest.NewOrigin()
	defer o.Close()
	dir := t.TempDir()

	// run starts the child, waits until it has probed n more times and its
	// verdicts are in the store, then kills it with SIGKILL. It returns the
	// child's "restored N" line.
	run := func(n int64) string {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHistorySurvivesKill$", "-test.v=false")
		cmd.Env = append(os.Environ(), envChildDir+"="+dir, envChildOrigin+"="+o.URL())
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("child said nothing: %v", err)
		}
		start := o.Count("GET", "/healthz")
		waitFor(t, "child runs", func() bool { return o.Count("GET", "/healthz") >= start+n })
		time.Sleep(300 * time.Millisecond) // a few publish batches
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		err = cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("child did not die of SIGKILL: %v", err)
		}
		return strings.TrimSpace(line)
	}

	if got := run(5); got != "restored 0" {
		t.Fatalf("first start: %q", got)
	}
	killed := time.Now()
	if got := run(5); got != "restored 1" {
		t.Fatalf("restart did not restore the pair's verdict: %q", got)
	}

	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	hist, err := st.History(context.Background(), reporting.HistoryQuery{Check: "home", Target: "o1",
		From: time.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	var before, after int
	var afterStates []reporting.State
	for _, v := range hist {
		if v.At.Before(killed) {
			before++
		} else {
			after++
			afterStates = append(afterStates, v.State)
		}
	}
	if before < 3 || after < 3 {
		t.Fatalf("history across kill -9: %d verdicts before, %d after", before, after)
	}
	// The restored pair stayed healthy across the restart: no unknown
	// verdicts after it (rise 2 would otherwise give one).
	for i, s := range afterStates {
		if s != reporting.StateHealthy {
			t.Fatalf("after restart verdict %d is %s, want healthy (restored)", i, s)
		}
	}
}

func TestHistoryAPIWithStore(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	st, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := testConfig(t, map[string]string{"o1": o.URL(), "o2": o.URL()},
		CheckConfig{Name: "home", Targets: []string{"o1", "o2"}, Rise: 1, Interval: time.Hour,
			HTTP: &checks.HTTPSpec{Path: "/healthz"}})
	c, err := New(cfg, compile(t, cfg), Options{Sink: st, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	// Without Run, verdicts go to the sink at once.
	for i := 0; i < 3; i++ {
		for _, tg := range []string{"o1", "o2"} {
			if _, err := c.Trigger("home", tg); err != nil {
				t.Fatal(err)
			}
		}
	}
	srv := httptest.NewServer(c.Handler(st))
	defer srv.Close()

	get := func(path string) []reporting.Verdict {
		t.Helper()
		code, body := do(t, "GET", srv.URL+path, "", "")
		if code != 200 {
			t.Fatalf("%s: %d %s", path, code, body)
		}
		var vs []reporting.Verdict
		if err := json.Unmarshal([]byte(body), &vs); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return vs
	}
	if vs := get("/api/v1/checks/home/history"); len(vs) != 6 {
		t.Fatalf("history: %d verdicts, want 6", len(vs))
	}
	vs := get("/api/v1/checks/home/history?target=o2&from=10m&limit=2")
	if len(vs) != 2 || vs[0].Target != "o2" || vs[1].Target != "o2" {
		t.Fatalf("history target=o2 limit=2: %+v", vs)
	}
	if vs := get("/api/v1/checks/home/history?from=" + time.Now().Add(time.Minute).UTC().Format(time.RFC3339)); len(vs) != 0 {
		t.Fatalf("history from the future: %d verdicts", len(vs))
	}
	// A misspelt check name is a 404 that says so, not an empty list.
	if code, body := do(t, "GET", srv.URL+"/api/v1/checks/other/history", "", ""); code != http.StatusNotFound || !strings.Contains(body, `no check named \"other\"`) {
		t.Fatalf("unknown check: %d %s, want 404 naming it", code, body)
	}
	latest := get("/api/v1/verdicts")
	if len(latest) != 2 || latest[0].Streak != 3 || latest[0].State != reporting.StateHealthy {
		t.Fatalf("verdicts from the store: %+v", latest)
	}
	if code, _ := do(t, "GET", srv.URL+"/api/v1/checks/home/history?limit=x", "", ""); code != http.StatusBadRequest {
		t.Fatalf("bad limit: %d", code)
	}
}
