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
	"strings"
	"sync"
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
		file, only, junit string
		asJSON            bool
		parallel          int
	)
	cmd := &cobra.Command{
		Use:   "check -c FILE [--check NAME] [--json] [--junit FILE]",
		Short: "Run every check once against each of its targets; exit 1 if any failed",
		Long: `Runs each check × target once, concurrently, and prints a table (or JSON Lines with
--json, one object per check × target). Exit status: 0 all passed, 1 any failed, 2 bad config.
Meant for deploy pipelines: gate a rollout on the same checks the canaries run.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := loadConfig(file, os.LookupEnv)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			// Logs would mix with the table: only warnings go to stderr.
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
			var browser *scripts.Browser
			if hasBrowserSteps(&f.Config) {
				browser = scripts.NewBrowser(scripts.BrowserConfig{ExecPath: f.Agent.Browser.ExecPath,
					MaxConcurrent: f.Agent.Browser.MaxConcurrent, Log: log})
				defer browser.Close()
			}
			if only != "" && !hasCheck(f, only) {
				return &exitError{code: 2, err: fmt.Errorf("%s: no checks to run: no check named %q", file, only)}
			}
			pairs, err := f.Compile(canary.CompileOptions{Version: version, Check: only, Browser: browser, IncludeDisabled: only != ""})
			if err != nil {
				return &exitError{code: 2, err: prefixLines(file, err)}
			}
			if len(pairs) == 0 {
				// Exit 0 here would pass a deploy gate that checked nothing.
				why := "the file defines no checks"
				if len(f.Checks) > 0 {
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
				err = writeTable(out, results, f.redactor)
			}
			if err != nil {
				return err
			}
			if junit != "" {
				if err := writeJUnit(junit, results, f.redactor); err != nil {
					return &exitError{code: 2, err: err}
				}
			}
			for _, r := range results {
				if !r.Result.OK {
					return &exitError{code: 1}
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "config", "c", "vigil.yaml", "config file")
	cmd.Flags().StringVar(&only, "check", "", "run only the check with this name")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON Lines: one object per check × target")
	cmd.Flags().StringVar(&junit, "junit", "", "also write a JUnit XML report to this file")
	cmd.Flags().IntVar(&parallel, "parallel", 16, "checks run at once")
	return cmd
}

func hasCheck(f *File, name string) bool {
	for _, c := range f.Checks {
		if c.Name == name {
			return true
		}
	}
	return false
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
	Result              checks.Result
}

// runOnce runs every pair once with at most parallel in flight, each under
// its check's timeout, and returns results in pair order.
func runOnce(ctx context.Context, pairs []canary.Pair, parallel int) []pairResult {
	if parallel < 1 {
		parallel = 1
	}
	out := make([]pairResult, len(pairs))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, p := range pairs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			rctx, cancel := context.WithTimeout(ctx, p.Check.Timeout)
			defer cancel()
			res := safeRun(rctx, p)
			out[i] = pairResult{Check: p.Check.Name, Target: p.Target.Name, Tier: p.Check.Tier, Result: res}
		}()
	}
	wg.Wait()
	return out
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
	Check      string                   `json:"check"`
	Target     string                   `json:"target"`
	Tier       string                   `json:"tier"`
	OK         bool                     `json:"ok"`
	Cause      string                   `json:"cause"`
	Error      string                   `json:"error,omitempty"`
	StatusCode int                      `json:"status_code"`
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
		Check: r.Check, Target: r.Target, Tier: r.Tier, OK: res.OK, Cause: string(res.Cause),
		Error: red.redact(res.Err), StatusCode: res.StatusCode, Proto: res.Proto,
		TTFBMs: ms(res.Phases.TTFB), DurationMs: ms(res.Phases.Total),
		Phases: phasesJSON{ms(res.Phases.DNS), ms(res.Phases.Connect), ms(res.Phases.TLS),
			ms(res.Phases.TTFB), ms(res.Phases.Transfer)},
		Assertions: redactAssertions(res.Assertions, red), Artifacts: res.Artifacts,
	}
	if j.Assertions == nil {
		j.Assertions = []checks.AssertionResult{}
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

func writeTable(w io.Writer, results []pairResult, red *redactor) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tTARGET\tRESULT\tCAUSE\tSTATUS\tTTFB\tTOTAL\tDETAIL")
	failed := 0
	for _, r := range results {
		res := r.Result
		verdict := "pass"
		if !res.OK {
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Check, r.Target, verdict, cause, status,
			fmtDur(res.Phases.TTFB), fmtDur(res.Phases.Total), detail)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%s, %d passed, %d failed\n", plural(len(results), "check"), len(results)-failed, failed)
	return err
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
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Body    string `xml:",chardata"`
}

// writeJUnit writes one testsuite per check and one testcase per target.
func writeJUnit(path string, results []pairResult, red *redactor) error {
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
		c.SystemOut = red.redact(strings.Join(lines, "\n"))
		if !r.Result.OK {
			c.Failure = &junitFailure{Message: oneLine(red.redact(r.Result.Err)), Type: string(r.Result.Cause),
				Body: red.redact(r.Result.Err)}
			s.Failures++
			doc.Failures++
		}
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
