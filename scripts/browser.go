package scripts

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// DefaultMaxConcurrent is how many runs may use the browser at once when
// BrowserConfig.MaxConcurrent is 0.
const DefaultMaxConcurrent = 2

// browserStartTimeout bounds the start of the Chromium process.
const browserStartTimeout = 30 * time.Second

// ErrBrowserUnavailable wraps every error of a browser that is missing or
// cannot start. Runs that meet it fail with checks.CauseBrowserUnavailable.
var ErrBrowserUnavailable = errors.New("browser unavailable")

// execCandidates are the programs tried, in order, when ExecPath is empty.
var execCandidates = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"}

// BrowserConfig configures the shared browser (`agent.browser:`).
type BrowserConfig struct {
	// ExecPath is the Chromium (or Chrome) binary, a path or a name looked up
	// in PATH. Default: the first of chromium, chromium-browser,
	// google-chrome, google-chrome-stable, headless-shell found in PATH.
	ExecPath string `mapstructure:"exec_path"`
	// MaxConcurrent is how many script runs may hold a browser tab at once;
	// the others wait for a slot before their timeout starts, at most
	// Options.SlotWait (default 5m). Default 2.
	MaxConcurrent int `mapstructure:"max_concurrent"`
	// NoSandbox starts Chromium with --no-sandbox. Default (nil): true when
	// vigil runs as root (euid 0), where Chromium refuses to start with its
	// sandbox, else false.
	NoSandbox *bool `mapstructure:"no_sandbox"`
	// Env names further variables of vigil's environment that Chromium
	// gets (e.g. HTTPS_PROXY, NO_PROXY). Chromium otherwise starts with
	// only the variables of browserEnvAllowed, so that secrets in vigil's
	// environment do not show in /proc/<pid>/environ of the browser.
	// Default none.
	Env []string `mapstructure:"env"`
	// CAFile is a PEM file of CA certificates that Chromium trusts besides
	// its own roots, for sites behind a private CA (as http.tls.ca_file
	// does for http steps). It holds for every browser run of the agent.
	// Certificates are still verified in full: a leaf the CA issued that
	// expired, or names another host, still fails. The CAs go into an NSS
	// database of the browser's own (Chromium's trust store on Linux),
	// made with NSS's certutil, which must be installed (Debian/Ubuntu
	// package libnss3-tools); without it browser runs fail with
	// browser_unavailable, naming it. Default none.
	CAFile string `mapstructure:"ca_file"`
	// Log receives browser start, restart and stop events. Default
	// slog.Default().
	Log *slog.Logger `mapstructure:"-"`

	caCerts []*x509.Certificate // CAFile, parsed
}

// loadCAFile parses CAFile.
func (c *BrowserConfig) loadCAFile() error {
	c.caCerts = nil
	if c.CAFile == "" {
		return nil
	}
	data, err := os.ReadFile(c.CAFile)
	if err != nil {
		return fmt.Errorf("ca_file: %w", err)
	}
	for len(data) > 0 {
		var blk *pem.Block
		blk, data = pem.Decode(data)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return fmt.Errorf("ca_file: %s: certificate %d: %w", c.CAFile, len(c.caCerts)+1, err)
		}
		c.caCerts = append(c.caCerts, cert)
	}
	if len(c.caCerts) == 0 {
		return fmt.Errorf("ca_file: %s: no PEM certificate in it", c.CAFile)
	}
	return nil
}

// certutilTimeout bounds each run of certutil.
const certutilTimeout = 20 * time.Second

// trustStore makes, in home, the NSS database (home/.pki/nssdb) that
// Chromium started with HOME=home reads its locally trusted CAs from, and
// adds the CAs of CAFile to it as trusted issuers of server certificates.
func (c *BrowserConfig) trustStore(home string) error {
	certutil, err := exec.LookPath("certutil")
	if err != nil {
		return fmt.Errorf("ca_file: certutil of NSS is needed to give Chromium the CAs (Debian/Ubuntu package libnss3-tools): %v", err)
	}
	db := filepath.Join(home, ".pki", "nssdb")
	if err := os.MkdirAll(db, 0o700); err != nil {
		return fmt.Errorf("ca_file: %w", err)
	}
	run := func(args ...string) error {
		ctx, cancel := context.WithTimeout(context.Background(), certutilTimeout)
		defer cancel()
		out, err := exec.CommandContext(ctx, certutil, append([]string{"-d", "sql:" + db}, args...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ca_file: certutil %s: %v: %s", args[0], err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	if err := run("-N", "--empty-password"); err != nil {
		return err
	}
	for i, cert := range c.caCerts {
		f := filepath.Join(home, fmt.Sprintf("ca-%d.pem", i))
		if err := os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o600); err != nil {
			return fmt.Errorf("ca_file: %w", err)
		}
		// C: a trusted issuer of server certificates (not of e-mail or
		// code signing).
		if err := run("-A", "-n", fmt.Sprintf("vigil-ca-%d", i), "-t", "C,,", "-i", f); err != nil {
			return err
		}
	}
	return nil
}

// geteuid is os.Geteuid; tests replace it.
var geteuid = os.Geteuid

// noSandbox reports whether Chromium starts with --no-sandbox.
func (c *BrowserConfig) noSandbox() bool {
	if c.NoSandbox != nil {
		return *c.NoSandbox
	}
	return geteuid() == 0
}

// browserEnvAllowed are the variables (a trailing "*" matches a prefix) of
// vigil's environment that Chromium gets besides BrowserConfig.Env: what it
// needs to find programs, fonts, its home and temporary directories, locale,
// time zone and a display.
var browserEnvAllowed = []string{"PATH", "HOME", "LANG", "LANGUAGE", "LC_*", "TZ", "TMPDIR", "XDG_*", "FONTCONFIG_*", "DISPLAY", "WAYLAND_DISPLAY"}

// browserEnv returns the NAME=value entries of environ that Chromium gets.
func (c *BrowserConfig) browserEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		if slices.Contains(c.Env, name) || slices.ContainsFunc(browserEnvAllowed, func(a string) bool {
			if p, ok := strings.CutSuffix(a, "*"); ok {
				return strings.HasPrefix(name, p)
			}
			return a == name
		}) {
			out = append(out, kv)
		}
	}
	return out
}

// ValidateAndSetDefaults sets the defaults. A missing binary is not a config
// error for the agent (it may be installed later): it is reported by every
// browser run as browser_unavailable. `vigil validate` reports an ExecPath
// that names no executable on the machine it runs on.
// Every error is returned (joined), each naming its key.
func (c *BrowserConfig) ValidateAndSetDefaults() error {
	var errs []error
	if c.MaxConcurrent < 0 {
		errs = append(errs, errors.New("max_concurrent: must not be negative"))
	}
	if c.MaxConcurrent == 0 {
		c.MaxConcurrent = DefaultMaxConcurrent
	}
	for i, name := range c.Env {
		if name == "" {
			errs = append(errs, fmt.Errorf("env[%d]: \"\": want a variable name such as HTTPS_PROXY", i))
		} else if cut := strings.IndexAny(name, "=\x00"); cut >= 0 {
			// Only the name is shown: a NAME=value entry is likely a
			// secret, and this error reaches validate's output, the
			// reload log and the unauthenticated /healthz.
			errs = append(errs, fmt.Errorf("env[%d]: %q: want a variable name such as HTTPS_PROXY, not NAME=value: "+
				"env lists names only, and Chromium gets their values from vigil's own environment", i, name[:cut+1]+"…"))
		}
	}
	if err := c.loadCAFile(); err != nil {
		errs = append(errs, err)
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	return errors.Join(errs...)
}

// Browser is one shared headless Chromium process for all browser scripts of
// the agent. It starts on the first run that needs it, gives every run a new
// isolated browser context (own cookies, storage and cache) in a tab of its
// own, limits concurrent runs, restarts a browser that died, and kills every
// Chromium process it started on Close. It is safe for concurrent use.
type Browser struct {
	cfg BrowserConfig
	sem chan struct{}

	lock        chan struct{} // a mutex that waiting runs can give up on (capacity 1)
	closed      bool
	root        context.Context // chromedp context owning the browser process; nil when not running
	rootCancel  context.CancelFunc
	allocCancel context.CancelFunc
	dir         string // the running browser's profile and temporary files, removed when it stops
	starts      int
	idleStop    time.Duration // stop the browser after this long without a run; 0: never
	lastUse     atomic.Int64  // when a run last started or ended, unix nanoseconds
}

// browserIdleStop is how long the browser runs without a browser run (no
// run holding a browser slot) before it is stopped, so that Chromium (some
// 8 processes and 0.5-1 GB of memory) does not keep running once a reload
// removed every browser check. The next browser run starts it again.
// Tests shorten it.
var browserIdleStop = 10 * time.Minute

// NewBrowser returns a Browser; the process starts on first use.
func NewBrowser(cfg BrowserConfig) *Browser {
	_ = cfg.ValidateAndSetDefaults()
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = DefaultMaxConcurrent
	}
	return &Browser{cfg: cfg, sem: make(chan struct{}, cfg.MaxConcurrent), lock: make(chan struct{}, 1), idleStop: browserIdleStop}
}

// findExec resolves the browser binary.
func (c *BrowserConfig) findExec() (string, error) {
	if c.ExecPath != "" {
		p, err := exec.LookPath(c.ExecPath)
		if err != nil {
			return "", fmt.Errorf("%w: exec_path %s: %v", ErrBrowserUnavailable, c.ExecPath, err)
		}
		return p, nil
	}
	for _, name := range execCandidates {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	last := len(execCandidates) - 1
	return "", fmt.Errorf("%w: no %s or %s in PATH (set agent.browser.exec_path)", ErrBrowserUnavailable,
		strings.Join(execCandidates[:last], ", "), execCandidates[last])
}

func (b *Browser) mustLock() { b.lock <- struct{}{} }
func (b *Browser) unlock()   { <-b.lock }

// cutError is the error of opening a run's tab (or starting the browser
// for it) that ctx ended before it was done: vigil's own work ran out of
// the time it had. closed is done once what was begun is undone (the new
// target closed): until then the run keeps its browser slot.
type cutError struct {
	start  bool            // the browser was starting, not yet opening the tab
	closed <-chan struct{} // nil: nothing is left to undo
	err    error           // ctx's error
}

func (e *cutError) Error() string {
	if e.start {
		return "starting the browser: " + e.err.Error()
	}
	return "opening a tab: " + e.err.Error()
}

func (e *cutError) Unwrap() error { return e.err }

// running returns the root context of a live browser, starting (or
// restarting) it when needed. A run waiting for another run's start gives
// up when ctx ends, and so does a start of its own: the half-started
// browser is killed (the next run starts it again) and the error is a
// *cutError.
func (b *Browser) running(ctx context.Context) (context.Context, error) {
	select {
	case b.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, &cutError{start: true, err: ctx.Err()} // another run's start
	}
	defer b.unlock()
	if b.closed {
		return nil, fmt.Errorf("%w: browser is closed", ErrBrowserUnavailable)
	}
	b.touch()
	if b.root != nil && b.root.Err() == nil {
		return b.root, nil
	}
	if b.root != nil {
		b.cfg.Log.Warn("browser died; restarting")
		b.stopLocked()
	}
	path, err := b.cfg.findExec()
	if err != nil {
		return nil, err
	}
	// The browser's profile (--user-data-dir: cookies, cache of the pages
	// visited) and Chromium's own temporary files (org.chromium.Chromium.*)
	// go in a private directory, removed when the browser stops. Its name
	// carries vigil's pid, so that this start removes those of a vigil that
	// was killed before it could (see sweepBrowserDirs).
	sweepBrowserDirs(b.cfg.Log)
	dir, err := browserDir()
	if err != nil {
		return nil, fmt.Errorf("%w: a directory for its profile and temporary files: %v", ErrBrowserUnavailable, err)
	}
	env := slices.DeleteFunc(b.cfg.browserEnv(os.Environ()), func(kv string) bool { return strings.HasPrefix(kv, "TMPDIR=") })
	if b.cfg.CAFile != "" && len(b.cfg.caCerts) == 0 {
		// NewBrowser could not read it: say why on every run rather
		// than start without the CAs.
		if err := b.cfg.loadCAFile(); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("%w: %v", ErrBrowserUnavailable, err)
		}
	}
	if len(b.cfg.caCerts) > 0 {
		// Chromium on Linux reads the CAs a user trusts from
		// $HOME/.pki/nssdb: a home of its own holds the ca_file's.
		home := filepath.Join(dir, "home")
		if err := b.cfg.trustStore(home); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("%w: %v", ErrBrowserUnavailable, err)
		}
		env = append(slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "HOME=") }), "HOME="+home)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("mute-audio", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.WindowSize(1280, 800),
		chromedp.UserDataDir(filepath.Join(dir, browserProfile)),
		chromedp.NoInheritEnv,
		chromedp.Env(append(env, "TMPDIR="+dir)...),
	)
	// Always explicit: chromedp adds --no-sandbox for uid 0 by itself
	// unless the flag is set to false.
	noSandbox := b.cfg.noSandbox()
	opts = append(opts, chromedp.Flag("no-sandbox", noSandbox))
	allocCtx, allocCancel := chromedp.NewExecAllocator(context.Background(), opts...)
	log := b.cfg.Log
	root, rootCancel := chromedp.NewContext(allocCtx,
		chromedp.WithLogf(func(f string, a ...any) { log.Debug("chromium: " + fmt.Sprintf(f, a...)) }),
		chromedp.WithErrorf(func(f string, a ...any) { log.Warn("chromium: " + fmt.Sprintf(f, a...)) }),
	)
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(root) }()
	wait := time.NewTimer(browserStartTimeout)
	defer wait.Stop()
	select {
	case err = <-started:
	case <-wait.C:
		err = fmt.Errorf("no answer within %s", browserStartTimeout)
	case <-ctx.Done():
		// Killing the process and waiting for it is left to the
		// background: the caller's time is up.
		go func() {
			rootCancel()
			allocCancel()
			removeBrowserDir(dir)
		}()
		return nil, &cutError{start: true, err: ctx.Err()}
	}
	if err != nil {
		rootCancel()
		allocCancel()
		removeBrowserDir(dir)
		if !noSandbox && strings.Contains(strings.ToLower(err.Error()), "sandbox") {
			// The fix first: a table cuts long errors at the end.
			return nil, fmt.Errorf("%w: set agent.browser.no_sandbox: true: the Chromium sandbox is not available here (starting %s: %v)", ErrBrowserUnavailable, path, err)
		}
		return nil, fmt.Errorf("%w: starting %s: %v", ErrBrowserUnavailable, path, err)
	}
	b.root, b.rootCancel, b.allocCancel, b.dir = root, rootCancel, allocCancel, dir
	b.starts++
	b.touch()
	b.cfg.Log.Info("browser started", "exec_path", path, "pid", b.pidLocked(), "starts", b.starts)
	if b.idleStop > 0 {
		go b.watchIdle(root, b.idleStop)
	}
	return root, nil
}

// touch records that a run uses the browser now.
func (b *Browser) touch() { b.lastUse.Store(time.Now().UnixNano()) }

// watchIdle stops the browser behind root once no run has held a browser
// slot for idle. It ends when that browser stops (idle, Close, a restart
// after it died).
func (b *Browser) watchIdle(root context.Context, idle time.Duration) {
	t := time.NewTimer(idle)
	defer t.Stop()
	for {
		select {
		case <-root.Done():
			return
		case <-t.C:
		}
		next := b.stopIfIdle(root, idle)
		if next <= 0 {
			return
		}
		t.Reset(next)
	}
}

// stopIfIdle stops the browser behind root when it is still the running
// one, no run holds a browser slot and none started or ended within idle.
// It returns when to look again, 0 when the browser is stopped.
func (b *Browser) stopIfIdle(root context.Context, idle time.Duration) time.Duration {
	b.mustLock()
	defer b.unlock()
	if b.root != root || b.closed {
		return 0
	}
	if len(b.sem) > 0 {
		return idle
	}
	since := time.Since(time.Unix(0, b.lastUse.Load()))
	if since < idle {
		return idle - since
	}
	b.cfg.Log.Info("browser stopped: no browser run for a while", "idle", idle.String(), "pid", b.pidLocked())
	b.stopLocked()
	return 0
}

// Start starts the browser process now instead of on the first browser
// run, so that the first run's timings do not include Chromium's start
// (about 0.5-1.5 s). Optional; a missing or broken binary returns an error
// wrapping ErrBrowserUnavailable. ctx bounds the wait and the start.
func (b *Browser) Start(ctx context.Context) error {
	_, err := b.running(ctx)
	return err
}

// stopLocked kills the browser process and its children and waits for
// them. b.lock is held.
func (b *Browser) stopLocked() {
	if b.root == nil {
		return
	}
	// Cancel kills the process (exec.CommandContext) and waits for it;
	// removeBrowserDir kills leftover children that use its profile.
	b.rootCancel()
	b.allocCancel()
	removeBrowserDir(b.dir)
	b.root, b.rootCancel, b.allocCancel, b.dir = nil, nil, nil, ""
}

func (b *Browser) pidLocked() int {
	if b.root == nil {
		return 0
	}
	if c := chromedp.FromContext(b.root); c != nil && c.Browser != nil {
		if p := c.Browser.Process(); p != nil {
			return p.Pid
		}
	}
	return 0
}

// PID returns the process id of the running browser, 0 when none runs.
func (b *Browser) PID() int {
	b.mustLock()
	defer b.unlock()
	return b.pidLocked()
}

// Starts returns how many times the browser process was started.
func (b *Browser) Starts() int {
	b.mustLock()
	defer b.unlock()
	return b.starts
}

// Close kills the browser and all its processes and waits for them; later
// runs fail with browser_unavailable. Close is idempotent.
func (b *Browser) Close() error {
	b.mustLock()
	defer b.unlock()
	b.closed = true
	b.stopLocked()
	return nil
}

// releaseSlot gives a concurrency slot back.
func (b *Browser) releaseSlot() {
	b.touch()
	<-b.sem
}

// acquire takes a concurrency slot, waiting until ctx ends.
func (b *Browser) acquire(ctx context.Context) (release func(), err error) {
	select {
	case b.sem <- struct{}{}:
		return b.releaseSlot, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// tab is one run's isolated browser context and tab.
type tab struct {
	ctx    context.Context // chromedp context of the tab, lives until close
	root   context.Context // the browser's root context, ended when the browser dies
	cancel context.CancelFunc
	events *pageEvents
	frames frameTargets // out-of-process iframes the run's steps attached to
}

// attachTarget makes the first chromedp call on tctx, a new target's
// context: that call binds the target's event loop to the context it gets,
// so it gets tctx itself (no deadline), and ctx bounds only the wait for
// it. On any error tctx is cancelled. When ctx ends first it returns
// ctx.Err() at once and undoes the opening in the background: closed is
// done when that is over. closed is nil for every other outcome.
//
// The undoing lets the opening finish first (for at most
// cutOpeningWait), then cancels tctx, which closes the tab and disposes
// of its browser context; a browser context the browser made for a tab
// chromedp never attached to, which chromedp leaves, is disposed of here.
// Cancelling the opening midway instead left that browser context (and a
// tab the browser had made) in the long-running browser for good, one per
// cut-short opening.
func attachTarget(ctx, tctx context.Context, cancel context.CancelFunc) (closed <-chan struct{}, err error) {
	done := make(chan error, 1)
	go func() { done <- chromedp.Do(tctx) }()
	select {
	case err := <-done:
		if err != nil {
			cancel()
		}
		return nil, err
	case <-ctx.Done():
		c := make(chan struct{})
		go func() {
			defer close(c)
			var err error
			select {
			case err = <-done:
			case <-time.After(cutOpeningWait):
				cancel()
				err = <-done
			}
			cancel()
			if err == nil {
				return
			}
			if cc := chromedp.FromContext(tctx); cc != nil && cc.Target == nil && cc.BrowserContextID != "" && cc.Browser != nil {
				dctx, dcancel := context.WithTimeout(context.Background(), cutOpeningWait)
				defer dcancel()
				_, _ = cdp.Call(dctx, cc.Browser, target.DisposeBrowserContext, target.DisposeBrowserContextParams{BrowserContextID: cc.BrowserContextID})
			}
		}()
		return c, ctx.Err()
	}
}

// cutOpeningWait bounds how long a tab opening cut short is let finish
// before it is cancelled where it stands, and the disposal of what it
// left: a browser that takes longer is hung, and is restarted.
const cutOpeningWait = 10 * time.Second

// openTab opens a new isolated browser context with one tab, bounded by ctx
// for the opening only, the (re)start of a browser that is not running
// included. The tab lives until close. When ctx ends first, the error is
// a *cutError.
func (b *Browser) openTab(ctx context.Context) (*tab, error) {
	root, err := b.running(ctx)
	if err != nil {
		return nil, err
	}
	ev := &pageEvents{}
	t := &tab{root: root, events: ev}
	tctx, cancel := chromedp.NewContext(root, chromedp.WithNewBrowserContext(), chromedp.WithListener(ev.handle), chromedp.WithListener(t.onAttached))
	t.ctx, t.cancel = tctx, cancel
	if closed, err := attachTarget(ctx, tctx, cancel); err != nil {
		if ctx.Err() != nil && err == ctx.Err() {
			return nil, &cutError{closed: closed, err: err}
		}
		if root.Err() != nil {
			return nil, fmt.Errorf("browser died while opening a tab: %w", err)
		}
		return nil, fmt.Errorf("opening a tab: %w", err)
	}
	// A JavaScript dialog (alert, confirm, prompt, beforeunload) blocks the
	// page until it is answered: accept it, as a user clicking OK would.
	dialogs := chromedp.Events(tctx, page.JavascriptDialogOpening)
	go func() {
		for d, err := range dialogs {
			if err != nil {
				return
			}
			_, _ = chromedp.Call(tctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true, PromptText: d.DefaultPrompt})
		}
	}()
	return t, nil
}

// mainFrame returns the id of the tab's main frame (a tab's main frame
// has its target's id).
func (t *tab) mainFrame() cdp.FrameID {
	if c := chromedp.FromContext(t.ctx); c != nil && c.Target != nil {
		return cdp.FrameID(c.Target.TargetID)
	}
	return ""
}

// close closes the tab and disposes of its browser context.
func (t *tab) close() { t.cancel() }

// browserDead reports whether the browser process behind the tab is gone.
func (t *tab) browserDead() bool { return t.root.Err() != nil }
