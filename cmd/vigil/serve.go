package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/vigil-synthetics/vigil/canary"
	"github.com/vigil-synthetics/vigil/reporting/alerting"
	"github.com/vigil-synthetics/vigil/reporting/units"
)

func init() {
	commands = append(commands, newRunCmd, newCanaryCmd, newProxyCmd, newAlerterCmd)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}

// serveFlags are the flags every long-running role shares.
type serveFlags struct {
	file, logLevel, logFormat, shard, listen string
	proxyListen                              string
	verdictsFrom                             []string
	verdictsFromCA                           string            // --verdicts-from-ca
	verdictsTransport                        http.RoundTripper // built from verdictsFromCA
}

func (f *serveFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.file, "config", "c", "vigil.yaml", "config file")
	cmd.Flags().StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	cmd.Flags().StringVar(&f.logFormat, "log-format", "text", "text or json")
	cmd.Flags().StringVar(&f.listen, "listen", "", "override agent.listen")
}

func (f *serveFlags) logger() (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(f.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %q: want debug, info, warn or error", f.logLevel)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	// Every line passes through the config's redactor (see redactHandler),
	// set once the config is loaded.
	switch f.logFormat {
	case "text":
		return slog.New(newRedactHandler(slog.NewTextHandler(os.Stderr, opts))), nil
	case "json":
		// Durations as the text format writes them ("5s"), not as
		// integer nanoseconds (5000000000).
		opts.ReplaceAttr = func(_ []string, a slog.Attr) slog.Attr {
			if a.Value.Kind() == slog.KindDuration {
				a.Value = slog.StringValue(a.Value.Duration().String())
			}
			return a
		}
		return slog.New(newRedactHandler(slog.NewJSONHandler(os.Stderr, opts))), nil
	}
	return nil, fmt.Errorf("--log-format: %q: want text or json", f.logFormat)
}

func parseShard(s string) (canary.Shard, error) {
	if s == "" {
		return canary.Shard{}, nil
	}
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return canary.Shard{}, fmt.Errorf("--shard: %q: want i/n with 1 ≤ i ≤ n, e.g. 2/4", s)
	}
	return canary.Shard{Index: i - 1, Of: n}, nil
}

// addProxyListen adds --proxy-listen, for the commands that run the proxy.
func (f *serveFlags) addProxyListen(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.proxyListen, "proxy-listen", "", "override proxy.listen (as VIGIL_PROXY_LISTEN does)")
}

func serve(cmd *cobra.Command, f *serveFlags, r roles) error {
	log, err := f.logger()
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	slog.SetDefault(log)
	var cfg *File
	if cmd.Flags().Changed("proxy-listen") {
		// A first read only to see the file has a proxy section, quietly:
		// the read below, with the override, gives the warnings once.
		cfg, err = loadConfigWarn(f.file, os.LookupEnv, os.Environ(), func(string) {})
		switch {
		case err != nil:
			if _, err2 := loadConfig(f.file, os.LookupEnv); err2 != nil {
				err = err2 // with its warnings, as without the flag
			}
			return &exitError{code: 2, err: err}
		case f.proxyListen == "":
			return &exitError{code: 2, err: errors.New("--proxy-listen: empty: want host:port")}
		case cfg.Proxy == nil:
			return &exitError{code: 2, err: fmt.Errorf("--proxy-listen: %s has no proxy section", f.file)}
		}
		// Through the variable, so that every reload of the file keeps
		// it, and it is validated as the key is.
		os.Setenv("VIGIL_PROXY_LISTEN", f.proxyListen)
	}
	if cfg, err = loadConfig(f.file, os.LookupEnv); err != nil {
		return &exitError{code: 2, err: err}
	}
	setLogRedactor(log, cfg.redactor) // newApp and every reload set it again
	shard, err := parseShard(f.shard)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	noProxy := false
	if r.proxy && cfg.Proxy == nil {
		if !r.canary { // vigil proxy
			return &exitError{code: 2, err: fmt.Errorf("%s: no proxy section", f.file)}
		}
		r.proxy = false // vigil run without a proxy section: run the rest
		noProxy = true
	}
	hurry := make(chan struct{})
	a, err := newApp(cfg, appOptions{roles: r, shard: shard, verdictsFrom: f.verdictsFrom, verdictsTransport: f.verdictsTransport, listen: f.listen, log: log, hurry: hurry,
		proxyAbsent: noProxy})
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("vigil: %s", cfg.redactor.redact(err.Error()))}
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A second signal ends agent.shutdown_delay, and cancels the canary's
	// runs in flight without keeping their results (as a kill would), so
	// the stop does not wait for the longest check timeout.
	ended := make(chan struct{})
	defer close(ended)
	go func() {
		select {
		case <-ctx.Done():
		case <-ended:
			return
		}
		again := make(chan os.Signal, 1)
		signal.Notify(again, os.Interrupt, syscall.SIGTERM)
		defer signal.Stop(again)
		select {
		case <-again:
			close(hurry)
			if a.can != nil {
				log.Info("second signal: cancelling the checks in flight; their results are not kept")
				a.can.Abort()
			}
		case <-ended:
		}
	}()
	err = a.Run(ctx)
	// Only after a start: a port in use fails Run before "vigil started",
	// and its error is then the one line printed.
	if !a.startedAt.IsZero() {
		log.Info("vigil stopped", "uptime", time.Since(a.startedAt).Round(time.Second).String())
	}
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	return nil
}

func newRunCmd() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "run -c FILE",
		Short: "All in one: canary, proxy, alerter, embedded store and status page",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serve(cmd, &f, roles{canary: true, proxy: true, alerter: true, page: true})
		},
	}
	f.add(cmd)
	f.addProxyListen(cmd)
	cmd.Flags().StringVar(&f.shard, "shard", "", "run only the check × target pairs of shard i of n (e.g. 1/3)")
	return cmd
}

func newCanaryCmd() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "canary -c FILE",
		Short: "Run the checks and publish verdicts (with the status page and the verdict API)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serve(cmd, &f, roles{canary: true, page: true})
		},
	}
	f.add(cmd)
	cmd.Flags().StringVar(&f.shard, "shard", "", "run only the check × target pairs of shard i of n (e.g. 1/3)")
	return cmd
}

func newProxyCmd() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "proxy -c FILE [--verdicts-from URL]... [--verdicts-from-ca FILE]",
		Short: "Run the health-aware reverse proxy",
		Long: `Runs the proxy section of the config. Verdicts come from --verdicts-from canary URLs
(their GET /api/v1/verdicts), else from store.influxdb, else from the embedded store in
agent.data_dir. Without any, the proxy relies on passive detection alone.
Each --verdicts-from canary is read on its own: one that fails is listed on
/healthz as a warning (200) and in vigil_proxy_verdict_source_up; /healthz
answers 503 only when every source fails. A failing source's last verdicts
count until they are older than the pool's verdicts.max_age.
--verdicts-from-ca FILE trusts the CAs of a PEM file, instead of the
system pool, for https canaries (read at start and at every config
reload: SIGHUP or a change of the config file).
VIGIL_VERDICTS_FROM adds canary URLs, separated by spaces: a URL with a
password or a token stays out of the command line, which every user of
the host can read.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fromEnv := strings.Fields(os.Getenv(verdictsFromEnv))
			for _, u := range fromEnv {
				if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
					return &exitError{code: 2, err: fmt.Errorf("%s: %q: want http(s) URLs of canaries, separated by spaces", verdictsFromEnv, units.RedactURL(u))}
				}
			}
			for _, u := range f.verdictsFrom {
				if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
					return &exitError{code: 2, err: fmt.Errorf("--verdicts-from: %q: want an http(s) URL of a canary", units.RedactURL(u))}
				}
			}
			if log, err := f.logger(); err == nil { // else serve reports it
				for _, w := range verdictsFromWarnings(f.verdictsFrom, fromEnv) {
					log.Warn(w)
				}
			}
			f.verdictsFrom = append(f.verdictsFrom, fromEnv...)
			if f.verdictsFromCA != "" {
				if len(f.verdictsFrom) == 0 {
					return &exitError{code: 2, err: errors.New("--verdicts-from-ca: only with --verdicts-from")}
				}
				tr, err := newCATransport(f.verdictsFromCA)
				if err != nil {
					return &exitError{code: 2, err: fmt.Errorf("--verdicts-from-ca: %w", err)}
				}
				f.verdictsTransport = tr
			}
			return serve(cmd, &f, roles{proxy: true})
		},
	}
	f.add(cmd)
	f.addProxyListen(cmd)
	cmd.Flags().StringArrayVar(&f.verdictsFrom, "verdicts-from", nil, "canary base URL to read verdicts from (repeatable)")
	cmd.Flags().StringVar(&f.verdictsFromCA, "verdicts-from-ca", "", "PEM file of CAs that sign the --verdicts-from canaries' https certificates, trusted instead of the system pool")
	return cmd
}

func newAlerterCmd() *cobra.Command {
	var f serveFlags
	var promRules bool
	cmd := &cobra.Command{
		Use:   "alerter -c FILE [--prometheus-rules]",
		Short: "Evaluate alert rules over the store of all regions and notify receivers",
		Long: `Evaluates the alert rules (down, TTFB, burn rate, certificate, dead man) over the store of
all regions and notifies the receivers. With --prometheus-rules it prints Prometheus recording
and alerting rules for the same SLOs over vigil's metrics, for teams that alert from Prometheus.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if promRules {
				// Receivers' secrets may be unset: the rules hold none.
				cfg, err := loadRulesConfig(f.file, os.LookupEnv)
				if err != nil {
					return &exitError{code: 2, err: err}
				}
				b, err := alerting.PrometheusRules(cfg.Alerting, cfg.SLOs, cfg.deadManChecks(time.Now())...)
				if err != nil {
					return &exitError{code: 1, err: err}
				}
				_, err = cmd.OutOrStdout().Write(b)
				return err
			}
			return serve(cmd, &f, roles{alerter: true, page: true})
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&promRules, "prometheus-rules", false, "print Prometheus rules for the configured SLOs and exit")
	return cmd
}

// deadManChecks are the file's enabled checks, their intervals and tiers,
// for the generated Prometheus dead-man rules (one per interval, over those
// checks only) and the tier label of the burn-rate rules; nil without a
// checks section (one rule for every check). A check
// with disabled: true does not run, and its silence is not news. A cron
// check's interval is the longest gap between two of its runs after now
// (canary.CronMaxGap, as its Interval): a weekdays-only check gets 72h
// whichever day the rules are generated, and is not reported silent over
// a weekend.
func (f *File) deadManChecks(now time.Time) []alerting.CheckInterval {
	if !f.sections["checks"] {
		return nil
	}
	var out []alerting.CheckInterval
	for _, c := range f.Checks {
		interval := c.Interval
		if s := c.Schedule(); s != nil {
			interval = canary.CronMaxGap(s, now)
		}
		if !c.Disabled && interval > 0 {
			out = append(out, alerting.CheckInterval{Check: c.Name, Interval: interval, Tier: c.Tier,
				OneRegion: c.Push != nil && c.Push.Region != ""})
		}
	}
	return out
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
