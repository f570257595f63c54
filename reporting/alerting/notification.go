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

// Notification is one message about one group (rule × check × severity):
// its firing alerts and the alerts resolved since the previous message.
type Notification struct {
	// GroupKey is "rule/check/severity" (PagerDuty gets one dedup_key per
	// alert instead: PagerDutyDedupKey).
	GroupKey string
	// Status is "firing" while any alert of the group fires, else "resolved".
	Status                string
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

func newNotification(key string, firing, resolved []Alert, now time.Time, cfg Config) Notification {
	parts := strings.SplitN(key, "/", 3)
	for len(parts) < 3 {
		parts = append(parts, "")
	}
	n := Notification{GroupKey: key, Status: StatusFiring, Rule: parts[0], Check: parts[1], Severity: parts[2],
		Firing: firing, Resolved: resolved, StatusPageURL: cfg.StatusPageURL, At: now}
	name := alertNames[n.Rule]
	if len(firing) == 0 {
		n.Status = StatusResolved
		n.Title = fmt.Sprintf("[RESOLVED] %s %s (%s)", name, n.Check, n.Severity)
	} else {
		n.Title = fmt.Sprintf("[FIRING:%d] %s %s (%s)", len(firing), name, n.Check, n.Severity)
	}
	var b bytes.Buffer
	if err := textTmpl.Execute(&b, n); err != nil {
		b.WriteString(n.Title)
	}
	n.Text = strings.TrimRight(b.String(), "\n")
	return n
}
