package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// buildVigil builds the vigil binary as dir/bin/vigil, where `make build`
// puts it, and returns that path.
func buildVigil(t *testing.T, dir string) string {
	t.Helper()
	out := filepath.Join(dir, "bin", "vigil")
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		goBin = "go"
	}
	cmd := exec.Command(goBin, "build", "-o", out, ".")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return out
}

// freePorts returns a port p with p … p+n-1 free on 127.0.0.1.
func freePorts(t *testing.T, n int) int {
	t.Helper()
	for try := 0; try < 50; try++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		base := ln.Addr().(*net.TCPAddr).Port
		held := []net.Listener{ln}
		ok := base+n <= 65535
		for i := 1; ok && i < n; i++ {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+i))
			if err != nil {
				ok = false
				break
			}
			held = append(held, l)
		}
		for _, l := range held {
			l.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatalf("no %d consecutive free ports", n)
	return 0
}

// holdPort listens on 127.0.0.1:port (any port when 0) until the test ends.
func holdPort(t *testing.T, port int) int {
	t.Helper()
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// userEnv is the environment of a user whose PATH does not hold vigil.
func userEnv() []string {
	env := []string{"PATH=/usr/bin:/bin"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	return env
}

// vigilProc is a running vigil process started as a user would, from dir.
type vigilProc struct {
	cmd    *exec.Cmd
	lines  chan string
	stdout checktest.SyncBuffer
	stderr checktest.SyncBuffer
	done   chan struct{}
}

func startVigil(t *testing.T, dir string, args ...string) *vigilProc {
	t.Helper()
	p := &vigilProc{lines: make(chan string, 1000), done: make(chan struct{})}
	p.cmd = exec.Command(args[0], args[1:]...)
	p.cmd.Dir, p.cmd.Env = dir, userEnv()
	p.cmd.Stderr = &p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.stdout.Write([]byte(sc.Text() + "\n"))
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// waitLine returns the first stdout line starting with prefix.
func (p *vigilProc) waitLine(t *testing.T, prefix string, d time.Duration) string {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case l := <-p.lines:
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-p.done:
			t.Fatalf("vigil exited (%v) before printing %q\nstdout:\n%s\nstderr:\n%s", p.cmd.ProcessState, prefix, p.stdout.String(), p.stderr.String())
		case <-timeout:
			t.Fatalf("no line %q within %s\nstdout:\n%s\nstderr:\n%s", prefix, d, p.stdout.String(), p.stderr.String())
		}
	}
}

// exit waits up to d for the process to end and returns its exit code.
func (p *vigilProc) exit(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(d):
		t.Fatalf("vigil still running after %s\nstdout:\n%s\nstderr:\n%s", d, p.stdout.String(), p.stderr.String())
	}
	return -1
}

// interrupt sends Ctrl-C and returns the exit code.
func (p *vigilProc) interrupt(t *testing.T) int {
	t.Helper()
	_ = p.cmd.Process.Signal(os.Interrupt)
	return p.exit(t, 20*time.Second)
}

// runVigil runs a vigil command line to completion from dir.
func runVigil(t *testing.T, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	p := startVigil(t, dir, args...)
	code = p.exit(t, 30*time.Second)
	return p.stdout.String(), p.stderr.String(), code
}

// TestDemoOriginsQuickstart is the quickstart with the built binary, from
// a clone where bin/vigil is not on PATH: `bin/vigil demo origins` prints
// the origins and the exact command that breaks one; that command works;
// `vigil check` then shows origin-b failing on its checksum, as the README's
// sample output does. A second `vigil demo origins` on the same ports fails
// (exit 1) saying so, instead of moving to ports the config does not name.
func TestDemoOriginsQuickstart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped in -short mode")
	}
	dir := t.TempDir()
	buildVigil(t, dir)
	base := freePorts(t, 4)
	p := startVigil(t, dir, "bin/vigil", "demo", "origins", "--origin-port", fmt.Sprint(base))
	hint := p.waitLine(t, "fault switches on ", 15*time.Second)
	out := p.stdout.String()
	for i, n := range demoOrigins {
		if want := fmt.Sprintf("%s http://127.0.0.1:%d\n", n, base+i); !strings.Contains(out, want) {
			t.Errorf("demo origins output lacks %q:\n%s", want, out)
		}
	}
	faultAddr := fmt.Sprintf("127.0.0.1:%d", base+3)
	cmdLine := "bin/vigil demo fault --addr " + faultAddr + " origin-b corrupt"
	if want := "fault switches on " + faultAddr + ": " + cmdLine; hint != want {
		t.Fatalf("fault line:\n got %q\nwant %q", hint, want)
	}

	// The same ports again: refused, with what to do.
	_, stderr, code := runVigil(t, dir, "bin/vigil", "demo", "origins", "--origin-port", fmt.Sprint(base))
	if want := fmt.Sprintf("port %d in use (is 'vigil demo' running?): stop it or pass --origin-port N\n", base); code != 1 || stderr != want {
		t.Errorf("second demo origins: exit %d, stderr %q; want exit 1 and %q", code, stderr, want)
	}

	// The printed command, as printed.
	stdout, stderr, code := runVigil(t, dir, strings.Fields(cmdLine)...)
	if code != 0 || stdout != "origin-b is now corrupt\n" {
		t.Fatalf("%s: exit %d, stdout %q, stderr %q", cmdLine, code, stdout, stderr)
	}

	cfg := writeConfig(t, fmt.Sprintf(`
targets:
  - {name: origin-a, url: http://127.0.0.1:%d}
  - {name: origin-b, url: http://127.0.0.1:%d}
  - {name: origin-c, url: http://127.0.0.1:%d}
checks:
  - name: asset
    targets: [origin-a, origin-b, origin-c]
    http: {path: /asset.bin}
    expect: {status: 200, checksum: "sha256:%s"}
`, base, base+1, base+2, checktest.AssetSHA256()))
	got, code := runCLI(t, "check", "-c", cfg)
	if code != 1 || !regexp.MustCompile(`asset\s+origin-b\s+FAIL\s+checksum\s+200`).MatchString(got) ||
		!regexp.MustCompile(`asset\s+origin-a\s+pass`).MatchString(got) || !strings.Contains(got, "\n3 runs (1 check × 3 targets), 2 passed, 1 failed\n") {
		t.Errorf("vigil check with origin-b corrupt: exit %d\n%s", code, got)
	}
	// One check × one target: singular.
	one := writeConfig(t, fmt.Sprintf(`
targets: [{name: origin-a, url: http://127.0.0.1:%d}]
checks: [{name: healthz, targets: [origin-a], http: {path: /healthz}}]
`, base))
	if got, code := runCLI(t, "check", "-c", one); code != 0 || !strings.Contains(got, "\n1 run (1 check × 1 target), 1 passed, 0 failed\n") {
		t.Errorf("vigil check, one check: exit %d\n%s", code, got)
	}

	if code := p.interrupt(t); code != 0 {
		t.Errorf("demo origins after Ctrl-C: exit %d, stderr %q", code, p.stderr.String())
	}
}

// TestDemoOriginsFaultListenInUse: the fault switch port taken is an error
// naming the flag that moves it; no origin is left listening.
func TestDemoOriginsFaultListenInUse(t *testing.T) {
	base := freePorts(t, 4)
	holdPort(t, base+3)
	out, code := runCLI(t, "demo", "origins", "--origin-port", fmt.Sprint(base))
	want := fmt.Sprintf("--listen: 127.0.0.1:%d already in use (is 'vigil demo origins' running?): stop it or pass --listen ADDR", base+3)
	if code != 1 || !strings.Contains(out, want) {
		t.Errorf("exit %d, output %q; want exit 1 and %q", code, out, want)
	}
	for i := range demoOrigins {
		holdPort(t, base+i) // fails the test if an origin still holds it
	}
}

// TestDemoCLIPortsAndBanner runs the full demo from the built binary:
// an origin port in use moves that origin and says where; the proxy port in
// use fails the start with the flag to pass; the banner's fault command is
// the path the binary was run as; the data dir is private (0700).
func TestDemoCLIPortsAndBanner(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped in -short mode")
	}
	dir := t.TempDir()
	buildVigil(t, dir)
	base := freePorts(t, 3)
	holdPort(t, base) // origin-a's port
	proxyPort := holdPort(t, 0)
	args := []string{"bin/vigil", "demo", "--listen", "127.0.0.1:0", "--origin-port", fmt.Sprint(base),
		"--data-dir", "vigil-data/demo", "--traffic", "0", "--browser=false"}

	stdout, stderr, code := runVigil(t, dir, append(args, "--proxy-listen", fmt.Sprintf("127.0.0.1:%d", proxyPort))...)
	if want := fmt.Sprintf("proxy.listen: 127.0.0.1:%d already in use (pass --proxy-listen ADDR)\n", proxyPort); code != 1 || !strings.HasSuffix(stderr, want) || strings.Contains(stderr, "proxy: proxy") {
		t.Errorf("proxy port in use: exit %d, stderr %q; want exit 1 and %q", code, stderr, want)
	}
	moved := regexp.MustCompile(fmt.Sprintf(`(?m)^port %d in use: origin-a listens on http://127\.0\.0\.1:\d+ instead$`, base))
	if !moved.MatchString(stdout) {
		t.Errorf("no line saying origin-a moved:\n%s", stdout)
	}

	// Under a 4096 open-file limit (common), the demo's own config does not
	// open with a warning its user cannot act on.
	p := startVigil(t, dir, append([]string{"sh", "-c", `ulimit -n 4096 && exec "$0" "$@"`}, append(args, "--proxy-listen", "127.0.0.1:0")...)...)
	hint := p.waitLine(t, "Break an origin from the page, or:", 30*time.Second)
	if strings.Contains(p.stderr.String(), "max_client_conns") {
		t.Errorf("the demo warns about its own max_client_conns:\n%s", p.stderr.String())
	}
	if !moved.MatchString(p.stdout.String()) {
		t.Errorf("no line saying origin-a moved:\n%s", p.stdout.String())
	}
	if !strings.Contains(p.stdout.String(), fmt.Sprintf("  origin-b      http://127.0.0.1:%d\n", base+1)) {
		t.Errorf("origin-b not on its port %d:\n%s", base+1, p.stdout.String())
	}
	m := regexp.MustCompile(`^Break an origin from the page, or:  (bin/vigil demo fault --addr 127\.0\.0\.1:\d+ origin-b corrupt)$`).FindStringSubmatch(hint)
	if m == nil {
		t.Fatalf("banner hint %q: want the command run as bin/vigil with --addr", hint)
	}
	if stdout, stderr, code := runVigil(t, dir, strings.Fields(m[1])...); code != 0 || stdout != "origin-b is now corrupt\n" {
		t.Errorf("%s: exit %d, stdout %q, stderr %q", m[1], code, stdout, stderr)
	}
	for _, d := range []string{"vigil-data", "vigil-data/demo"} {
		fi, err := os.Stat(filepath.Join(dir, d))
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm != 0o700 {
			t.Errorf("%s: mode %#o, want 0700", d, perm)
		}
	}
	if code := p.interrupt(t); code != 0 {
		t.Errorf("demo after Ctrl-C: exit %d, stderr %q", code, p.stderr.String())
	}
}

// TestRunProxyPortInUse: `vigil run` whose proxy.listen is taken fails with
// one line naming the key, before it logs that it started or runs checks,
// and logs no stop of a start that never happened.
func TestRunProxyPortInUse(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped in -short mode")
	}
	dir := t.TempDir()
	buildVigil(t, dir)
	o := checktest.NewOrigin()
	defer o.Close()
	proxyPort := holdPort(t, 0)
	cfg := filepath.Join(dir, "vigil.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`
agent: {region: r1, listen: 127.0.0.1:0, data_dir: %q}
targets: [{name: a, url: %s}]
checks: [{name: healthz, targets: [a], http: {path: /healthz}}]
proxy:
  listen: 127.0.0.1:%d
  pools: [{name: web, origins: [{target: a}]}]
`, filepath.Join(dir, "data"), o.URL(), proxyPort)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runVigil(t, dir, "bin/vigil", "run", "-c", cfg)
	want := fmt.Sprintf("proxy.listen: 127.0.0.1:%d already in use\n", proxyPort)
	if code != 1 || stderr != want {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 1 and only %q", code, stderr, want)
	}
	for _, bad := range []string{"vigil started", "vigil stopped", "canary running", "proxy: proxy"} {
		if strings.Contains(stderr, bad) {
			t.Errorf("stderr has %q:\n%s", bad, stderr)
		}
	}
	if n := o.Count("GET", "/healthz"); n != 0 {
		t.Errorf("the canary ran %d checks before the start failed", n)
	}
}

// TestCanaryAgentPortInUse: `vigil canary` whose agent.listen is taken
// prints the one line naming the key: not a "vigil stopped" line for a
// start that never happened.
func TestCanaryAgentPortInUse(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped in -short mode")
	}
	dir := t.TempDir()
	buildVigil(t, dir)
	o := checktest.NewOrigin()
	defer o.Close()
	port := holdPort(t, 0)
	cfg := filepath.Join(dir, "vigil.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`
agent: {region: r1, listen: 127.0.0.1:%d, data_dir: %q}
targets: [{name: a, url: %s}]
checks: [{name: healthz, targets: [a], http: {path: /healthz}}]
`, port, filepath.Join(dir, "data"), o.URL())), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runVigil(t, dir, "bin/vigil", "canary", "-c", cfg)
	want := fmt.Sprintf("agent.listen: 127.0.0.1:%d already in use\n", port)
	if code != 1 || !strings.HasSuffix(stderr, want) {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 1 ending in %q", code, stderr, want)
	}
	for _, bad := range []string{"vigil started", "vigil stopped"} {
		if strings.Contains(stderr, bad) {
			t.Errorf("stderr has %q:\n%s", bad, stderr)
		}
	}
}

// TestDemoSlowIsDegraded: the demo's default `slow` is over the asset
// check's TTFB objective and under its timeout, so the page shows asset ×
// origin-b degraded (ttfb) in every region, not unhealthy; and the summary
// counts the cells there are (4 checks × 3 targets × 3 regions).
func TestDemoSlowIsDegraded(t *testing.T) {
	if testing.Short() {
		t.Skip("demo test skipped in -short mode")
	}
	d, stop := startTestDemo(t)
	defer stop()
	base := "http://" + d.app.Addr()
	cells := `<span class="n">36</span><span class="l">check × target × region cells</span>`
	waitFor(t, 30*time.Second, "every cell judged", func() bool { return strings.Contains(getBody(t, base+"/"), cells) })

	if out, code := runCLI(t, "demo", "fault", "--addr", d.app.Addr(), "origin-b", "slow"); code != 0 || out != "origin-b is now slow\n" {
		t.Fatalf("demo fault origin-b slow: exit %d, %q", code, out)
	}
	degraded := regexp.MustCompile(`data-check="asset" data-target="origin-b" data-region="[^"]+" data-state="degraded" data-cause="ttfb"`)
	unhealthy := regexp.MustCompile(`data-check="asset" data-target="origin-b" data-region="[^"]+" data-state="unhealthy"`)
	var page string
	waitFor(t, 25*time.Second, "asset × origin-b degraded (ttfb) in 3 regions", func() bool {
		page = getBody(t, base+"/")
		if unhealthy.MatchString(page) {
			t.Fatalf("asset × origin-b turned unhealthy under the default slow: %s", unhealthy.FindString(page))
		}
		return len(degraded.FindAllString(page, -1)) == 3
	})
	if !strings.Contains(page, cells) {
		t.Errorf("summary lacks %q", cells)
	}
}

// TestDemoFaultArgs: a missing MODE shows the usage line, the origins and
// the modes (exit 2); an address that is not a demo says so.
func TestDemoFaultArgs(t *testing.T) {
	out, code := runCLI(t, "demo", "fault", "origin-b")
	for _, want := range []string{
		"want ORIGIN and MODE, got 1 argument\n",
		"usage: vigil demo fault [--addr ADDR] ORIGIN MODE\n",
		"origins: origin-a, origin-b, origin-c\n",
		"modes: ok, down, slow, corrupt, 503, partial, missing_header, flapping, blackhole, reset; with a parameter: partial:40%",
	} {
		if code != 2 || !strings.Contains(out, want) {
			t.Errorf("demo fault origin-b: exit %d, output %q; want exit 2 and %q", code, out, want)
		}
	}
	if out, code := runCLI(t, "demo", "fault"); code != 2 || !strings.Contains(out, "got 0 arguments") {
		t.Errorf("demo fault: exit %d, output %q", code, out)
	}

	notDemo := httptest.NewServer(http.NotFoundHandler())
	defer notDemo.Close()
	addr := strings.TrimPrefix(notDemo.URL, "http://")
	out, code = runCLI(t, "demo", "fault", "--addr", addr, "origin-b", "corrupt")
	if want := addr + " has no demo fault switches"; code != 1 || !strings.Contains(out, want) {
		t.Errorf("demo fault at a non-demo address: exit %d, %q; want exit 1 and %q", code, out, want)
	}
}

// TestSelfName: the fault hint names the binary as the user ran it, or by
// name when that same file is on PATH.
func TestSelfName(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin", "vigil")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", filepath.Join(dir, "elsewhere"))
	if got := selfNameOf(bin); got != bin {
		t.Errorf("not on PATH: %q, want %q", got, bin)
	}
	t.Setenv("PATH", filepath.Dir(bin))
	if got := selfNameOf(bin); got != "vigil" {
		t.Errorf("on PATH: %q, want vigil", got)
	}
	if got := selfNameOf("vigil"); got != "vigil" {
		t.Errorf("run from PATH: %q", got)
	}
}

// TestDemoStopsOnHangup: closing the terminal that runs `vigil demo`
// (SIGHUP) stops it as Ctrl-C does; it used to take the hangup for a config
// reload and go on running in the background, holding its ports and data
// dir.
func TestDemoStopsOnHangup(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped in -short mode")
	}
	dir := t.TempDir()
	buildVigil(t, dir)
	p := startVigil(t, dir, "bin/vigil", "demo", "--listen", "127.0.0.1:0", "--proxy-listen", "127.0.0.1:0",
		"--origin-port", fmt.Sprint(freePorts(t, 3)), "--data-dir", "vigil-data/demo", "--traffic", "0", "--browser=false")
	p.waitLine(t, "Break an origin from the page, or:", 30*time.Second)
	_ = p.cmd.Process.Signal(syscall.SIGHUP)
	if code := p.exit(t, 20*time.Second); code != 0 {
		t.Errorf("demo after SIGHUP: exit %d, stderr %q", code, p.stderr.String())
	}
}
