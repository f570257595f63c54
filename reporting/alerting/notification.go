package alerting

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"text/template"
	"time"
)

// Notification statuses.
const (
	StatusFiring   = "firing"
	StatusResolved = "resolved"
)

// Notification is one message about one group (alerting.group_by; rule ×
// check × severity by default): its firing alerts and the alerts resolved
// since the previous message.
type Notification struct {
	// GroupKey is the group's values of the group_by labels joined by "/":
	// "rule/check/severity" by default (PagerDuty gets one dedup_key per
	// alert instead: PagerDutyDedupKey).
	GroupKey string
	// GroupLabels are the group's group_by labels and their values.
	GroupLabels map[string]string
	// Status is "firing" while any alert of the group fires, else "resolved".
	Status string
	// Rule, Check and Severity are those all its alerts share, "" where
	// they differ (a group_by without that label).
	Rule, Check, Severity string
	Firing, Resolved      []Alert
	// Title is a one-line summary, e.g. "[FIRING:2] VigilCheckDown asset (page)".
	Title string
	// Text is the templated body: one block per alert with the failing
	// regions, cause, TTFB and the status page, screenshot and runbook links.
	Text string
	// StatusPageURL is alerting.status_page_url.
	StatusPageURL string
	// At is the evaluation time that produced the notification.
	At time.Time
	// accepted are the fingerprints of the firing alerts the receiver it
	// is queued for accepted as firing before (Alerter.forReceiver); nil
	// when none is (a repeat, or a receiver not told of the group yet). A
	// PagerDuty receiver is not sent their trigger again.
	accepted map[string]bool
}

var textTmpl = template.Must(template.New("text").Funcs(template.FuncMap{
	"dur":  fmtTTFB,
	"join": strings.Join,
	"ts":   func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
}).Parse(`{{range .Firing}}🔥 {{.Summary}}
{{- if .TTFB}} · TTFB {{dur .TTFB}}{{end}}
   {{if and (not .Since.IsZero) (.StartsAt.After .Since)}}since {{ts .Since}}, firing since {{ts .StartsAt}}{{else}}since {{ts .StartsAt}}{{end}}{{if .Silenced}} (silenced by {{.Silenced}}){{end}}
{{- if .StatusURL}}
   status: {{.StatusURL}}{{end}}
{{- if .ArtifactURL}}
   screenshot: {{.ArtifactURL}}{{end}}
{{- if .RunbookURL}}
   runbook: {{.RunbookURL}}{{end}}
{{end}}{{range .Resolved}}✅ resolved: {{.Summary}} (fired {{ts .StartsAt}} – {{ts .EndsAt}})
{{end}}`))

// fmtTTFB shows a duration as Go does, rounded to the millisecond from
// 1ms up and to 0.1ms below (an origin on the same host answers in
// microseconds): "0.4ms", "<0.1ms", "12ms", "1.234s"; never "0s" for a
// non-zero duration.
func fmtTTFB(d time.Duration) string {
	switch {
	case d <= 0:
		return d.String()
	case d < 50*time.Microsecond:
		return "<0.1ms"
	case d.Round(100*time.Microsecond) < time.Millisecond:
		return strconv.FormatFloat(float64(d.Round(100*time.Microsecond))/float64(time.Millisecond), 'f', 1, 64) + "ms"
	}
	return d.Round(time.Millisecond).String()
}

// textBlocksMax bounds the alerts detailed in the text of a notification
// whose alerts span several checks or rules.
const textBlocksMax = 20

// newNotification builds the notification of group key (labels: its
// group_by labels) with its firing and resolved alerts. Rule, Check and
// Severity are those every alert shares ("" when they differ); the title
// names the check, or the checks, of its firing alerts (of its resolved
// ones when none fires), and a group of several checks or rules
// starts its text with one line listing its alerts (groupSummary).
func newNotification(key string, labels map[string]string, firing, resolved []Alert, now time.Time, cfg Config) Notification {
	all := append(append([]Alert(nil), firing...), resolved...)
	n := Notification{GroupKey: key, GroupLabels: labels, Status: StatusFiring,
		Rule:     common(all, func(x Alert) string { return x.Rule }),
		Check:    common(all, func(x Alert) string { return x.Check }),
		Severity: common(all, func(x Alert) string { return x.Severity }),
		Firing:   firing, Resolved: resolved, StatusPageURL: cfg.StatusPageURL, At: now}
	if len(all) == 0 {
		l := keyLabels(key)
		n.Rule, n.Check, n.Severity = l["rule"], l["check"], l["severity"]
	}
	subject := alertNames[n.Rule] + " " + n.Check
	if n.Rule == "" || n.Check == "" {
		// The title counts what fires, like its [FIRING:N]; a
		// notification of resolves only names those.
		shown := firing
		if len(shown) == 0 {
			shown = resolved
		}
		names := distinct(shown, func(x Alert) string { return x.Name })
		checks := distinct(shown, func(x Alert) string { return x.Check })
		subject = listNames(names, 2)
		if len(checks) == 1 {
			subject += " " + checks[0]
		} else {
			subject += fmt.Sprintf(" on %d checks: %s", len(checks), listNames(checks, 3))
		}
	}
	sev := n.Severity
	if sev == "" {
		sev = strings.Join(distinct(all, func(x Alert) string { return x.Severity }), ", ")
	}
	if len(firing) == 0 {
		n.Status = StatusResolved
		n.Title = fmt.Sprintf("[RESOLVED] %s (%s)", subject, sev)
	} else {
		n.Title = fmt.Sprintf("[FIRING:%d] %s (%s)", len(firing), subject, sev)
	}
	var b bytes.Buffer
	body, more := n, 0
	if line := groupSummary(firing, resolved); line != "" {
		b.WriteString(line + "\n")
		// A group of many checks (a large incident) details its first
		// alerts only, so a Slack message stays readable (and within
		// Slack's size limit); the first line named them all by count.
		if len(firing) > textBlocksMax {
			body.Firing, more = firing[:textBlocksMax], len(firing)-textBlocksMax+len(resolved)
			body.Resolved = nil
		} else if len(firing)+len(resolved) > textBlocksMax {
			body.Resolved, more = resolved[:textBlocksMax-len(firing)], len(firing)+len(resolved)-textBlocksMax
		}
	}
	if err := textTmpl.Execute(&b, body); err != nil {
		b.WriteString(n.Title)
	}
	if more > 0 {
		fmt.Fprintf(&b, "… %d more alerts (every one is in the webhook payload's alerts and on the status page)\n", more)
	}
	n.Text = strings.TrimRight(b.String(), "\n")
	return n
}
