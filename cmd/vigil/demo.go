package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/vigil-synthetics/vigil/canary"
	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting/statuspage"
	"github.com/vigil-synthetics/vigil/reporting/units"
)

func init() { commands = append(commands, newDemoCmd) }

// demoRegions are the regions the demo's canaries claim to run in.
var demoRegions = []string{"eu-west", "us-east", "ap-south"}

var demoOrigins = []string{"origin-a", "origin-b", "origin-c"}

// demoModes are the fault switches offered by the page and `vigil demo fault`
// (every checktest mode). `vigil demo fault` and POST /demo/fault also take
// the parameterised forms of demoParamForms.
var demoModes = []string{"ok", "down", "slow", "corrupt", "503", "partial", "missing_header", "flapping", "blackhole", "reset"}

// demoParamForms are examples of the parameterised modes (checktest.Origin.SetFault).
var demoParamForms = []string{"partial:40%", "slow:3s", "flapping:10", "flapping:30s"}

// defaultDemoListen is the default of `vigil demo --listen` and of
// `vigil demo fault --addr`.
const defaultDemoListen = "127.0.0.1:9470"

type demoFlags struct {
	listen, proxyListen, dataDir, logLevel string
	originPort                             int
	traffic                                float64
	browser                                bool
}

func newDemoCmd() *cobra.Command {
	var f demoFlags
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Three local origins with fault switches, canaries in three regions, the proxy and the alerter",
		Long: `Starts three fault-injectable origins on 127.0.0.1, canaries labelled as three regions,
the proxy, the alerter and the status page, on the embedded store. No network, no external
service. Break an origin from the status page or with 'vigil demo fault origin-b corrupt' and
watch the verdicts flip, the proxy route around it and an alert fire and resolve.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDemo(cmd, f) },
	}
	cmd.Flags().StringVar(&f.listen, "listen", defaultDemoListen, "status page and API address")
	cmd.Flags().StringVar(&f.proxyListen, "proxy-listen", "127.0.0.1:8080", "proxy address")
	cmd.Flags().IntVar(&f.originPort, "origin-port", defaultDemoOriginPort, "first origin port (three consecutive ports; 0: any free port)")
	cmd.Flags().StringVar(&f.dataDir, "data-dir", "./vigil-data/demo", "embedded store and generated config")
	cmd.Flags().Float64Var(&f.traffic, "traffic", 20, "client requests per second the demo sends through the proxy (0: none)")
	cmd.Flags().BoolVar(&f.browser, "browser", true, "add a browser check when Chromium is installed")
	cmd.Flags().StringVar(&f.logLevel, "log-level", "warn", "debug, info, warn or error")
	cmd.AddCommand(newDemoFaultCmd(), newDemoOriginsCmd())
	return cmd
}

// demoSlowDelay is the demo's `slow` delay: over the asset check's TTFB
// objective (500ms), so the check turns degraded with cause ttfb, and under
// the demo's 2s timeout, so it does not time out.
const demoSlowDelay = time.Second

// startDemoOrigins starts the three origins on host, on consecutive ports
// from base (any free port when base is 0). A port in use is an error,
// unless moved is set: then that origin takes any free port and moved is
// told which.
func startDemoOrigins(host string, base int, moved func(name string, port int, o *checktest.Origin)) (map[string]*checktest.Origin, error) {
	out := map[string]*checktest.Origin{}
	fail := func(err error) (map[string]*checktest.Origin, error) {
		for _, o := range out {
			o.Close()
		}
		return nil, err
	}
	for i, name := range demoOrigins {
		port := 0
		if base > 0 {
			port = base + i
		}
		o, err := checktest.StartOrigin(nil, checktest.WithAddr(net.JoinHostPort(host, fmt.Sprint(port))),
			checktest.WithSlowDelay(demoSlowDelay))
		if err != nil && errors.Is(err, syscall.EADDRINUSE) {
			if moved == nil {
				return fail(fmt.Errorf("port %d in use (is 'vigil demo' running?): stop it or pass --origin-port N", port))
			}
			o, err = checktest.StartOrigin(nil, checktest.WithAddr(net.JoinHostPort(host, "0")),
				checktest.WithSlowDelay(demoSlowDelay))
			if err == nil {
				moved(name, port, o)
			}
		}
		if err != nil {
			return fail(fmt.Errorf("origin %s: %w", name, err))
		}
		out[name] = o
	}
	return out, nil
}

// listenError is a listen failure of the address a flag names; a port in
// use says what may hold it.
func listenError(flag, addr string, err error, holder string) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%s: %s already in use (is '%s' running?): stop it or pass %s ADDR", flag, addr, holder, flag)
	}
	return fmt.Errorf("%s: %w", flag, err)
}

// selfName is how to run this binary again from the current directory: the
// path it was started as (bin/vigil), or just its name when that is the
// same file found on PATH.
func selfName() string { return selfNameOf(os.Args[0]) }

func selfNameOf(arg0 string) string {
	if arg0 == "" {
		return "vigil"
	}
	if !strings.ContainsRune(arg0, filepath.Separator) && !strings.ContainsRune(arg0, '/') {
		return arg0 // found on PATH
	}
	base := filepath.Base(arg0)
	if p, err := exec.LookPath(base); err == nil {
		if a, err := os.Stat(p); err == nil {
			if b, err := os.Stat(arg0); err == nil && os.SameFile(a, b) {
				return base
			}
		}
	}
	return arg0
}

// demoConfig is the config the demo generates: short intervals so changes
// show within seconds.
func demoConfig(origins map[string]*checktest.Origin, f demoFlags, withBrowser bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, `# Generated by 'vigil demo'. Every key is documented in the README.
agent:
  region: %s
  vantage: demo
  listen: %s
  data_dir: %s
  admin_token: ${VIGIL_ADMIN_TOKEN:-}
defaults: {interval: 5s, timeout: 2s, rise: 2, fall: 2, flap: {hold_down: 20s}}
status_page:
  title: vigil demo
  refresh: 2s
  public:
    listen: 127.0.0.1:0
    title: Demo shop status
    checks: [{check: asset, name: Downloads}, {check: api, name: API}, {check: login-flow, name: Sign-in}]
targets:
`, demoRegions[0], f.listen, f.dataDir)
	for _, n := range demoOrigins {
		fmt.Fprintf(&b, "  - {name: %s, url: %s}\n", n, origins[n].URL())
	}
	fmt.Fprintf(&b, `checks:
  - name: healthz
    tier: shallow
    targets: [origin-a, origin-b, origin-c]
    interval: 2s
    http: {path: /healthz}
    expect: {status: 200}
  - name: asset
    tier: deep
    targets: [origin-a, origin-b, origin-c]
    interval: 3s
    http: {path: /asset.bin, cache_bust: true}
    expect:
      status: 200
      headers: {Access-Control-Allow-Origin: present, Cache-Control: "~max-age=\\d+"}
      checksum: "sha256:%s"
      ttfb: 500ms
  - name: api
    tier: deep
    targets: [origin-a, origin-b, origin-c]
    interval: 3s
    http: {path: /api/status}
    expect: {status: 200, json: [{path: ok, equals: true}]}
  - name: login-flow
    tier: synthetic
    targets: [origin-a, origin-b, origin-c]
    interval: 10s
    timeout: 5s
    script:
      - {name: login, http: {method: POST, path: /login, json: {user: demo, password: demo}}, expect: {status: 200}, extract: {token: {json: token}}}
      - {name: me, http: {path: /api/me, headers: {Authorization: "Bearer ${token}"}}, expect: {status: 200}}
`, checktest.AssetSHA256())
	if withBrowser {
		b.WriteString(`  - name: checkout-flow
    tier: synthetic
    targets: [origin-a]
    interval: 20s
    timeout: 15s
    script:
      - browser: {navigate: /shop}
      - browser: {click: "#add-to-cart"}
      - browser: {wait_text: {selector: "#cart-count", equals: "1"}}
`)
	}
	fmt.Fprintf(&b, `slos:
  - {name: asset-availability, check: asset, objective: 99.9%%, window: 30d}
  - {name: asset-ttfb, check: asset, ttfb_p95: 500ms, window: 5m}
alerting:
  quorum: 2
  evaluation_interval: 2s
  down: {for: 4s}
  repeat_interval: 1h
  receivers:
    - {name: console, webhook: {url: "http://%s/demo/hook"}}
proxy:
  listen: %s
  verdict_poll: 1s
  max_client_conns: 256 # a demo's few clients (the default, 10000, needs about 20000 open files)
  pools:
    - name: web
      hosts: ["*"]
      policy: round_robin
      origins: [{target: origin-a}, {target: origin-b}, {target: origin-c}]
      verdicts: {checks: [healthz, asset, api], quorum: 2, max_age: 15s}
      passive: {consecutive_5xx: 5, failure_rate: 25%%, window: 10s, min_requests: 10, ejection: 10s}
      max_ejected: 67%%
      retry: {tries: 3, try_timeout: 2s, budget: 4s}
      connect_timeout: 500ms
      slow_start: 5s
`, f.listen, f.proxyListen)
	return b.String()
}

func chromiumAvailable() bool {
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if _, err := exec.LookPath(n); err == nil {
			return true
		}
	}
	return false
}

func runDemo(cmd *cobra.Command, f demoFlags) error {
	if err := checkOriginPort(f.originPort); err != nil {
		return err
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(f.logLevel)); err != nil {
		return &exitError{code: 2, err: fmt.Errorf("--log-level: %q: want debug, info, warn or error", f.logLevel)}
	}
	log := slog.New(newRedactHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl})))
	// The demo is interactive: closing its terminal (SIGHUP) stops it, as
	// Ctrl-C does, where `vigil run` reloads its config.
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	d, err := startDemo(ctx, f, log, cmd.OutOrStdout())
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, `
vigil demo is running (Ctrl-C stops everything)

  status page   http://%s/
  public page   http://%s/          what customers see (status_page.public)
  proxy         http://%s/          try: curl -s http://%s/api/hello
  verdicts      http://%s/api/v1/verdicts
  origins       http://%s/api/v1/origins
  metrics       http://%s/metrics
`, d.app.Addr(), d.app.PublicAddr(), d.proxyAddr(), d.proxyAddr(), d.app.Addr(), d.app.Addr(), d.app.Addr())
	for _, n := range demoOrigins {
		fmt.Fprintf(out, "  %-13s %s\n", n, d.origins[n].URL())
	}
	fmt.Fprintf(out, `
Break an origin from the page, or:  %s
Modes: %s; with a parameter: %s.
Config: %s
`, demoFaultHint(selfName(), d.app.Addr()), strings.Join(demoModes, ", "), strings.Join(demoParamForms, ", "), d.configPath)
	return d.wait()
}

// demoFaultHint is the example command, run as prog, that breaks origin-b
// of the fault switches on addr: --addr is spelled out unless addr is the
// default.
func demoFaultHint(prog, addr string) string {
	if addr == defaultDemoListen {
		return prog + " demo fault origin-b corrupt"
	}
	return prog + " demo fault --addr " + addr + " origin-b corrupt"
}

// demo is a running demo: origins, the main app (region 1) and the extra
// regions' canaries.
type demo struct {
	app        *app
	origins    map[string]*checktest.Origin
	configPath string
	lock       *os.File // <data dir>/demo.lock, held while the demo runs
	wg         sync.WaitGroup
	errc       chan error
	cancel     context.CancelFunc
}

func (d *demo) proxyAddr() string {
	if d.app.prx != nil {
		for _, a := range d.app.prx.Addrs() {
			return a.String()
		}
	}
	return ""
}

// startDemo starts everything and returns once the agent listens.
func startDemo(parent context.Context, f demoFlags, log *slog.Logger, out io.Writer) (*demo, error) {
	// 0700 like every data dir, with the same checks (no symbolic link, as
	// root no directory on the way another user controls), before
	// anything is written in it: a later `vigil run` with data_dir
	// ./vigil-data finds it private already.
	if err := prepareDataDir("--data-dir", f.dataDir, log); err != nil {
		return nil, fmt.Errorf("--data-dir: %w", err)
	}
	// One demo a data dir, decided before anything starts or is written:
	// a second demo would rewrite demo.yaml with its own origins' ports,
	// and the running demo's file watcher would load it and send its
	// traffic to origins that are gone.
	lock, err := lockDataDir(f.dataDir, "demo", "the demo")
	if err != nil {
		var le *dataDirLockError
		if errors.As(err, &le) && le.holder != "" {
			return nil, fmt.Errorf("--data-dir: %s: another vigil demo runs from it (%s): stop it, or pass another --data-dir", f.dataDir, le.holder)
		}
		return nil, demoDataDirError(err)
	}
	origins, err := startDemoOrigins("127.0.0.1", f.originPort, func(name string, port int, o *checktest.Origin) {
		fmt.Fprintf(out, "port %d in use: %s listens on %s instead\n", port, name, o.URL())
	})
	if err != nil {
		closeLock(lock)
		return nil, err
	}
	ctx, cancel := context.WithCancel(parent)
	d := &demo{origins: origins, errc: make(chan error, 8), cancel: cancel, lock: lock}
	fail := func(err error) (*demo, error) {
		cancel()
		d.wg.Wait()
		for _, o := range origins {
			o.Close()
		}
		closeLock(lock)
		return nil, demoDataDirError(err)
	}
	// Listen first so the generated config (alert webhook) names the real address.
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fail(listenError("--listen", f.listen, err, "vigil demo"))
	}
	f.listen = ln.Addr().String()
	d.configPath = filepath.Join(f.dataDir, "demo.yaml")
	withBrowser := f.browser && chromiumAvailable()
	if err := units.WriteFileAtomic(d.configPath, []byte(demoConfig(origins, f, withBrowser)), 0o600); err != nil {
		return fail(err)
	}
	cfg, err := loadConfig(d.configPath, os.LookupEnv)
	if err != nil {
		return fail(err)
	}
	faults := &statuspage.FaultControl{
		Origins: demoOrigins, Modes: demoModes, Open: true,
		Set: func(origin, mode string) error { return d.setFault(origin, mode) },
		Current: func(origin string) string {
			if o, ok := d.origins[origin]; ok {
				return o.Mode().String()
			}
			return ""
		},
	}
	// /demo/fault and /demo/hook have no token (the demo is local), so like
	// the page's POST /fault they refuse cross-origin browser requests
	// (Sec-Fetch-Site, Origin): a web page the user visits can neither
	// switch faults nor print fake alerts on the terminal. The alerter's
	// webhook, a non-browser client, sends neither header.
	sameOrigin := http.NewCrossOriginProtection()
	routes := map[string]http.Handler{
		"POST /demo/fault": sameOrigin.Handler(http.HandlerFunc(d.faultAPI)),
		"POST /demo/hook":  sameOrigin.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { demoHook(out, w, r) })),
	}
	a, err := newApp(cfg, appOptions{roles: roles{canary: true, proxy: true, alerter: true, page: true},
		extraRoutes: routes, faults: faults, proxyFromStore: true, listener: ln, log: log})
	if err != nil {
		ln.Close()
		return fail(err)
	}
	d.app = a
	// The other regions: canaries with their own region label publishing
	// into the same store, sharing the browser.
	var regions sync.WaitGroup
	for _, region := range demoRegions[1:] {
		rcfg, err := loadConfig(d.configPath, os.LookupEnv)
		if err != nil {
			return fail(err)
		}
		rcfg.Agent.Region = region
		pairs, err := rcfg.Compile(canary.CompileOptions{Version: version, Browser: a.browser})
		if err != nil {
			return fail(err)
		}
		c, err := canary.New(&rcfg.Config, pairs, canary.Options{Sink: a.fan, Registry: prometheus.NewRegistry(), Log: log.With("region", region)})
		if err != nil {
			return fail(err)
		}
		d.wg.Add(1)
		regions.Add(1)
		go func() {
			defer d.wg.Done()
			defer regions.Done()
			if err := c.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				d.errc <- fmt.Errorf("canary %s: %w", region, err)
			}
		}()
	}
	// The app (and the store the other regions publish into) stops only
	// after those canaries have flushed their last verdicts.
	appCtx, appCancel := context.WithCancel(context.Background())
	go func() {
		<-ctx.Done()
		regions.Wait()
		appCancel()
	}()
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		if err := a.Run(appCtx); err != nil {
			d.errc <- err
		}
		cancel()
	}()
	// Wait for the listeners.
	deadline := time.Now().Add(10 * time.Second)
	for a.Addr() == "" || d.proxyAddr() == "" || a.PublicAddr() == "" {
		if time.Now().After(deadline) {
			return fail(errors.New("demo: listeners did not start within 10s"))
		}
		select {
		case err := <-d.errc:
			if strings.HasPrefix(err.Error(), "proxy.listen:") {
				err = fmt.Errorf("%w (pass --proxy-listen ADDR)", err)
			}
			return fail(err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if f.traffic > 0 {
		d.wg.Add(1)
		go func() { defer d.wg.Done(); demoTraffic(ctx, "http://"+d.proxyAddr(), f.traffic) }()
	}
	return d, nil
}

// demoDataDirError names the --data-dir flag where an error about the
// data dir's locks names agent.data_dir, the key the flag stands for.
func demoDataDirError(err error) error {
	var le *dataDirLockError
	if errors.As(err, &le) {
		return le.flagError()
	}
	return err
}

// closeLock releases a data dir lock (nil where flock(2) is missing).
func closeLock(f *os.File) {
	if f != nil {
		f.Close()
	}
}

// wait blocks until the demo stops, then closes the origins.
func (d *demo) wait() error {
	d.wg.Wait()
	for _, o := range d.origins {
		o.Close()
	}
	closeLock(d.lock)
	close(d.errc)
	var errs []error
	for err := range d.errc {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (d *demo) setFault(origin, mode string) error {
	o, ok := d.origins[origin]
	if !ok {
		return fmt.Errorf("no origin %q (have %s)", origin, strings.Join(demoOrigins, ", "))
	}
	// A bare parameterised mode means its default, not the parameter an
	// earlier switch left behind (partial:40% then partial is 25 % again).
	if def, ok := demoModeDefaults[strings.ToLower(strings.TrimSpace(mode))]; ok {
		mode = def
	}
	return o.SetFault(mode)
}

// demoModeDefaults are the checktest defaults of the parameterised modes.
var demoModeDefaults = map[string]string{"partial": "partial:25%", "slow": "slow:" + demoSlowDelay.String(), "flapping": "flapping:5"}

// faultAPI is POST /demo/fault?origin=…&mode=… (the demo listens on loopback
// only). mode is a mode name or a parameterised form such as partial:40%;
// cross-origin browser requests get 403.
func (d *demo) faultAPI(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		// e.g. ?mode=partial:40% unescaped: the % must be sent as %25.
		http.Error(w, "demo fault: bad query or form: "+err.Error()+" (escape % as %25)", http.StatusBadRequest)
		return
	}
	if err := d.setFault(r.FormValue("origin"), r.FormValue("mode")); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	fmt.Fprintf(w, "%s is now %s\n", r.FormValue("origin"), r.FormValue("mode"))
}

// demoHook prints the alerter's webhook notifications on the terminal,
// without control characters (see printable).
func demoHook(out io.Writer, w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var p struct {
		Status string `json:"status"`
		Alerts []struct {
			Status  string `json:"status"`
			Summary string `json:"summary"`
			Check   string `json:"check"`
			Target  string `json:"target"`
		} `json:"alerts"`
	}
	if err := jsonUnmarshal(body, &p); err == nil {
		for _, a := range p.Alerts {
			text := a.Summary
			if strings.EqualFold(a.Status, "resolved") {
				text = resolvedLine(a.Check, a.Target, a.Summary)
			}
			fmt.Fprintf(out, "%s  ALERT %-8s %s\n", time.Now().Format("15:04:05"), printable(strings.ToUpper(a.Status)), printable(text))
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// resolvedLine is what the terminal shows for a resolved alert. Its summary
// is the last one it fired with ("asset × origin-b down in 2 regions (…)"),
// which alone reads as if the origin were still down: the line says it
// recovered and quotes the summary as what it was ("asset × origin-b
// recovered (was down in 2 regions (…))").
func resolvedLine(check, target, summary string) string {
	subject := check
	if target != "" && subject != "" {
		subject += " × " + target
	}
	if subject == "" {
		return "recovered (was: " + summary + ")"
	}
	if rest, ok := strings.CutPrefix(summary, subject+" "); ok {
		return subject + " recovered (was " + rest + ")"
	}
	return subject + " recovered (was: " + summary + ")"
}

// printable drops the control characters of s (C0, DEL and C1, newlines and
// tabs included): text from a webhook body reaches the user's terminal, where
// ESC sequences would clear the screen, retitle the window or forge lines.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
}

// demoTraffic sends rate requests per second through the proxy until ctx ends.
func demoTraffic(ctx context.Context, base string, rate float64) {
	client := &http.Client{Timeout: 5 * time.Second}
	t := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer t.Stop()
	paths := []string{"/api/hello", "/asset.bin", "/api/items", "/"}
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		resp, err := client.Get(base + paths[i%len(paths)])
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
}

// checkOriginPort rejects an --origin-port whose three ports do not all
// fit below 65536 (a usage error, exit 2).
func checkOriginPort(port int) error {
	if port < 0 || port > 65535-len(demoOrigins) {
		return &exitError{code: 2, err: fmt.Errorf("--origin-port: %d: want 1-%d, or 0 for any free ports", port, 65535-len(demoOrigins))}
	}
	return nil
}

// demoFaultUsage is what `vigil demo fault` with the wrong arguments says.
func demoFaultUsage(cmd *cobra.Command, got int) error {
	return &exitError{code: 2, err: fmt.Errorf(`vigil demo fault: want ORIGIN and MODE, got %s
usage: %s
origins: %s
modes: %s; with a parameter: %s`, plural(got, "argument"), cmd.CommandPath()+" [--addr ADDR] ORIGIN MODE", strings.Join(demoOrigins, ", "),
		strings.Join(demoModes, ", "), strings.Join(demoParamForms, ", "))}
}

func newDemoFaultCmd() *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "fault [--addr ADDR] ORIGIN MODE",
		Short: "Switch a running demo's origin to a fault mode (" + strings.Join(demoModes, ", ") + ")",
		Long: `Switches one origin of a running 'vigil demo' or 'vigil demo origins' (` + strings.Join(demoOrigins, ", ") + `) to a fault mode.

Modes: ` + strings.Join(demoModes, ", ") + `.
partial, slow and flapping take a parameter after a colon:
  partial:40%    40 % of /api/* answer 503 (default 25 %)
  slow:3s        first byte after 3 s, /healthz excepted (default ` + demoSlowDelay.String() + `: over the demo's
                 500ms TTFB objective, under its 2s timeout)
  flapping:10    ok / 503, switching every 10 requests (default 5)
  flapping:30s   ok / 503, switching every 30 s
'ok' heals the origin. Use --addr when the demo runs with a non-default --listen, and
for 'vigil demo origins' (default 127.0.0.1:9204; it prints the command).`,
		Example: "  vigil demo fault origin-b corrupt\n  vigil demo fault origin-c partial:40%\n  vigil demo fault --addr 127.0.0.1:9204 origin-a ok",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return demoFaultUsage(cmd, len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			// The origin and mode are checked here first: a typo is a
			// usage error (exit 2) whether or not a demo runs.
			var problem string
			if !slices.Contains(demoOrigins, args[0]) {
				problem = fmt.Sprintf("no origin %q (have %s)", args[0], strings.Join(demoOrigins, ", "))
			} else if _, err := checktest.ParseFault(args[1]); err != nil {
				problem = err.Error()
			}
			if problem != "" {
				return &exitError{code: 2, err: fmt.Errorf("vigil demo fault: %s\nusage: %s\norigins: %s\nmodes: %s; with a parameter: %s", problem,
					cmd.CommandPath()+" [--addr ADDR] ORIGIN MODE", strings.Join(demoOrigins, ", "), strings.Join(demoModes, ", "), strings.Join(demoParamForms, ", "))}
			}
			resp, err := http.PostForm("http://"+addr+"/demo/fault", url.Values{"origin": {args[0]}, "mode": {args[1]}})
			if err != nil {
				hint := fmt.Sprintf("is 'vigil demo' running on %s?", addr)
				if !cmd.Flags().Changed("addr") {
					hint += fmt.Sprintf(" ('vigil demo origins' listens on %s by default: pass --addr with the address it printed)", demoOriginsListen(defaultDemoOriginPort))
				}
				return &exitError{code: 1, err: fmt.Errorf("%s %w", hint, err)}
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
				return &exitError{code: 1, err: fmt.Errorf("%s has no demo fault switches (is it 'vigil run'?): pass the --addr that 'vigil demo' or 'vigil demo origins' printed", addr)}
			}
			if resp.StatusCode == http.StatusBadRequest {
				// An unknown origin or mode, or a bad parameter: a usage
				// error like a missing MODE (exit 2), with the same lists.
				return &exitError{code: 2, err: fmt.Errorf("vigil demo fault: %s\norigins: %s\nmodes: %s; with a parameter: %s",
					strings.TrimSpace(string(b)), strings.Join(demoOrigins, ", "), strings.Join(demoModes, ", "), strings.Join(demoParamForms, ", "))}
			}
			if resp.StatusCode != http.StatusOK {
				return &exitError{code: 1, err: fmt.Errorf("%s", strings.TrimSpace(string(b)))}
			}
			fmt.Fprint(cmd.OutOrStdout(), string(b))
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", defaultDemoListen, "the demo's status page address (its --listen), or the address 'vigil demo origins' prints")
	return cmd
}

// defaultDemoOriginPort is the first demo origin's port (--origin-port).
const defaultDemoOriginPort = 9201

// demoOriginsListen is where `vigil demo origins` serves POST
// /demo/fault by default: the port after its three origins.
func demoOriginsListen(originPort int) string {
	if originPort <= 0 {
		return "127.0.0.1:0"
	}
	return net.JoinHostPort("127.0.0.1", fmt.Sprint(originPort+len(demoOrigins)))
}

func newDemoOriginsCmd() *cobra.Command {
	var port int
	var host, listen string
	cmd := &cobra.Command{
		Use:   "origins",
		Short: "Serve only the three demo origins, with their fault switches (for examples/quickstart.yaml)",
		Long: `Serves the three demo origins on --host, ports --origin-port to --origin-port+2 (9201-9203,
the ports examples/quickstart.yaml points at), and their fault switches (POST /demo/fault, what
'vigil demo fault' calls) on --listen, default 127.0.0.1 and the port after the origins (9204).
It prints the command that breaks an origin. A port in use is an error (exit 1).`,
		Example: "  vigil demo origins &\n  vigil demo fault --addr 127.0.0.1:9204 origin-b corrupt\n  vigil check -c examples/quickstart.yaml",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOriginPort(port); err != nil {
				return err
			}
			origins, err := startDemoOrigins(host, port, nil)
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			defer func() {
				for _, o := range origins {
					o.Close()
				}
			}()
			if listen == "" {
				listen = demoOriginsListen(port)
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return &exitError{code: 1, err: listenError("--listen", listen, err, "vigil demo origins")}
			}
			d := &demo{origins: origins}
			mux := http.NewServeMux()
			mux.Handle("POST /demo/fault", http.NewCrossOriginProtection().Handler(http.HandlerFunc(d.faultAPI)))
			// Guarded against DNS rebinding as the agent listener is (see
			// hostCheck): on loopback, only a loopback Host is served.
			local := listenerLoopbackOnly(listen, ln)
			handler := loopbackHostCheck("'vigil demo origins'", func() bool { return local }, mux)
			srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
			go func() { _ = srv.Serve(ln) }()
			defer srv.Close()
			out := cmd.OutOrStdout()
			for _, n := range demoOrigins {
				fmt.Fprintf(out, "%s %s\n", n, origins[n].URL())
			}
			fmt.Fprintf(out, "fault switches on %s: %s\nmodes: %s; with a parameter: %s\n",
				ln.Addr(), selfName()+" demo fault --addr "+ln.Addr().String()+" origin-b corrupt", strings.Join(demoModes, ", "), strings.Join(demoParamForms, ", "))
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			<-ctx.Done()
			return nil
		},
	}
	cmd.Flags().IntVar(&port, "origin-port", defaultDemoOriginPort, "first origin port (three consecutive ports; 0: any free ports)")
	cmd.Flags().StringVar(&host, "host", "127.0.0.1", "address the origins listen on (0.0.0.0 inside a container)")
	cmd.Flags().StringVar(&listen, "listen", "", "fault switch address for 'vigil demo fault --addr' (default 127.0.0.1 and the port after the origins)")
	return cmd
}

// plural is "1 region", "2 regions".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
