package proxy

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestFDLimitWarning: an open-file limit below what max_client_conns needs
// (2 per connection plus headroom) gets a warning naming both numbers and
// how to raise the limit; a sufficient or unknown limit none. Under 256
// files with 500 clients, 234 clients got 503 and new ones hung with no
// warning anywhere.
func TestFDLimitWarning(t *testing.T) {
	tests := []struct {
		conns int
		limit uint64
		want  []string // all in the warning; nil: no warning
	}{
		{500, 256, []string{"max_client_conns: 500:", "about 1064 open files", "open-file limit is 256", "ulimit -n", "LimitNOFILE=", "lower max_client_conns to 96"}},
		{10000, 4096, []string{"max_client_conns: 10000:", "about 20064", "limit is 4096", "at least 20064", "to 2016"}},
		{10000, 65536, nil},
		{500, 1064, nil},
		{500, 1063, []string{"limit is 1063"}},
		{10000, 0, nil}, // unknown or unlimited
		{10, 50, []string{"limit is 50", "or lower max_client_conns"}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%d-%d", tc.conns, tc.limit), func(t *testing.T) {
			got := fdLimitWarning(tc.conns, tc.limit)
			if tc.want == nil {
				if got != "" {
					t.Fatalf("warning %q, want none", got)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Fatalf("warning %q does not contain %q", got, w)
				}
			}
		})
	}
}

// TestFDLimitChild is run by TestFDLimitStarted in a process started under
// prlimit: it prints the open-file limit the process sees, and runs a proxy
// with the max_client_conns in VIGIL_FDLIMIT_CONNS, its log to stdout.
func TestFDLimitChild(t *testing.T) {
	conns := os.Getenv("VIGIL_FDLIMIT_CONNS")
	if conns == "" {
		t.Skip("run by TestFDLimitStarted")
	}
	cfg := pool1(PolicyRoundRobin, "http://127.0.0.1:1")
	cfg.MaxClientConns, _ = strconv.Atoi(conns)
	fmt.Printf("LIMIT=%d\n", openFileLimit())
	p, err := New(cfg, nil, slog.New(slog.NewTextHandler(os.Stdout, nil)), WithRegistry(prometheus.NewRegistry()))
	if err != nil {
		t.Fatal(err)
	}
	runProxy(t, p)
}

// TestFDLimitStarted: a real process started with a soft open-file limit
// of 256 under a hard one of 4096 runs with 4095 (Go's syscall package
// raises the soft limit to one below the hard one at start, so vigil need
// not), and a proxy it starts warns naming that limit when max_client_conns
// needs more; started with 256:256, it keeps 256 and warns even for 500
// clients.
func TestFDLimitStarted(t *testing.T) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("prlimit (util-linux) is needed to start a process with a given open-file limit")
		}
		t.Skip("SKIPPED LOUDLY: prlimit (util-linux) not found; cannot start a process with a given open-file limit")
	}
	for _, tc := range []struct {
		nofile    string
		conns     int
		wantLimit string
		warn      string // "" for none
	}{
		{"256:4096", 500, "4095", ""},
		{"256:4096", 10000, "4095", "open-file limit is 4095"},
		{"256:256", 500, "256", "open-file limit is 256"},
	} {
		t.Run(fmt.Sprintf("%s/%d", tc.nofile, tc.conns), func(t *testing.T) {
			cmd := exec.Command(prlimit, "--nofile="+tc.nofile, os.Args[0], "-test.run=^TestFDLimitChild$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), "VIGIL_FDLIMIT_CONNS="+strconv.Itoa(tc.conns))
			cmd.WaitDelay = 5 * time.Second
			done := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
			out, err := cmd.CombinedOutput()
			done.Stop()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			s := string(out)
			if !strings.Contains(s, "LIMIT="+tc.wantLimit+"\n") {
				t.Fatalf("the process saw another open-file limit than %s:\n%s", tc.wantLimit, s)
			}
			got := strings.Contains(s, "level=WARN msg=\"proxy.max_client_conns:")
			if got != (tc.warn != "") || tc.warn != "" && !strings.Contains(s, tc.warn) {
				t.Fatalf("want warning %q (none if empty), got:\n%s", tc.warn, s)
			}
		})
	}
}
