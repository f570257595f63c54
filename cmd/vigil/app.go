package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/vigil-synthetics/vigil/reporting/units"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/vigil-synthetics/vigil/canary"
	"github.com/vigil-synthetics/vigil/proxy"
	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/alerting"
	"github.com/vigil-synthetics/vigil/reporting/influx"
	"github.com/vigil-synthetics/vigil/reporting/statuspage"
	"github.com/vigil-synthetics/vigil/reporting/store"
	"github.com/vigil-synthetics/vigil/scripts"
)

// roles selects what one process runs.
type roles struct {
	canary, proxy, alerter, page bool
}

// appOptions are the command-line choices that shape an app.
type appOptions struct {
	roles roles
	shard canary.Shard
	// verdictsFrom lists canary base URLs the proxy reads verdicts from
	// (vigil proxy --verdicts-from); empty: InfluxDB if configured, else the
	// local embedded store, else (in vigil run) the canary in this process.
	verdictsFrom []string
	// verdictsTransport carries the requests to verdictsFrom; nil: Go's
	// default (the system pool). Set by --verdicts-from-ca.
	verdictsTransport http.RoundTripper
	// listen overrides agent.listen (tests and the demo use 127.0.0.1:0).
	listen string
	// listener, when set, is used instead of listening on agent.listen.
	listener net.Listener
	// watch polls the config file for changes (besides SIGHUP).
	watch time.Duration
	// extraRoutes are mounted on the agent listener (the demo's fault API).
	extraRoutes map[string]http.Handler
	// faults enables the status page fault switches (demo).
	faults *statuspage.FaultControl
	// proxyFromStore makes the proxy read verdicts from the local store (all
	// regions that write to it) rather than from the in-process canary.
	proxyFromStore bool
	// proxyAbsent: the command runs the proxy role but the config had no
	// proxy section at start (vigil run), so the proxy did not start. A
	// reload that adds one is refused: the proxy starts on restart.
	proxyAbsent bool
	// hurry, closed, ends agent.shutdown_delay early (a second signal).
	hurry <-chan struct{}
	log   *slog.Logger
}

// app is one vigil process: the parts its roles need, wired together.
type app struct {
	opts appOptions
	log  *slog.Logger
	// startedAt is when Run logged "vigil started" (zero if it failed
	// before: a port in use).
	startedAt time.Time
	reg       *prometheus.Registry
	// locks are the data dir parts this process holds (lockDataDir).
	locks []*os.File

	path string // the config file

	mu  sync.Mutex
	cfg *File // the running config; read with current()

	local   *store.Store  // embedded store; nil when disabled
	remote  *influx.Store // InfluxDB; nil when not configured
	fan     *reporting.Fanout
	hist    reporting.HistorySource // what readers (alerter; status page and API via shown) read
	browser *scripts.Browser
	can     *canary.Canary
	// reader, in a process that reads a store but runs no canary (vigil
	// alerter, a proxy over the embedded store), serves the canary's
	// read-only history API over hist: it never runs (see newReader).
	reader *canary.Canary
	prx    *proxy.Proxy
	alr    *alerting.Alerter

	// fallback, with a canary and InfluxDB, is what the status page and API
	// read (see shown); nil otherwise.
	fallback *reporting.Fallback

	// localRead is what this process's readers read of local: its reads
	// with the batches the fan-out keeps for it while it refuses writes.
	localRead reporting.HistorySource

	sloMu    sync.Mutex
	sloCache []statuspage.SLOStatus
	sloAt    time.Time

	reloadMu             sync.Mutex
	reloadOK, reloadFail prometheus.Counter
	reloadErr            error
	// Without a canary role the app keeps vigil_config_last_reload_successful
	// and vigil_config_last_reload_success_timestamp_seconds itself; with one
	// the canary registers and sets them (SetReloadError).
	reloadGood, reloadTime prometheus.Gauge

	ln      net.Listener
	srv     *http.Server
	handler http.Handler

	// page is the status page (nil without one); publicLn the listener of
	// its public page (status_page.public.listen), nil without one.
	page       *statuspage.Page
	publicLn   net.Listener
	publicAddr atomic.Pointer[string] // publicLn's address, for PublicAddr

	// stopping is set when shutdown begins (/readyz answers 503).
	stopping atomic.Bool
}

// Compile is canary.Config.Compile with the file's other sections applied:
// failure artifacts are kept for store.embedded.retention when the embedded
// store is on, so a stored verdict's screenshot lives as long as the
// verdict (scripts.DefaultArtifactMaxAge, 7 days, without it). Every
// command that runs checks compiles through it.
func (f *File) Compile(o canary.CompileOptions) ([]canary.Pair, error) {
	if o.ArtifactMaxAge == 0 && f.Store.Embedded.On() {
		o.ArtifactMaxAge = f.Store.Embedded.Retention
	}
	return f.Config.Compile(o)
}

// newApp builds every part the roles need from a validated config. Nothing
// runs until Run.
func newApp(cfg *File, o appOptions) (*app, error) {
	cfg.overrideListen(o.listen)
	a := &app{opts: o, cfg: cfg, path: cfg.path, log: o.log, reg: prometheus.NewRegistry()}
	if a.log == nil {
		a.log = slog.Default()
	}
	setLogRedactor(a.log, cfg.redactor) // ${NAME} values show as *** in the log
	a.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	a.reloadOK = prometheus.NewCounter(prometheus.CounterOpts{Name: "vigil_config_reloads_total", Help: "Successful config reloads."})
	a.reloadFail = prometheus.NewCounter(prometheus.CounterOpts{Name: "vigil_config_reload_failures_total", Help: "Config reloads rejected because the new file was invalid; the old config keeps running."})
	a.reg.MustRegister(a.reloadOK, a.reloadFail)
	ok := false
	defer func() {
		if !ok {
			a.close(context.Background())
		}
	}()

	if err := privateDataDir(cfg.Agent.DataDir, a.log); err != nil {
		return nil, fmt.Errorf("agent.data_dir: %w", err)
	}
	var sinks []reporting.NamedSink
	if cfg.Store.Embedded.On() {
		if o.roles.canary {
			if err := a.lockStore(cfg.Agent.DataDir, o.shard); err != nil {
				return nil, err
			}
		}
		opts := cfg.Store.Embedded.Options()
		opts.Log = a.log
		s, err := store.Open(cfg.Agent.DataDir, opts)
		if err != nil {
			return nil, fmt.Errorf("store.embedded: %w", err)
		}
		a.local = s
		a.hist = s
		sinks = append(sinks, reporting.NamedSink{Name: "embedded", Sink: s})
	}
	if cfg.Store.InfluxDB != nil {
		if err := a.lock(cfg.Agent.DataDir, "influx-outbox", "the InfluxDB outbox"); err != nil {
			return nil, err
		}
		s, err := influx.Open(*cfg.Store.InfluxDB, cfg.Agent.DataDir, influx.Options{Log: a.log})
		if err != nil {
			return nil, fmt.Errorf("store.influxdb: %w", err)
		}
		a.remote = s
		a.hist = s // InfluxDB holds every region: readers prefer it
		a.reg.MustRegister(s.Collectors()...)
		sinks = append(sinks, reporting.NamedSink{Name: "influxdb", Sink: s})
	}
	a.fan = reporting.NewFanout(a.log, 0, sinks...)
	a.reg.MustRegister(a.fan.Collectors()...)
	if a.local != nil {
		a.localRead = reporting.WithWaiting(a.local, a.fan, "embedded", "store.embedded")
		if a.remote == nil {
			a.hist = a.localRead
		}
	}
	// vigil_duplicate_canaries, for every role that reads verdicts (a
	// proxy reading canaries over HTTP has no store to register it);
	// after the InfluxDB store's collectors, which hold it too.
	if err := reporting.Duplicates.Register(a.reg); err != nil {
		return nil, err
	}

	if o.roles.canary {
		a.browser = scripts.NewBrowser(cfg.Agent.Browser.Scripts(a.log))
		pairs, err := cfg.Compile(canary.CompileOptions{Version: version, Browser: a.browser, Shard: o.shard})
		if err != nil {
			return nil, err
		}
		canary.WarnNoBrowser(a.log, a.browser, pairs)

		names := make([]string, 0, len(sinks))
		for _, s := range sinks {
			names = append(names, s.Name)
		}
		c, err := canary.New(&cfg.Config, pairs, canary.Options{Sink: a.fan, Registry: a.reg, Log: a.log,
			Redact: cfg.redactor.redact, Dropped: func() uint64 {
				var n uint64
				for _, name := range names {
					n += a.fan.Dropped(name)
				}
				return n
			}})
		if err != nil {
			return nil, err
		}
		a.can = c
		if a.remote != nil {
			// While InfluxDB reads fail, the status page and API show this
			// canary's own results (the embedded store, else its memory).
			var own reporting.Source = c
			if a.local != nil {
				own = a.localRead
			}
			a.fallback = &reporting.Fallback{Primary: a.remote, Own: own, Name: "InfluxDB", Log: a.log}
		}
		if a.local != nil {
			if vs, err := a.local.Verdicts(context.Background(), 0); err == nil {
				if n := c.Restore(vs); n > 0 {
					a.log.Info("restored verdicts from the embedded store", "pairs", n)
				}
			}
		}
	}

	if !o.roles.canary && a.hist != nil {
		r, err := newReader(cfg, a.log)
		if err != nil {
			return nil, err
		}
		a.reader = r
	}

	if o.roles.proxy {
		if cfg.Proxy == nil {
			return nil, errors.New("proxy: the config has no proxy section")
		}
		src := a.verdictSource()
		p, err := proxy.New(*cfg.Proxy, src, a.log, proxy.WithRegistry(a.reg), proxy.WithSignalSink(a.fan),
			proxy.WithStateDir(cfg.Agent.DataDir)) // drains survive restarts
		if err != nil {
			return nil, fmt.Errorf("proxy: %w", err)
		}
		a.prx = p
	}

	if o.roles.alerter && !cfg.Alerting.Disabled {
		if o.roles.canary && cfg.Store.InfluxDB != nil {
			// vigil run in each region: every one of them alerts on what
			// all regions write, so each alert is sent once per region.
			a.log.Warn("alerting: vigil run alerts on the shared InfluxDB store (store.influxdb): every vigil run doing so notifies on its own, so with several regions each alert is sent once per region; run one vigil alerter for the store and set alerting.disabled: true in the regions' files")
		}
		if a.hist == nil {
			return nil, errors.New("alerting: needs a store to read (store.embedded or store.influxdb)")
		}
		if err := a.lock(cfg.Agent.DataDir, "alerter", "the alerter's state (alerts.json)"); err != nil {
			return nil, err
		}
		// Delivery errors are logged and kept for the status page: the
		// config's ${NAME} values are hidden in them, as in /healthz,
		// with the config of the moment (a reload may bring new ones).
		al, err := alerting.New(cfg.Alerting, cfg.SLOs, a.hist, alerting.Options{Log: a.log, Registry: a.reg,
			StatePath: filepath.Join(cfg.Agent.DataDir, "alerts.json"),
			Redact:    func(s string) string { return a.current().redactor.redact(s) },
			// A canary in this process whose store refuses its writes
			// (a full disk) is named in dead-man alerts.
			WriteHealth: func() error {
				if a.fan == nil || a.can == nil {
					return nil
				}
				return a.fan.Health()
			}})
		if err != nil {
			return nil, fmt.Errorf("alerting: %w", err)
		}
		cfg.tellAlerter(al)
		a.alr = al
	}
	if a.can == nil {
		a.reloadGood = prometheus.NewGauge(prometheus.GaugeOpts{Name: "vigil_config_last_reload_successful",
			Help: "1 if the last config reload succeeded (or none was tried), 0 if it failed and the old config runs."})
		a.reloadTime = prometheus.NewGauge(prometheus.GaugeOpts{Name: "vigil_config_last_reload_success_timestamp_seconds",
			Help: "When the config was last loaded successfully, Unix seconds."})
		a.reloadGood.Set(1)
		a.reloadTime.SetToCurrentTime()
		a.reg.MustRegister(a.reloadGood, a.reloadTime)
	}
	a.handler = a.routes()
	ok = true
	return a, nil
}

// verdictSource picks where the proxy reads verdicts.
func (a *app) verdictSource() reporting.Source {
	switch {
	case len(a.opts.verdictsFrom) > 0:
		var srcs proxy.Sources // read one by one: a dead canary shows on /healthz
		for _, u := range a.opts.verdictsFrom {
			srcs = append(srcs, proxy.HTTPSource(u, &http.Client{Timeout: 5 * time.Second, Transport: a.opts.verdictsTransport}))
		}
		return srcs
	case a.remote != nil:
		return namedSource{a.remote, "store.influxdb"}
	case a.opts.proxyFromStore && a.local != nil:
		return namedSource{a.localRead, "store.embedded"}
	case a.can != nil:
		return namedSource{a.can, "the canary"}
	case a.local != nil:
		return namedSource{a.localRead, "store.embedded"}
	}
	return nil
}

// namedSource gives a verdict source the name the proxy's logs and /healthz
// show.
type namedSource struct {
	reporting.Source
	name string
}

func (n namedSource) String() string { return n.name }

// routes builds the agent listener's handler.
func (a *app) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", a.healthz)
	mux.HandleFunc("GET /readyz", a.readyz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(a.reg, promhttp.HandlerOpts{Registry: a.reg}))
	if a.can != nil {
		h := a.can.Handler(a.shown())
		mux.Handle("/api/v1/", jsonAPIErrors(a.fallback.Mark(h)))
		// agent.probe: blackbox_exporter's GET /probe (404 unless enabled).
		mux.Handle("GET /probe", a.can.ProbeHandler(version))
	} else if a.hist != nil {
		mux.HandleFunc("GET /api/v1/verdicts", a.verdictsFromStore)
		// The history the alerts' status_url and the status page link to,
		// served as a canary serves it.
		mux.Handle("GET /api/v1/checks/{name}/history", a.reader.Handler(a.hist))
	}
	if a.can == nil {
		// Without this, an unknown /api/v1/ path would reach the status
		// page's HTML 404 (or the plain text one).
		mux.Handle("/api/v1/", http.HandlerFunc(apiNotFound))
	}
	if a.prx != nil {
		admin := a.prx.AdminHandler()
		mux.Handle("/api/v1/origins", admin)
		mux.Handle("/api/v1/origins/", admin)
	}
	if a.alr != nil {
		mux.HandleFunc("GET /api/v1/alerts", a.alerts)
		mux.Handle("/api/v1/alerts/history", a.alr.HistoryHandler())
		sil := a.alr.SilencesHandler(func() string { return a.current().Agent.AdminToken })
		mux.Handle("/api/v1/silences", sil)
		mux.Handle("/api/v1/silences/", sil)
	}
	for p, h := range a.opts.extraRoutes {
		mux.Handle(p, h)
	}
	if a.opts.roles.page {
		if page := a.statusPage(); page != nil {
			mux.Handle("/", a.fallback.Mark(page))
			// The check pages' figures as JSON, beside the canary's
			// /api/v1/ endpoints.
			mux.Handle("GET /api/v1/slos", a.fallback.Mark(page))
		}
	}
	return a.hostCheck(mux)
}

// shown is what the status page and API read: the fallback if there is
// one, else hist.
func (a *app) shown() reporting.HistorySource {
	if a.fallback != nil {
		return a.fallback
	}
	return a.hist
}

// healthz is 200 "ok" or 503 with one reason per line.
func (a *app) healthz(w http.ResponseWriter, r *http.Request) {
	reasons, warnings := a.health()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if len(reasons) > 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, strings.Join(append(reasons, warnings...), "\n"))
		return
	}
	fmt.Fprintln(w, strings.Join(append([]string{"ok"}, warnings...), "\n"))
}

// readyz is for load balancers in front of the proxy (and orchestrators):
// 200 "ready" for as long as the process serves, with what /healthz would
// report listed as warnings, 503 once shutdown has begun. The proxy fails
// open, so a lost verdict source, a rejected reload or a failing InfluxDB
// must not take every proxy of a fleet out of its load balancer.
func (a *app) readyz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if a.stopping.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "shutting down")
		return
	}
	reasons, warnings := a.health()
	lines := []string{"ready"}
	for _, s := range reasons {
		lines = append(lines, "warning: "+s)
	}
	fmt.Fprintln(w, strings.Join(append(lines, warnings...), "\n"))
}

// health lists what makes /healthz 503 (reasons) and what it lists without
// failing (warnings).
func (a *app) health() (reasons, warnings []string) {
	a.mu.Lock()
	if a.reloadErr != nil {
		// One reason for the whole rejected file, however many errors it
		// has: "…: ERR1; ERR2" (a line each would read as separate problems).
		errs := strings.Split(a.cfg.redactor.redact(a.reloadErr.Error()), "\n")
		head := "config reload failed (old config still running): "
		if len(errs) > 1 {
			head = fmt.Sprintf("config reload failed (old config still running), %d errors: ", len(errs))
		}
		reasons = append(reasons, head+strings.Join(errs, "; "))
	}
	a.mu.Unlock()
	if a.can != nil {
		// The canary's own copy of the reload error is shown above; its
		// other problems are one joined error each.
		for _, e := range unjoin(a.can.Health()) {
			if !errors.Is(e, canary.ErrReloadFailed) {
				reasons = append(reasons, "canary: "+strings.ReplaceAll(e.Error(), "\n", "; "))
			}
		}
	}
	if a.fan != nil {
		// A sink refusing writes (a full disk, a read-only store): its
		// batches wait in memory for a retry.
		for _, e := range unjoin(a.fan.Health()) {
			reasons = append(reasons, a.current().redactor.redact(e.Error()))
		}
	}
	if a.remote != nil {
		if err := a.remote.Health(); err != nil {
			for _, e := range strings.Split(err.Error(), "\n") {
				reasons = append(reasons, "store.influxdb: "+a.current().redactor.redact(e))
			}
		}
	}
	if a.prx != nil {
		warns, err := a.prx.VerdictReport()
		if err != nil {
			for _, e := range strings.Split(err.Error(), "\n") {
				reasons = append(reasons, "proxy: "+a.current().redactor.redact(e))
			}
		}
		for _, w := range warns {
			warnings = append(warnings, "warning: proxy: "+a.current().redactor.redact(w))
		}
		// client_ca_file or client_crl_file rewritten into something that
		// does not load: the previous ones serve on, as after a failed
		// reload, which is a reason too.
		if err := a.prx.ClientTLSHealth(); err != nil {
			for _, e := range strings.Split(err.Error(), "\n") {
				reasons = append(reasons, "proxy: "+a.current().redactor.redact(e))
			}
		}
		// A served certificate that has expired (every client refuses it)
		// is a reason, one that expires within 14 days a warning.
		certWarns, expired := a.prx.CertReport()
		if expired != nil {
			for _, e := range strings.Split(expired.Error(), "\n") {
				reasons = append(reasons, "proxy: "+e)
			}
		}
		for _, w := range certWarns {
			warnings = append(warnings, "warning: proxy: "+w)
		}
	}
	if a.alr != nil {
		for rcv, e := range a.alr.DeliveryFailures() {
			reasons = append(reasons, fmt.Sprintf("alert receiver %s failing: %s", rcv, a.current().redactor.redact(e)))
		}
	}
	// One line each, whatever a source put in its text (a receiver's or
	// an InfluxDB's answer, a sink's error): a line of its own would read
	// as another reason, or as "ok", to what parses /healthz.
	for i, s := range reasons {
		reasons[i] = units.SingleLine(s)
	}
	for i, s := range warnings {
		warnings[i] = units.SingleLine(s)
	}
	return reasons, warnings
}

// unjoin lists the errors an errors.Join made (err itself otherwise, none
// for nil).
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func (a *app) verdictsFromStore(w http.ResponseWriter, r *http.Request) {
	filter := reporting.ParseVerdictFilter(r.URL.Query())
	if err := filter.Validate(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	maxAge, _ := time.ParseDuration(r.URL.Query().Get("max_age"))
	vs, err := a.hist.Verdicts(r.Context(), maxAge)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	vs = filter.Apply(vs)
	if vs == nil {
		vs = []reporting.Verdict{}
	}
	reporting.WriteJSONGzip(w, r, http.StatusOK, vs)
}

func (a *app) alerts(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, a.alr.Active())
}

// authorized checks the admin bearer token in constant time; with no token
// configured every write is refused.
func authorized(r *http.Request, token string) bool {
	return units.BearerMatches(r, token)
}

// Run starts every part and blocks until ctx is done, then shuts down in
// order: stop taking work, finish in-flight runs, flush sinks, close stores.
func (a *app) Run(parent context.Context) error {
	cfg := a.current()
	listen := cfg.Agent.Listen
	if a.opts.listen != "" {
		listen = a.opts.listen
	}
	ln := a.opts.listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", listen); err != nil {
			if errors.Is(err, syscall.EADDRINUSE) {
				return fmt.Errorf("agent.listen: %s already in use", listen)
			}
			return fmt.Errorf("agent.listen: %w", err)
		}
	}
	a.ln = ln
	// The agent API takes small requests only: a client that stalls its
	// headers or body is cut off rather than holding a goroutine.
	a.srv = &http.Server{Handler: a.handler, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second,
		IdleTimeout: 60 * time.Second, MaxHeaderBytes: 1 << 20}
	// The parts stop when parent is done, agent.shutdown_delay later: until
	// then everything keeps serving and /readyz answers 503.
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	defer cancel()
	go func() {
		select {
		case <-parent.Done():
		case <-ctx.Done():
			return
		}
		a.stopping.Store(true)
		if d := a.current().Agent.ShutdownDelay; d > 0 {
			a.log.Info("shutting down: /readyz answers 503; serving on for agent.shutdown_delay (a second signal ends it now)", "delay", d.String())
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
			case <-a.opts.hurry:
			}
		} else {
			// Runs in flight, requests through the proxy and deliveries
			// take their time to end: say why the process is still there.
			a.log.Info("shutting down: waiting for runs, proxied requests and deliveries in flight (a second signal ends it now)")
		}
		cancel()
	}()

	var wg sync.WaitGroup
	errc := make(chan error, 4)
	start := func(name string, f func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					a.log.Error("panic", "part", name, "panic", r)
					errc <- fmt.Errorf("%s: panic: %v", name, r)
					cancel()
				}
			}()
			if err := f(ctx); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, http.ErrServerClosed) {
				if !strings.HasPrefix(err.Error(), name) { // "proxy.listen: …" names its part already
					err = fmt.Errorf("%s: %w", name, err)
				}
				errc <- err
				cancel()
			}
		}()
	}
	start("http", func(ctx context.Context) error {
		go func() {
			<-ctx.Done()
			sctx, c := context.WithTimeout(context.Background(), 5*time.Second)
			defer c()
			_ = a.srv.Shutdown(sctx)
		}()
		return a.srv.Serve(ln)
	})
	if pl := cfg.StatusPage.Public.Listen; pl != "" && a.page != nil {
		pln, err := net.Listen("tcp", pl)
		if err != nil {
			cancel()
			errc <- publicListenError(pl, err)
			return a.stop(&wg, errc)
		}
		a.publicLn = pln
		addr := pln.Addr().String()
		a.publicAddr.Store(&addr)
		// A read-only page for anyone: small requests, short timeouts.
		psrv := &http.Server{Handler: a.page.PublicHandler(func() statuspage.PublicConfig { return a.current().StatusPage.Public }),
			ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second,
			IdleTimeout: 60 * time.Second, MaxHeaderBytes: 16 << 10}
		start("status_page.public", func(ctx context.Context) error {
			go func() {
				<-ctx.Done()
				sctx, c := context.WithTimeout(context.Background(), 5*time.Second)
				defer c()
				_ = psrv.Shutdown(sctx)
			}()
			return psrv.Serve(pln)
		})
	}
	// The proxy listens first: a port already in use fails the start before
	// the canary runs or "vigil started" is logged.
	if a.prx != nil {
		start("proxy", a.prx.Run)
		want := 1
		if cfg.Proxy != nil && cfg.Proxy.TLSListen != "" {
			want = 2
		}
		for deadline := time.Now().Add(10 * time.Second); len(a.prx.Addrs()) < want && time.Now().Before(deadline); {
			select {
			case <-ctx.Done(): // the proxy failed (or we are stopping)
				return a.stop(&wg, errc)
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	if a.can != nil {
		start("canary", a.can.Run)
		// Passive → active: the proxies' signals (through the store) run a
		// degrading origin's deep and synthetic checks out of cycle.
		if sigs, ok := a.hist.(reporting.SignalSource); ok {
			trig := cfg.Agent.Triggers
			start("triggers", func(ctx context.Context) error { return a.can.WatchSignals(ctx, sigs, trig) })
		}
	}
	if a.alr != nil {
		start("alerter", func(ctx context.Context) error { a.alr.Run(ctx); return nil })
	}
	start("reload", a.watchReload)
	a.startedAt = time.Now()
	var public []any
	if a.publicLn != nil {
		public = []any{"public_page", a.publicLn.Addr().String()}
	}
	a.log.Info("vigil started", append([]any{"version", version, "listen", ln.Addr().String(),
		"canary", a.can != nil, "proxy", a.prx != nil, "alerter", a.alr != nil,
		"region", cfg.Agent.Region, "vantage", cfg.Agent.Vantage}, public...)...)

	<-ctx.Done()
	return a.stop(&wg, errc)
}

// stop waits for Run's parts, closes the stores and returns the parts'
// errors.
func (a *app) stop(wg *sync.WaitGroup, errc chan error) error {
	wg.Wait()
	sctx, c := context.WithTimeout(context.Background(), 15*time.Second)
	defer c()
	a.close(sctx)
	close(errc)
	var errs []error
	for e := range errc {
		errs = append(errs, e)
	}
	return errors.Join(errs...)
}

// current returns the running config.
func (a *app) current() *File {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cfg
}

// publicListenError is the start error for status_page.public.listen.
func publicListenError(addr string, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("status_page.public.listen: %s already in use", addr)
	}
	return fmt.Errorf("status_page.public.listen: %w", err)
}

// PublicAddr is the public status page's address once Run listens, "" without one.
func (a *app) PublicAddr() string {
	if p := a.publicAddr.Load(); p != nil {
		return *p
	}
	return ""
}

// Addr is the agent listener's address once Run listens.
func (a *app) Addr() string {
	if a.opts.listener != nil {
		return a.opts.listener.Addr().String()
	}
	if a.ln == nil {
		return ""
	}
	return a.ln.Addr().String()
}

func (a *app) close(ctx context.Context) {
	if a.alr != nil {
		_ = a.alr.Close(ctx)
	}
	if a.fan != nil {
		_ = a.fan.Close(ctx)
	}
	if a.remote != nil {
		_ = a.remote.Close()
	}
	if a.local != nil {
		_ = a.local.Close()
	}
	if a.browser != nil {
		a.browser.Close()
	}
	for _, f := range a.locks {
		f.Close()
	}
	a.locks = nil
}

// lock holds <data_dir>/<part>.lock until close (see lockDataDir).
func (a *app) lock(dir, part, what string) error {
	f, err := lockDataDir(dir, part, what)
	if err != nil {
		return err
	}
	if f != nil {
		a.locks = append(a.locks, f)
	}
	return nil
}

// lockStore keeps two canaries from running the same pairs into one
// embedded store, which would write every verdict twice: a canary locks
// <data_dir>/store.lock exclusively, a sharded one (--shard i/n) locks it
// shared and store-shard-i-of-n.lock exclusively, so the shards of one
// check set may share the store but not with an unsharded canary or a
// second copy of a shard, nor shards of another count. A proxy may share the store (it writes only its
// own signals); vigil check and validate do not open it.
func (a *app) lockStore(dir string, shard canary.Shard) error {
	const what = "the store (vigil.db)"
	if shard.Of <= 1 {
		return a.lock(dir, "store", what)
	}
	f, err := lockDataDirShared(dir, "store", what)
	if err != nil {
		return err
	}
	if f != nil {
		a.locks = append(a.locks, f)
	}
	// Shards of another count (a re-shard half done) would run some pairs
	// twice: each shard also holds store-shards-of-n.lock shared, and
	// refuses to start while a lock for another n is held.
	f, err = lockDataDirShared(dir, fmt.Sprintf("store-shards-of-%d", shard.Of), what)
	if err != nil {
		return err
	}
	if f != nil {
		a.locks = append(a.locks, f)
	}
	others, _ := filepath.Glob(filepath.Join(dir, "store-shards-of-*.lock"))
	for _, o := range others {
		part := strings.TrimSuffix(filepath.Base(o), ".lock")
		if part != fmt.Sprintf("store-shards-of-%d", shard.Of) && partHeld(dir, part) {
			return fmt.Errorf("agent.data_dir: %s: the store (vigil.db) is in use by canaries sharded %s, not %d (run every shard of one check set with the same --shard i/n, or give each its own data_dir)",
				dir, strings.TrimPrefix(part, "store-shards-of-")+" ways", shard.Of)
		}
	}
	return a.lock(dir, fmt.Sprintf("store-shard-%d-of-%d", shard.Index+1, shard.Of),
		fmt.Sprintf("shard %d/%d of the store (vigil.db)", shard.Index+1, shard.Of))
}

// watchReload reloads the config on SIGHUP and when the file changes.
func (a *app) watchReload(ctx context.Context) error {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	every := a.opts.watch
	if every <= 0 {
		every = 2 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	// From the stamp taken when the running config was read: a change made
	// since (before this watcher started) still triggers a reload.
	last := a.current().stamp
	if last == "" {
		last = fileStamp(a.path)
	}
	// A file still being written is not applied: a writer that rewrites it
	// in place (scp, `cat > vigil.yaml`, an editor without an atomic
	// rename) first leaves a truncated file that may still parse, with
	// fewer origins, and its reload dropped their drains for good. A change
	// is reloaded once the file (stamp and content) is the same at two
	// polls in a row.
	pending, seen := "", false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-hup:
			a.reload()
			last, seen = fileStamp(a.path), false
		case <-t.C:
			s := fileStamp(a.path)
			if s == last {
				seen = false
				break
			}
			// Settled means the same content too: two writes within the
			// file system's mtime granularity may leave the same size.
			switch cs := s + "/" + contentHash(a.path); {
			case !seen || cs != pending:
				pending, seen = cs, true // changed since the last poll: let it settle
			default:
				last, seen = s, false
				a.reload()
			}
		}
	}
}

func fileStamp(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%d/%d", fi.ModTime().UnixNano(), fi.Size())
}

// contentHash is a hash of the file's content, "" when it does not read.
func contentHash(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return fmt.Sprintf("%x", sum[:12])
}

// reload parses and validates the file in full; an invalid file leaves the
// running config in place and is reported in the log, a metric and /healthz.
func (a *app) reload() {
	a.reloadMu.Lock() // SIGHUP, the file watcher and tests may reload at once
	defer a.reloadMu.Unlock()
	cfg, err := loadConfig(a.path, os.LookupEnv)
	if err == nil {
		err = a.apply(cfg)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		a.reloadFail.Inc()
		a.reloadErr = err
		red := a.cfg.redactor
		if cfg != nil {
			red = cfg.redactor
		}
		a.log.Error("config reload rejected; the previous config keeps running", "file", a.path, "error", red.redact(err.Error()))
		if a.can != nil {
			a.can.SetReloadError(err)
		}
		if a.reloadGood != nil {
			a.reloadGood.Set(0)
		}
		return
	}
	a.reloadOK.Inc()
	a.reloadErr = nil
	if a.can != nil {
		a.can.SetReloadError(nil)
	}
	if a.reloadGood != nil {
		a.reloadGood.Set(1)
		a.reloadTime.SetToCurrentTime()
	}
	a.log.Info("config reloaded", "file", a.path)
}

func (a *app) apply(cfg *File) (err error) {
	cfg.overrideListen(a.opts.listen)
	// --verdicts-from-ca is read again, and put in place only once the
	// rest of the reload has worked.
	var caTr *http.Transport
	ca, _ := a.opts.verdictsTransport.(*caTransport)
	if ca != nil {
		if caTr, err = ca.load(); err != nil {
			return fmt.Errorf("--verdicts-from-ca: %w", err)
		}
		defer func() {
			if err == nil {
				ca.swap(caTr)
			}
		}()
	}
	if cfg.Agent.Listen != a.cfg.Agent.Listen || cfg.Agent.DataDir != a.cfg.Agent.DataDir {
		a.log.Warn("agent.listen and agent.data_dir take effect on restart")
	}
	if cfg.StatusPage.Public.Listen != a.cfg.StatusPage.Public.Listen {
		a.log.Warn("status_page.public.listen takes effect on restart; the public page's title and checks are reloaded")
	}
	var pairs []canary.Pair
	if a.can != nil {
		var err error
		pairs, err = cfg.Compile(canary.CompileOptions{Version: version, Browser: a.browser, Shard: a.opts.shard})
		if err != nil {
			return err
		}
		canary.WarnNoBrowser(a.log, a.browser, pairs)
	}
	if a.prx == nil && a.opts.proxyAbsent && cfg.Proxy != nil {
		return errors.New("proxy: section added; restart to start the proxy")
	}
	if a.prx != nil {
		if cfg.Proxy == nil {
			return errors.New("proxy: section removed; restart to stop the proxy")
		}
		if err := a.prx.Reload(*cfg.Proxy); err != nil {
			return fmt.Errorf("proxy: %w", err)
		}
	}
	if a.alr != nil {
		if err := a.alr.Reload(cfg.Alerting, cfg.SLOs); err != nil {
			return fmt.Errorf("alerting: %w", err)
		}
		cfg.tellAlerter(a.alr)
	}
	if a.can != nil {
		a.can.SetRedact(cfg.redactor.redact)
		a.can.Reload(&cfg.Config, pairs)
	}
	if a.reader != nil {
		a.reader.Reload(readerConfig(cfg), nil)
	}
	cfg.path = a.path
	a.mu.Lock()
	a.cfg = cfg
	a.mu.Unlock()
	setLogRedactor(a.log, cfg.redactor)
	return nil
}

// pairNames are the file's check × target pairs, the only ones the alerter
// judges (alerting.Alerter.SetPairs); nil when the file has no checks
// section (a standalone alerter judges every pair in the store).
func (f *File) pairNames() map[string][]string {
	if !f.sections["checks"] {
		return nil
	}
	return f.Config.PairNames()
}

// tellAlerter gives al what it knows of the file's checks, pairs and
// proxy pools, at start and after every reload.
func (f *File) tellAlerter(al *alerting.Alerter) {
	al.SetChecks(f.checkNames())
	al.SetPairs(f.pairNames())
	al.SetDisabledPairs(f.disabledPairNames())
	al.SetPools(f.poolOrigins())
	al.SetOneRegion(f.oneRegionChecks())
}

// disabledPairNames are the check × target pairs of the file's checks
// with disabled: true, which a silence may name ahead of their re-enabling
// (alerting.Alerter.SetDisabledPairs); nil when the file has no checks
// section or none is disabled.
func (f *File) disabledPairNames() map[string][]string {
	if !f.sections["checks"] {
		return nil
	}
	var c canary.Config
	for _, ch := range f.Checks {
		if ch.Disabled {
			ch.Disabled = false
			c.Checks = append(c.Checks, ch)
		}
	}
	if len(c.Checks) == 0 {
		return nil
	}
	return c.PairNames()
}

// poolOrigins are the file's proxy pools and the names of their origins,
// which live_errors alerts name as check and target: a silence may name
// them before such an alert fires (alerting.Alerter.SetPools). The proxy
// may run in this process or elsewhere from the same file. nil when the
// file has no proxy section.
func (f *File) poolOrigins() map[string][]string {
	if f.Proxy == nil {
		return nil
	}
	out := make(map[string][]string, len(f.Proxy.Pools))
	for _, p := range f.Proxy.Pools {
		for _, o := range p.Origins {
			out[p.Name] = append(out[p.Name], o.Name())
		}
	}
	return out
}

// checkNames are the names of the file's enabled checks, which only can be
// dead-man silent (alerting.Alerter.SetChecks): a check with disabled: true
// does not run, and its silence is not news. nil when the file has no
// checks section (a standalone alerter judges every check in the store).
func (f *File) checkNames() []string {
	if !f.sections["checks"] {
		return nil
	}
	names := make([]string, 0, len(f.Checks))
	for _, c := range f.Checks {
		if !c.Disabled {
			names = append(names, c.Name)
		}
	}
	return names
}
