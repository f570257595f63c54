package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/vigil-synthetics/vigil/canary"
	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/units"
	"github.com/vigil-synthetics/vigil/scripts"
)

func init() { commands = append(commands, newCheckCmd) }

func newCheckCmd() *cobra.Command {
	var (
		file, junit string
		only        []string
		onTargets   []string
		asJSON      bool
		failOnSlow  bool
		parallel    int
	)
	cmd := &cobra.Command{
		Use:   "check -c FILE [--check NAME]... [--target NAME]... [NAME]... [--json] [--junit FILE]",
		Short: "Run every check once against each of its targets; exit 1 if any failed",
		Long: `Runs each check × target once, concurrently, and prints a table (or JSON Lines with
--json, one object per check × target). --check may be repeated (or list names
separated by commas) to run only those checks; names given as arguments
(vigil check -c FILE api web) are --check names too. --target (repeatable, or
names separated by commas) runs only against those targets: re-check one origin
with vigil check -c FILE --target origin-b. Exit status: 0 all passed, 1 any
failed, 2 bad config or usage, 130 interrupted (SIGINT/SIGTERM: runs in flight are
cancelled and reported as interrupted, not as failures). A run that failed only its
latency objectives (expect.ttfb, expect.duration) is SLOW (degraded), not a failure,
as the canary judges it: exit 0 unless --fail-on-slow.
Meant for deploy pipelines: gate a rollout on the same checks the canaries run.`,
		// Check names, as --check takes them: "vigil check -c F api".
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, a := range args {
				// The file as validate takes it (vigil validate FILE) is
				// -c FILE here.
				if ext := filepath.Ext(a); !cmd.Flags().Changed("config") && (ext == ".yaml" || ext == ".yml") {
					return &exitError{code: 2, err: fmt.Errorf("%q: arguments are check names (as --check NAME); to read the config file %s, write -c %s", a, a, a)}
				}
				only = append(only, strings.Split(a, ",")...)
			}
			if parallel < 1 {
				return &exitError{code: 2, err: fmt.Errorf("--parallel: must be at least 1, got %d", parallel)}
			}
			if junit != "" {
				// A usage error before the checks run, not after.
				if err := checkWritable(junit); err != nil {
					return &exitError{code: 2, err: fmt.Errorf("--junit: %w", err)}
				}
			}
			// Warnings as validate prints them, and only those about what
			// a check run uses. A ${NAME} read only by keys a check run
			// does not use (agent.admin_token, receiver secrets, proxy
			// keys) need not be set: a CI gate is not given them.
			f, warns, err := loadConfigSkippingUnset(file, os.LookupEnv, os.Environ(), func(key string) bool { return underAny(key, checkIgnores) })
			warn := forCheck(file, warnTo(cmd.ErrOrStderr()))
			for _, w := range warns {
				warn(w.text)
			}
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			// Logs would mix with the table: only warnings go to stderr,
			// as the config's are printed.
			log := slog.New(newWarnHandler(cmd.ErrOrStderr()))
			var browser *scripts.Browser
			if hasBrowserSteps(&f.Config) {
				browser = scripts.NewBrowser(f.Agent.Browser.Scripts(log))
				defer browser.Close()
			}
			names, err := selectChecks(f, only)
			if err != nil {
				return &exitError{code: 2, err: fmt.Errorf("%s: no checks to run: %w", file, err)}
			}
			// A push check is judged by a running agent from its job's
			// pings: there is nothing to run once.
			for _, name := range names {
				if i := slices.IndexFunc(f.Checks, func(c canary.CheckConfig) bool { return c.Name == name }); i >= 0 && f.Checks[i].Push != nil {
					return &exitError{code: 2, err: fmt.Errorf("%s: check %q: %w (POST /api/v1/push/%s on the agent; its verdicts are in GET /api/v1/verdicts)",
						file, name, canary.ErrPushNotRunnable, name)}
				}
			}
			var pairs []canary.Pair
			var pushed []string
			if len(names) == 0 {
				pairs, err = f.Compile(canary.CompileOptions{Version: version, Browser: browser})
				pairs = slices.DeleteFunc(pairs, func(p canary.Pair) bool {
					if p.Check.Push != nil {
						pushed = append(pushed, p.Check.Name)
					}
					return p.Check.Push != nil
				})
				if len(pushed) > 0 {
					fmt.Fprintf(cmd.ErrOrStderr(), "%s: not run: push checks %s (a running agent judges them from their jobs' pings)\n", file, strings.Join(pushed, ", "))
				}
			}
			for _, name := range names {
				var ps []canary.Pair
				ps, err = f.Compile(canary.CompileOptions{Version: version, Check: name, Browser: browser, IncludeDisabled: true})
				if err != nil {
					break
				}
				pairs = append(pairs, ps...)
			}
			if err != nil {
				return &exitError{code: 2, err: prefixLines(file, err)}
			}
			if len(onTargets) > 0 {
				if pairs, err = onlyTargets(f, pairs, names, onTargets); err != nil {
					return &exitError{code: 2, err: fmt.Errorf("%s: no checks to run: %w", file, err)}
				}
			}
			if len(pairs) == 0 {
				// Exit 0 here would pass a deploy gate that checked nothing.
				why := "the file defines no checks"
				if len(pushed) > 0 {
					why = "it has only push checks, which a running agent judges from their jobs' pings"
				} else if len(f.Checks) > 0 {
					why = fmt.Sprintf("all %d checks are disabled (run one with --check NAME)", len(f.Checks))
					if len(f.Checks) == 1 {
						why = "its only check is disabled (run it with --check NAME)"
					}
				}
				return &exitError{code: 2, err: fmt.Errorf("%s: no checks to run: %s", file, why)}
			}
			results := runOnce(ctx, pairs, parallel)
			// Artifacts are named relative to the artifacts directory; the
			// CLI prints where the files are.
			for i := range results {
				for j, a := range results[i].Result.Artifacts {
					results[i].Result.Artifacts[j] = filepath.Join(scripts.ArtifactsDir(f.Agent.DataDir), a)
				}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				err = writeJSONLines(out, results, f.redactor)
			} else {
				err = writeTable(out, results, f.redactor, failOnSlow)
			}
			if err != nil {
				return err
			}
			if junit != "" {
				if err := writeJUnit(junit, results, f.redactor, failOnSlow); err != nil {
					return &exitError{code: 2, err: fmt.Errorf("--junit: %w", err)}
				}
			}
			if n := countInterrupted(results); n > 0 {
				return &exitError{code: 130, err: fmt.Errorf("interrupted: %d of %d runs did not finish", n, len(results))}
			}
			for _, r := range results {
				if o := r.outcome(); o == outcomeFail || (o == outcomeSlow && failOnSlow) {
					return &exitError{code: 1}
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "config", "c", "vigil.yaml", "config file")
	cmd.Flags().StringSliceVar(&only, "check", nil, "run only the check with this name (repeatable, or comma-separated names)")
	cmd.Flags().StringSliceVar(&onTargets, "target", nil, "run only against the target with this name (repeatable, or comma-separated names)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON Lines: one object per check × target")
	cmd.Flags().StringVar(&junit, "junit", "", "also write a JUnit XML report to this file")
	cmd.Flags().IntVar(&parallel, "parallel", 16, "checks run at once (at least 1)")
	cmd.Flags().BoolVar(&failOnSlow, "fail-on-slow", false, "exit 1 when a run failed only its latency objectives (expect.ttfb, expect.duration), as when one failed")
	return cmd
}

// selectChecks returns the names given with --check in file order, each
// once, or an error naming those the file does not define. No names: nil
// (every enabled check runs).
func selectChecks(f *File, only []string) ([]string, error) {
	all := make([]string, 0, len(f.Checks))
	for _, c := range f.Checks {
		all = append(all, c.Name)
	}
	return selectNames(only, all, "check", "checks")
}

// selectTargets returns the names given with --target in file order, each
// once, or an error naming those `targets:` does not define. No names: nil
// (every target of the selected checks).
func selectTargets(f *File, only []string) ([]string, error) {
	all := make([]string, 0, len(f.Targets))
	for _, t := range f.Targets {
		all = append(all, t.Name)
	}
	return selectNames(only, all, "target", "targets")
}

// onlyTargets keeps the pairs whose target --target names (targets). A
// name that is no target of the file (nor a check's url: target) is an
// error with the nearest name; so is a selection left with no pair, saying
// which checks run on the targets (disabled ones need --check). checks
// are the --check names (nil: every enabled check).
func onlyTargets(f *File, pairs []canary.Pair, checks, targets []string) ([]canary.Pair, error) {
	all := make([]string, 0, len(f.Targets))
	for _, t := range f.Targets {
		all = append(all, t.Name)
	}
	for _, p := range pairs {
		if !slices.Contains(all, p.Target.Name) {
			all = append(all, p.Target.Name)
		}
	}
	keep, err := selectNames(targets, all, "target", "targets")
	if err != nil {
		return nil, err
	}
	kept := slices.DeleteFunc(pairs, func(p canary.Pair) bool { return !slices.Contains(keep, p.Target.Name) })
	if len(kept) > 0 {
		return kept, nil
	}
	quoted := make([]string, len(keep))
	for i, t := range keep {
		quoted[i] = strconv.Quote(t)
	}
	var on, disabled []string
	for _, c := range f.Checks {
		if !slices.ContainsFunc(c.Targets, func(t string) bool { return slices.Contains(keep, t) }) {
			continue
		}
		if c.Disabled && len(checks) == 0 {
			disabled = append(disabled, c.Name)
		} else {
			on = append(on, c.Name)
		}
	}
	what := "no check to run targets " + strings.Join(quoted, ", ")
	switch {
	case len(checks) > 0 && len(on) > 0:
		return nil, fmt.Errorf("%s: --check %s runs elsewhere (checks that run on it: %s)", what, strings.Join(checks, ","), strings.Join(on, ", "))
	case len(checks) > 0:
		return nil, fmt.Errorf("%s: --check %s runs elsewhere, and no check of the file runs on it", what, strings.Join(checks, ","))
	case len(disabled) > 0:
		return nil, fmt.Errorf("%s: only disabled checks run on it (%s): name one with --check", what, strings.Join(disabled, ", "))
	}
	return nil, fmt.Errorf("%s: no check of the file runs on it", what)
}

// selectNames keeps the names of all that only lists, in all's order, each
// once; a listed name all lacks is an error naming it, with the nearest
// name (did you mean …?) or the first ten of all.
func selectNames(only, all []string, one, many string) ([]string, error) {
	if len(only) == 0 {
		return nil, nil
	}
	want := map[string]bool{}
	for _, n := range only {
		want[strings.TrimSpace(n)] = true
	}
	var names []string
	for _, n := range all {
		if want[n] {
			names = append(names, n)
			delete(want, n)
		}
	}
	if len(want) > 0 {
		var missing []string
		for _, n := range only {
			if n = strings.TrimSpace(n); want[n] {
				missing = append(missing, strconv.Quote(n))
				delete(want, n)
			}
		}
		what := "no " + one + " named "
		if len(missing) > 1 {
			what = "no " + many + " named "
		}
		hint := ""
		if len(missing) == 1 {
			name, _ := strconv.Unquote(missing[0])
			if near := nearestName(name, all); near != "" {
				hint = " (did you mean " + near + "?)"
			}
		}
		if hint == "" && len(all) > 0 {
			shown := all
			if len(shown) > 10 {
				shown = append(slices.Clone(shown[:10]), fmt.Sprintf("… %d more", len(all)-10))
			}
			hint = " (the file's " + many + ": " + strings.Join(shown, ", ") + ")"
		}
		return nil, errors.New(what + strings.Join(missing, ", ") + hint)
	}
	return names, nil
}

// prefixLines puts "file: " before every line of a (possibly joined) error.
func prefixLines(file string, err error) error {
	var lines []string
	for _, e := range units.Errors(err) {
		lines = append(lines, file+": "+e.Error())
	}
	return errors.New(strings.Join(lines, "\n"))
}

func hasBrowserSteps(c *canary.Config) bool {
	for i := range c.Checks {
		if c.Checks[i].Script != nil {
			return true
		}
	}
	return false
}

type pairResult struct {
	Check, Target, Tier string
	// URL is the URL an http check requests (httpURL), "" for other kinds.
	URL    string
	Result checks.Result
	// Interrupted is set when a signal cancelled the run before it ended,
	// or before it started (NotStarted). Its Result is not a verdict.
	Interrupted, NotStarted bool
}

// interruptGrace is how long runOnce waits, after ctx is cancelled, for
// runs in flight to return before it reports them as interrupted anyway
// (a browser step may not notice the cancellation at once).
const interruptGrace = 2 * time.Second

// runOnce runs every pair once with at most parallel in flight, each under
// its check's timeout, and returns results in pair order. When ctx is
// cancelled (SIGINT), no further run starts, runs in flight are cancelled,
// and runOnce returns within interruptGrace with those runs marked
// Interrupted.
func runOnce(ctx context.Context, pairs []canary.Pair, parallel int) []pairResult {
	parallel = max(parallel, 1)
	var mu sync.Mutex
	out := make([]pairResult, len(pairs))
	for i, p := range pairs {
		out[i] = pairResult{Check: p.Check.Name, Target: p.Target.Name, Tier: p.Check.Tier, URL: httpURL(p), Interrupted: true, NotStarted: true}
	}
	sem := make(chan struct{}, parallel)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		defer wg.Wait()
		for i, p := range pairs {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			if ctx.Err() != nil {
				return
			}
			mu.Lock()
			out[i].NotStarted = false
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				rctx, cancel := p.RunContext(ctx)
				defer cancel()
				res := safeRun(rctx, p)
				mu.Lock()
				out[i].Result, out[i].Interrupted = res, ctx.Err() != nil
				mu.Unlock()
			}()
		}
	}()
	select {
	case <-done:
	case <-ctx.Done():
		select {
		case <-done:
		case <-time.After(interruptGrace):
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(out)
}

// httpURL is the URL an http check's run requests, as the verdict's url
// shows it (canary.ProbedURL): http.url, else the target's URL with
// http.path joined, without userinfo or fragment and with query values as
// "…" (units.RedactURL). "" for a check of another kind: a script's
// steps carry their own.
func httpURL(p canary.Pair) string {
	if p.Check.Kind() != "http" {
		return ""
	}
	return canary.ProbedURL(&p)
}

// A run's outcome as vigil check reports it: the values of the canary's
// vigil_checks_total{result} (pass, slow, fail), and interrupted.
const (
	outcomePass        = "pass"
	outcomeSlow        = "slow"
	outcomeFail        = "fail"
	outcomeInterrupted = "interrupted"
)

// outcome classifies the run as the canary does (canary.Classify): one
// that failed only its latency objectives (cause ttfb or duration, no
// other assertion failed) is slow, the pair's verdict degraded, not
// unhealthy ("Slow is not down"). A run the agent could not make (cause
// agent, browser_unavailable) is a failure here: a deploy gate that could
// not check must not pass.
func (r pairResult) outcome() string {
	if r.Interrupted {
		return outcomeInterrupted
	}
	switch canary.Classify(r.Result) {
	case canary.Pass:
		return outcomePass
	case canary.Slow:
		return outcomeSlow
	}
	return outcomeFail
}

func countInterrupted(results []pairResult) int {
	n := 0
	for _, r := range results {
		if r.Interrupted {
			n++
		}
	}
	return n
}

// interruptedMsg is the detail shown for an interrupted run.
func interruptedMsg(r pairResult) string {
	if r.NotStarted {
		return "interrupted before it started"
	}
	return "interrupted: the run was cancelled by a signal before it ended"
}

func safeRun(ctx context.Context, p canary.Pair) (res checks.Result) {
	defer func() {
		if r := recover(); r != nil {
			res = checks.Result{Cause: checks.CauseInternal, Err: fmt.Sprintf("check panicked: %v", r)}
		}
	}()
	return p.Probe.Run(ctx, p.Target)
}

func ms(d time.Duration) float64 { return reporting.Ms(d) }

type checkJSON struct {
	Check  string `json:"check"`
	Target string `json:"target"`
	Tier   string `json:"tier"`
	OK     bool   `json:"ok"`
	// Result is the run's outcome: pass, slow (failed only its latency
	// objectives: the verdict's state degraded, the canary's
	// vigil_checks_total{result="slow"}), fail or interrupted.
	Result string `json:"result"`
	// Interrupted: a signal cancelled the run; ok is false but it is
	// not a failure, and cause and error are empty.
	Interrupted bool   `json:"interrupted,omitempty"`
	Cause       string `json:"cause"`
	Error       string `json:"error,omitempty"`
	StatusCode  int    `json:"status_code"`
	// URL is the URL an http check requested (no userinfo, query values
	// as "…"), after status_code as in a step; absent for other kinds.
	URL        string                   `json:"url,omitempty"`
	Proto      string                   `json:"proto,omitempty"`
	TTFBMs     float64                  `json:"ttfb_ms"`
	DurationMs float64                  `json:"duration_ms"`
	Phases     phasesJSON               `json:"phases"`
	Assertions []checks.AssertionResult `json:"assertions"`
	Steps      []stepJSON               `json:"steps,omitempty"`
	CertExpiry *time.Time               `json:"cert_expiry,omitempty"`
	Artifacts  []string                 `json:"artifacts,omitempty"`
}

type phasesJSON struct {
	DNS      float64 `json:"dns_ms"`
	Connect  float64 `json:"connect_ms"`
	TLS      float64 `json:"tls_ms"`
	TTFB     float64 `json:"ttfb_ms"`
	Transfer float64 `json:"transfer_ms"`
}

type stepJSON struct {
	Name       string                   `json:"name"`
	OK         bool                     `json:"ok"`
	Skipped    bool                     `json:"skipped,omitempty"`
	Cause      string                   `json:"cause,omitempty"`
	Error      string                   `json:"error,omitempty"`
	StatusCode int                      `json:"status_code,omitempty"`
	URL        string                   `json:"url,omitempty"`
	DurationMs float64                  `json:"duration_ms"`
	TTFBMs     float64                  `json:"ttfb_ms,omitempty"`
	Assertions []checks.AssertionResult `json:"assertions,omitempty"`
	Metrics    map[string]float64       `json:"metrics,omitempty"`
}

func toJSON(r pairResult, red *redactor) checkJSON {
	res := r.Result
	j := checkJSON{
		Check: r.Check, Target: r.Target, Tier: r.Tier, OK: res.OK, Result: r.outcome(), URL: red.redact(r.URL), Cause: string(res.Cause),
		Error: red.redact(res.Err), StatusCode: res.StatusCode, Proto: res.Proto,
		TTFBMs: ms(res.Phases.TTFB), DurationMs: ms(res.Phases.Total),
		Phases: phasesJSON{ms(res.Phases.DNS), ms(res.Phases.Connect), ms(res.Phases.TLS),
			ms(res.Phases.TTFB), ms(res.Phases.Transfer)},
		Assertions: redactAssertions(res.Assertions, red), Artifacts: res.Artifacts,
	}
	if j.Assertions == nil {
		j.Assertions = []checks.AssertionResult{}
	}
	if r.Interrupted {
		j.OK, j.Interrupted, j.Cause, j.Error = false, true, "", interruptedMsg(r)
	}
	if !res.CertExpiry.IsZero() {
		t := res.CertExpiry
		j.CertExpiry = &t
	}
	for _, s := range res.Steps {
		j.Steps = append(j.Steps, stepJSON{Name: s.Name, OK: s.OK, Skipped: s.Skipped, Cause: string(s.Cause),
			Error: red.redact(s.Err), StatusCode: s.StatusCode, URL: red.redact(s.URL), DurationMs: ms(s.Duration), TTFBMs: ms(s.TTFB),
			Assertions: redactAssertions(s.Assertions, red), Metrics: s.Metrics})
	}
	return j
}

// redactAssertions returns a copy of as with every name, got and want
// redacted (a name may quote a configured value, a got an echoed one).
func redactAssertions(as []checks.AssertionResult, red *redactor) []checks.AssertionResult {
	if as == nil {
		return nil
	}
	out := make([]checks.AssertionResult, len(as))
	for i, a := range as {
		a.Name, a.Got, a.Want = red.redact(a.Name), red.redact(a.Got), red.redact(a.Want)
		out[i] = a
	}
	return out
}

func writeJSONLines(w io.Writer, results []pairResult, red *redactor) error {
	enc := json.NewEncoder(w)
	for _, r := range results {
		if err := enc.Encode(toJSON(r, red)); err != nil {
			return err
		}
	}
	return nil
}

func writeTable(w io.Writer, results []pairResult, red *redactor, failOnSlow bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tTARGET\tRESULT\tCAUSE\tSTATUS\tTTFB\tTOTAL\tDETAIL")
	failed, slow, interrupted := 0, 0, 0
	for _, r := range results {
		res := r.Result
		verdict := "pass"
		switch r.outcome() {
		case outcomeInterrupted:
			verdict = "INTERRUPTED"
			interrupted++
		case outcomeSlow:
			verdict = "SLOW (degraded)"
			slow++
		case outcomeFail:
			verdict = "FAIL"
			failed++
		}
		status := "-"
		if res.StatusCode != 0 {
			status = fmt.Sprint(res.StatusCode)
		}
		cause := string(res.Cause)
		if cause == "" {
			cause = "-"
		}
		detail := ""
		if !res.OK {
			detail = oneLine(red.redact(res.Err)) // redact first: a cut secret no longer matches
		}
		if r.Interrupted {
			cause, detail = "-", interruptedMsg(r)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Check, r.Target, verdict, cause, status,
			fmtDur(res.Phases.TTFB), fmtDur(res.Phases.Total), detail)
		// A failure artifact (a browser run's screenshot) on a line of
		// its own under the run's detail, so it can be opened from there.
		for _, a := range res.Artifacts {
			what := "artifact"
			if strings.EqualFold(filepath.Ext(a), ".png") {
				what = "screenshot"
			}
			fmt.Fprintf(tw, "\t\t\t\t\t\t\t%s: %s\n", what, a)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	summary := fmt.Sprintf("\n%s, %d passed, %d failed", runsSummary(results), len(results)-failed-slow-interrupted, failed)
	if slow > 0 {
		summary = fmt.Sprintf("\n%s, %d passed, %d slow, %d failed", runsSummary(results), len(results)-failed-slow-interrupted, slow, failed)
		if failOnSlow {
			summary += " (slow counts as failed: --fail-on-slow)"
		} else {
			summary += " (slow is not down: exit 1 for it with --fail-on-slow)"
		}
	}
	if interrupted > 0 {
		summary += fmt.Sprintf(", %d interrupted", interrupted)
	}
	_, err := fmt.Fprintln(w, summary)
	return err
}

// runsSummary says what the table's rows count: runs, one per check ×
// target, and of how many checks ("12 runs (6 checks × their targets)",
// "3 runs (1 check × 3 targets)").
func runsSummary(results []pairResult) string {
	if len(results) == 0 {
		return "0 runs"
	}
	perCheck := map[string]int{}
	for _, r := range results {
		perCheck[r.Check]++
	}
	targets := ""
	for _, n := range perCheck {
		switch t := plural(n, "target"); {
		case targets == "":
			targets = t
		case targets != t:
			targets = "their targets"
		}
	}
	return fmt.Sprintf("%s (%s × %s)", plural(len(results), "run"), plural(len(perCheck), "check"), targets)
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}

func fmtDur(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	if d < time.Millisecond {
		return fmt.Sprintf("%.2fms", ms(d))
	}
	return fmt.Sprintf("%.1fms", ms(d))
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string `xml:"name,attr"`
	Tests    int    `xml:"tests,attr"`
	Failures int    `xml:"failures,attr"`
	// Time is the sum of its testcases' times, in seconds.
	Time  string      `xml:"time,attr"`
	Cases []junitCase `xml:"testcase"`

	total time.Duration
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

// junitSkipped marks an interrupted run: neither a pass nor a failure.
type junitSkipped struct {
	Message string `xml:"message,attr"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Body    string `xml:",chardata"`
}

// checkWritable reports whether path can be written, without changing
// it: an existing file is opened for writing (not truncated), else a
// temporary file is created and removed beside it.
func checkWritable(path string) error {
	if st, err := os.Stat(path); err == nil {
		if st.IsDir() {
			return fmt.Errorf("%s is a directory", path)
		}
		fh, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		return fh.Close()
	}
	dir := filepath.Dir(path)
	fh, err := os.CreateTemp(dir, ".vigil-junit-*")
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("open %s: directory %s does not exist", path, dir)
		}
		return fmt.Errorf("open %s: %w", path, errors.Unwrap(err))
	}
	fh.Close()
	return os.Remove(fh.Name())
}

// writeJUnit writes one testsuite per check and one testcase per target.
// A slow run (failed only its latency objectives) passes, as it does not
// change the exit status, with its system-out starting "SLOW (degraded): …";
// with failOnSlow it is a <failure type="slow">, as it makes vigil check
// exit 1.
func writeJUnit(path string, results []pairResult, red *redactor, failOnSlow bool) error {
	var doc junitSuites
	idx := map[string]int{}
	for _, r := range results {
		i, ok := idx[r.Check]
		if !ok {
			i = len(doc.Suites)
			idx[r.Check] = i
			doc.Suites = append(doc.Suites, junitSuite{Name: "vigil." + r.Check})
		}
		s := &doc.Suites[i]
		c := junitCase{Name: r.Target, Classname: "vigil." + r.Check,
			Time: fmt.Sprintf("%.3f", r.Result.Phases.Total.Seconds())}
		var lines []string
		for _, a := range r.Result.Assertions {
			mark := "ok"
			if !a.OK {
				mark = "FAILED"
			}
			lines = append(lines, fmt.Sprintf("%s %s: got %s, want %s", mark, a.Name, a.Got, a.Want))
		}
		switch o := r.outcome(); {
		case o == outcomeInterrupted:
			c.Skipped = &junitSkipped{Message: interruptedMsg(r)}
		case o == outcomeSlow && failOnSlow:
			c.Failure = &junitFailure{Message: "slow (degraded): " + oneLine(red.redact(r.Result.Err)), Type: outcomeSlow,
				Body: red.redact(r.Result.Err)}
			s.Failures++
			doc.Failures++
		case o == outcomeSlow:
			lines = append([]string{"SLOW (degraded): " + r.Result.Err + " (passes: slow is not down; --fail-on-slow makes it a failure)"}, lines...)
		case o == outcomeFail:
			c.Failure = &junitFailure{Message: oneLine(red.redact(r.Result.Err)), Type: string(r.Result.Cause),
				Body: red.redact(r.Result.Err)}
			s.Failures++
			doc.Failures++
		}
		c.SystemOut = red.redact(strings.Join(lines, "\n"))
		s.total += r.Result.Phases.Total
		s.Time = fmt.Sprintf("%.3f", s.total.Seconds())
		s.Tests++
		doc.Tests++
		s.Cases = append(s.Cases, c)
	}
	b, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte(xml.Header), append(b, '\n')...), 0o644)
}
