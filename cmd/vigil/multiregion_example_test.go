//go:build linux || darwin

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting/influx/influxtest"
)

// multiRegionScript is the example's local runner, relative to this package.
const multiRegionScript = "../../examples/multi-region/run-local.sh"

// TestMultiRegionExampleLocal runs `examples/multi-region/run-local.sh --check`
// as `make multi-region` users run the example without Docker: a real
// influxd, the demo origins, three canaries, the proxy and the alerter from
// the example configs, on free 127.0.0.1 ports. The script waits until every
// canary reads healthy verdicts of all three regions from InfluxDB, corrupts
// origin-b, waits until the proxy takes it out by verdict with quorum 2,
// checks that /asset.bin through the proxy has the right checksum, heals
// origin-b and waits until it is back. It must exit 0, say so, and leave no
// process or temporary directory behind.
func TestMultiRegionExampleLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts InfluxDB and seven vigil processes for about a minute")
	}
	influxd, err := influxtest.Find()
	checktest.NeedDependency(t, "influxd (InfluxDB 1.8.10)", err)
	for _, tool := range []string{"bash", "curl"} {
		_, err := exec.LookPath(tool)
		checktest.NeedDependency(t, tool+" (run-local.sh)", err)
	}
	script, err := filepath.Abs(multiRegionScript)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := buildVigil(t, dir)
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}

	origins := freePorts(t, 4) // origin-a, -b, -c and the fault switches
	ports := map[string]int{"MR_ORIGIN_PORT": origins, "MR_FAULT_PORT": origins + 3}
	for _, v := range []string{"MR_INFLUX_PORT", "MR_INFLUX_RPC_PORT", "MR_EU_WEST_PORT", "MR_US_EAST_PORT",
		"MR_AP_SOUTH_PORT", "MR_PROXY_PORT", "MR_PROXY_ADMIN_PORT", "MR_ALERTER_PORT", "MR_ALERTMANAGER_PORT"} {
		ports[v] = freeDistinctPort(t, ports)
	}
	env := append(os.Environ(), "MR_VIGIL="+bin, "VIGIL_INFLUXD="+influxd, "TMPDIR="+tmp, "MR_CHECK_TIMEOUT=75")
	for v, p := range ports {
		env = append(env, fmt.Sprintf("%s=%d", v, p))
	}

	// The script stops what it started on SIGTERM; it runs in its own
	// process group so that a hung run can still be cleaned up by its id.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", script, "--check")
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	var out checktest.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	defer func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) }() // only if something outlived the script
	err = cmd.Wait()
	t.Logf("run-local.sh --check took %s", time.Since(start).Round(time.Second))
	if ctx.Err() != nil {
		t.Fatalf("run-local.sh --check still running after 5m (stopped it):\n%s", out.String())
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("run-local.sh --check: %v\n%s", err, out.String())
	}
	got := out.String()
	for _, l := range strings.Split(got, "\n") {
		if strings.HasPrefix(l, "run-local.sh: ok") || strings.HasPrefix(l, "run-local.sh: proxy:") {
			t.Log(l)
		}
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("run-local.sh --check: exit %d, want 0:\n%s", code, got)
	}
	for _, want := range []string{
		"every canary reads asset verdicts (healthy) for origin-a/b/c from eu-west, us-east and ap-south in InfluxDB",
		fmt.Sprintf("break an origin        %s demo fault --addr 127.0.0.1:%d origin-b corrupt", bin, ports["MR_FAULT_PORT"]),
		"the proxy took origin-b out by verdict",
		"quorum 2: ",
		"asset (checksum)",
		"ok: 9 of 9 requests for /asset.bin through the proxy got the right checksum",
		"the proxy has origin-b back",
		"run-local.sh: PASS: ",
		"stopping everything it started",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("run-local.sh --check output lacks %q:\n%s", want, got)
		}
	}

	// Nothing left behind: every port refuses connections and the
	// temporary directory is gone.
	for v, p := range ports {
		if v == "MR_ALERTMANAGER_PORT" && !strings.Contains(got, fmt.Sprintf("Alertmanager           http://127.0.0.1:%d", p)) {
			continue
		}
		n := 1
		if v == "MR_ORIGIN_PORT" {
			n = 3
		}
		for i := range n {
			if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", p+i), time.Second); err == nil {
				c.Close()
				t.Errorf("%s: 127.0.0.1:%d still accepts connections after run-local.sh exited", v, p+i)
			}
		}
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "vigil-multi-region.*")); len(left) > 0 {
		t.Errorf("run-local.sh left %v behind", left)
	}
}

// TestMultiRegionExampleNoInfluxd: without influxd the script exits 1 and
// says how to get it, before starting anything.
func TestMultiRegionExampleNoInfluxd(t *testing.T) {
	bash, err := exec.LookPath("bash")
	checktest.NeedDependency(t, "bash (run-local.sh)", err)
	// A copy of the script in a clone without .cache/bin/influxd, and a
	// PATH without influxd.
	root := t.TempDir()
	src, err := os.ReadFile(multiRegionScript)
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(root, "examples", "multi-region", "run-local.sh")
	if err := os.MkdirAll(filepath.Dir(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, src, 0o755); err != nil {
		t.Fatal(err)
	}
	// PATH holds only what the script runs before it looks for influxd, so
	// an influxd installed on this machine (/usr/bin/influxd) stays unseen.
	path := filepath.Join(root, "path")
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"dirname"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatalf("%s (run-local.sh): %v", tool, err)
		}
		if err := os.Symlink(p, filepath.Join(path, tool)); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.Executable() // any executable stands in for bin/vigil here
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bash, script, "--check")
	cmd.Env = []string{"PATH=" + path, "HOME=" + root, "MR_VIGIL=" + self, "TMPDIR=" + root}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("run-local.sh without influxd: %v, want exit 1:\n%s", err, out)
	}
	for _, want := range []string{
		"run-local.sh: FAIL: influxd (InfluxDB 1.8) not found",
		filepath.Join(root, ".cache", "bin", "influxd"),
		"go install github.com/influxdata/influxdb/cmd/influxd@v1.8.10",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "starting") {
		t.Errorf("it started something before failing:\n%s", out)
	}
}

// freeDistinctPort returns a free 127.0.0.1 port that is none of taken's
// values (nor the two after MR_ORIGIN_PORT).
func freeDistinctPort(t *testing.T, taken map[string]int) int {
	t.Helper()
	used := map[int]bool{}
	for v, p := range taken {
		used[p] = true
		if v == "MR_ORIGIN_PORT" {
			used[p+1], used[p+2] = true, true
		}
	}
	for range 50 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if !used[p] {
			return p
		}
	}
	t.Fatal("no free port distinct from the others")
	return 0
}
