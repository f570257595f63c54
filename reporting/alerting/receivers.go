package alerting

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/vigil-synthetics/vigil/reporting/units"
)

var (
	_ Notifier = (*webhook)(nil)
	_ Notifier = (*slack)(nil)
	_ Notifier = (*pagerDuty)(nil)
	_ Notifier = (*alertmanager)(nil)
)

// userAgent identifies vigil to receivers.
const userAgent = "vigil-alerting/1"

// post sends body as JSON to ep. Transport errors, 429 and 5xx are
// retryable; other non-2xx answers are permanent. A redirect is not
// followed (the Alerter's client never follows one): a receiver that
// answers 3xx is misconfigured, and following it would hand the
// receiver's headers to another host; the error names where it pointed.
// Every error has ep's secrets hidden (see newEndpoint), the first 256
// bytes of the answer included.
func post(ctx context.Context, client *http.Client, ep endpoint, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.url, bytes.NewReader(body))
	if err != nil {
		return &PermanentError{ep.errorf(nil, "POST %s: bad request", ep.shown)}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)
	for k, v := range ep.headers {
		req.Header.Set(k, string(v))
	}
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL, which may hold secrets
		}
		return ep.errorf(err, "POST %s: %v", ep.shown, err)
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, snippetMax+1))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		where := "no usable Location"
		if loc, err := resp.Location(); err == nil {
			where = "redirected to " + loc.Host
			if loc.Host == "" {
				where = "redirected to " + units.RedactURL(loc.String())
			}
		}
		return &PermanentError{ep.errorf(nil, "POST %s: status %d: %s (alert deliveries do not follow redirects: "+
			"set the receiver's URL to where it should post)", ep.shown, resp.StatusCode, where)}
	}
	err = ep.errorf(nil, "POST %s: status %d: %s", ep.shown, resp.StatusCode, cutSnippet(snippet))
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
		return err
	}
	return &PermanentError{err}
}

// snippetMax is how much of a failed answer's body an error quotes.
const snippetMax = 256

// cutSnippet trims b and, when it is longer than snippetMax, cuts it
// there (on a UTF-8 boundary) and marks the cut with "…", so a secret the
// cut splits is hidden too (see checks.Redactor). The snippet is on one
// line: each run of control characters (newlines, CR, tabs, the rest of
// C0 and C1, DEL) and Unicode line and paragraph separators is one space,
// so a receiver's body cannot add lines to /healthz, which gives each
// reason a line of its own.
func cutSnippet(b []byte) string {
	if len(b) <= snippetMax {
		return units.SingleLine(string(b))
	}
	n := snippetMax
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return units.SingleLine(string(b[:n])) + "…"
}

// redactURL keeps scheme and host of a receiver URL. Stricter than
// units.RedactURL: Slack and similar webhooks carry their token in the path.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "<redacted>"
	}
	s := u.Scheme + "://" + u.Host
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" {
		s += "/…"
	}
	return s
}

// WebhookAlert is one alert in the generic webhook payload.
type WebhookAlert struct {
	Status      string            `json:"status"`
	Rule        string            `json:"rule"`
	AlertName   string            `json:"alertname"`
	Severity    string            `json:"severity"`
	SLO         string            `json:"slo,omitempty"`
	Check       string            `json:"check"`
	Target      string            `json:"target,omitempty"`
	Tier        string            `json:"tier,omitempty"`
	Region      string            `json:"region,omitempty"`
	Regions     []string          `json:"regions"`
	Cause       string            `json:"cause,omitempty"`
	Error       string            `json:"error,omitempty"`
	TTFBMs      float64           `json:"ttfb_ms,omitempty"`
	Value       float64           `json:"value,omitempty"`
	Windows     []string          `json:"windows,omitempty"`
	Summary     string            `json:"summary"`
	StatusURL   string            `json:"status_url,omitempty"`
	ArtifactURL string            `json:"artifact_url,omitempty"`
	RunbookURL  string            `json:"runbook_url,omitempty"`
	Silenced    string            `json:"silenced,omitempty"`
	HeldUntil   *time.Time        `json:"held_until,omitempty"`
	StartsAt    time.Time         `json:"starts_at"`
	Since       time.Time         `json:"since"`
	EndsAt      *time.Time        `json:"ends_at,omitempty"`
	Labels      map[string]string `json:"labels"`
	Fingerprint string            `json:"fingerprint"`
}

// WebhookPayload is the JSON body of the generic webhook.
type WebhookPayload struct {
	Version  string `json:"version"` // "1"
	GroupKey string `json:"group_key"`
	// GroupLabels are the group's alerting.group_by labels and values.
	GroupLabels   map[string]string `json:"group_labels"`
	Status        string            `json:"status"` // firing | resolved
	Rule          string            `json:"rule"`
	Check         string            `json:"check"`
	Severity      string            `json:"severity"`
	Title         string            `json:"title"`
	Text          string            `json:"text"`
	StatusPageURL string            `json:"status_page_url,omitempty"`
	At            time.Time         `json:"at"`
	Alerts        []WebhookAlert    `json:"alerts"` // firing first, then resolved
}

// roundValue rounds an alert's value for receivers: to 4 significant
// digits (a burn of 16.15, 0.9235 s, 4 days left for 3.9999999999999964),
// from 1000 up to a whole number (a dead-man silence of 172865 s). The
// summaries say the same, rounded their own way.
func roundValue(v float64) float64 {
	if math.Abs(v) >= 1000 {
		return math.Round(v)
	}
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 4, 64), 64)
	if err != nil {
		return v
	}
	return r
}

func webhookAlert(a Alert) WebhookAlert {
	w := WebhookAlert{Status: StatusFiring, Rule: a.Rule, AlertName: a.Name, Severity: a.Severity, SLO: a.SLO,
		Check: a.Check, Target: a.Target, Tier: a.Tier, Region: a.Region, Regions: a.Regions, Cause: a.Cause, Error: a.Err,
		TTFBMs: float64(a.TTFB) / float64(time.Millisecond), Value: roundValue(a.Value), Windows: a.Windows,
		Summary: a.Summary, StatusURL: a.StatusURL, ArtifactURL: a.ArtifactURL, RunbookURL: a.RunbookURL,
		Silenced: a.Silenced, StartsAt: a.StartsAt.UTC(), Since: a.Since.UTC(), Labels: a.Labels, Fingerprint: a.Fingerprint}
	if a.Since.IsZero() {
		// An alert restored from a state file written before alerts had a
		// Since: the firing time is the best known start.
		w.Since = w.StartsAt
	}
	if w.Regions == nil {
		w.Regions = []string{}
	}
	if !a.HeldUntil.IsZero() {
		h := a.HeldUntil.UTC()
		w.HeldUntil = &h
	}
	if a.Resolved() {
		w.Status = StatusResolved
		e := a.EndsAt.UTC()
		w.EndsAt = &e
	}
	return w
}

// NewWebhookPayload builds the generic webhook body for n.
func NewWebhookPayload(n Notification) WebhookPayload {
	p := WebhookPayload{Version: "1", GroupKey: n.GroupKey, GroupLabels: n.GroupLabels, Status: n.Status, Rule: n.Rule, Check: n.Check,
		Severity: n.Severity, Title: n.Title, Text: n.Text, StatusPageURL: n.StatusPageURL, At: n.At.UTC(),
		Alerts: []WebhookAlert{}}
	for _, a := range n.Firing {
		p.Alerts = append(p.Alerts, webhookAlert(a))
	}
	for _, a := range n.Resolved {
		p.Alerts = append(p.Alerts, webhookAlert(a))
	}
	return p
}

type webhook struct {
	cfg    WebhookConfig
	ep     endpoint
	client *http.Client
}

func newWebhook(cfg WebhookConfig, client *http.Client) *webhook {
	return &webhook{cfg: cfg, ep: newEndpoint(string(cfg.URL), true, cfg.Headers), client: client}
}

// Notify posts NewWebhookPayload(n) with the configured headers.
func (w *webhook) Notify(ctx context.Context, n Notification) error {
	body, err := json.Marshal(NewWebhookPayload(n))
	if err != nil {
		return &PermanentError{err}
	}
	return post(ctx, w.client, w.ep, body)
}

// slackMessage is a Slack incoming-webhook message with one attachment.
type slackMessage struct {
	Text        string            `json:"text"`
	Channel     string            `json:"channel,omitempty"`
	Attachments []slackAttachment `json:"attachments"`
}

type slackAttachment struct {
	Color     string `json:"color"`
	Title     string `json:"title"`
	TitleLink string `json:"title_link,omitempty"`
	Text      string `json:"text"`
	Fallback  string `json:"fallback"`
	Footer    string `json:"footer"`
	Ts        int64  `json:"ts"`
}

type slack struct {
	cfg    SlackConfig
	ep     endpoint
	client *http.Client
}

func newSlack(cfg SlackConfig, client *http.Client) *slack {
	return &slack{cfg: cfg, ep: newEndpoint(string(cfg.URL), true, nil), client: client}
}

// Notify posts one message with one attachment: red for page, yellow for
// other severities, green once resolved.
func (s *slack) Notify(ctx context.Context, n Notification) error {
	color := "good"
	if n.Status == StatusFiring {
		color = "danger"
		if n.Severity != SeverityPage {
			color = "warning"
		}
	}
	link := n.StatusPageURL
	if len(n.Firing) > 0 && n.Firing[0].StatusURL != "" && n.Check != "" {
		link = n.Firing[0].StatusURL
	}
	// Title and Text carry origin-derived strings (error messages, header
	// values): escaped, a "<!channel>" or "<https://x|label>" in them shows
	// as typed instead of pinging the channel or rendering a disguised link.
	title, text := slackEscape(n.Title), slackEscape(n.Text)
	m := slackMessage{Text: title, Channel: s.cfg.Channel, Attachments: []slackAttachment{{
		Color: color, Title: title, TitleLink: link, Text: text, Fallback: title,
		Footer: "vigil", Ts: n.At.Unix(),
	}}}
	body, err := json.Marshal(m)
	if err != nil {
		return &PermanentError{err}
	}
	return post(ctx, s.client, s.ep, body)
}

// slackEscape escapes the three characters Slack's message formatting
// gives meaning to (&, <, >), so text shows literally: no mentions, no
// links, no entities. A link of vigil's own would be built after escaping
// its label: "<" + url + "|" + slackEscape(label) + ">".
var slackEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace

// pdEvent is a PagerDuty Events API v2 event.
type pdEvent struct {
	RoutingKey  string     `json:"routing_key"`
	EventAction string     `json:"event_action"` // trigger | resolve
	DedupKey    string     `json:"dedup_key"`
	Payload     *pdPayload `json:"payload,omitempty"`
	Client      string     `json:"client,omitempty"`
	ClientURL   string     `json:"client_url,omitempty"`
	Links       []pdLink   `json:"links,omitempty"`
	Images      []pdImage  `json:"images,omitempty"`
}

type pdPayload struct {
	Summary       string         `json:"summary"`
	Source        string         `json:"source"`
	Severity      string         `json:"severity"` // critical | error | warning | info
	Timestamp     string         `json:"timestamp,omitempty"`
	Component     string         `json:"component,omitempty"`
	Group         string         `json:"group,omitempty"`
	Class         string         `json:"class,omitempty"`
	CustomDetails map[string]any `json:"custom_details,omitempty"`
}

type pdLink struct {
	Href string `json:"href"`
	Text string `json:"text"`
}

type pdImage struct {
	Src  string `json:"src"`
	Href string `json:"href,omitempty"`
	Alt  string `json:"alt,omitempty"`
}

// pdSeverity maps vigil severities onto PagerDuty's.
var pdSeverity = map[string]string{SeverityPage: "critical", SeverityTicket: "error", SeverityWarning: "warning"}

// PagerDutyDedupKey is the dedup_key of an alert's incident: "vigil/"
// and its identity (rule, check, then target, slo and region where it has
// them, then severity), e.g. vigil/down/healthz/origin-b/page: one incident
// per alert, so a second origin failing while the first one's incident is
// open (or acknowledged) opens its own and pages.
func PagerDutyDedupKey(a Alert) string {
	parts := []string{"vigil", a.Rule, a.Check}
	for _, p := range []string{a.Target, a.SLO, a.Region} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(append(parts, a.Severity), "/")
}

type pagerDuty struct {
	cfg    PagerDutyConfig
	ep     endpoint
	client *http.Client
}

func newPagerDuty(cfg PagerDutyConfig, client *http.Client) *pagerDuty {
	return &pagerDuty{cfg: cfg, ep: newEndpoint(cfg.URL, false, nil, string(cfg.RoutingKey)), client: client}
}

// Notify sends one event per alert of the notification, each with the
// alert's own dedup_key (PagerDutyDedupKey) and summary: a trigger for
// every firing alert the receiver has not accepted as firing yet (every
// firing alert on a repeat_interval repeat), a resolve for every alert
// resolved since the previous notification. So a group of many firing
// alerts that gains one sends one trigger, not one per alert: each
// re-trigger would add to an acknowledged incident's timeline. The group
// is vigil's batching only, as Alertmanager's per-alert grouping gives:
// each check × target × rule × severity is its own incident. A failed
// event fails the notification, which is sent again (triggers and
// resolves are idempotent per dedup_key).
func (p *pagerDuty) Notify(ctx context.Context, n Notification) error {
	var evs []pdEvent
	for _, a := range n.Firing {
		if !n.accepted[a.Fingerprint] {
			evs = append(evs, p.trigger(a, n))
		}
	}
	for _, a := range n.Resolved {
		evs = append(evs, pdEvent{RoutingKey: string(p.cfg.RoutingKey), EventAction: "resolve", DedupKey: PagerDutyDedupKey(a)})
	}
	for _, ev := range evs {
		body, err := json.Marshal(ev)
		if err != nil {
			return &PermanentError{err}
		}
		if err := post(ctx, p.client, p.ep, body); err != nil {
			return err
		}
	}
	return nil
}

// trigger is the trigger event of firing alert a.
func (p *pagerDuty) trigger(a Alert, n Notification) pdEvent {
	ev := pdEvent{RoutingKey: string(p.cfg.RoutingKey), EventAction: "trigger", DedupKey: PagerDutyDedupKey(a)}
	summary := a.Summary
	if summary == "" {
		summary = alertNames[a.Rule] + " " + series(a.Check, a.Target)
	}
	if len(summary) > 1024 {
		summary = summary[:1021] + "..."
	}
	details := map[string]any{"regions": a.Regions, "rule": a.Rule, "check": a.Check}
	for k, v := range map[string]string{"target": a.Target, "slo": a.SLO, "region": a.Region, "cause": a.Cause,
		"error": a.Err, "silenced_by": a.Silenced} {
		if v != "" {
			details[k] = v
		}
	}
	if !a.StartsAt.IsZero() {
		details["firing_since"] = a.StartsAt.UTC().Format(time.RFC3339)
	}
	ev.Payload = &pdPayload{Summary: summary, Source: "vigil", Severity: pdSeverity[a.Severity],
		Timestamp: n.At.UTC().Format(time.RFC3339), Component: a.Check, Group: a.Target, Class: a.Rule,
		CustomDetails: details}
	ev.Client, ev.ClientURL = "vigil", n.StatusPageURL
	if a.StatusURL != "" {
		ev.Links = append(ev.Links, pdLink{Href: a.StatusURL, Text: "status page"})
	}
	if a.RunbookURL != "" {
		ev.Links = append(ev.Links, pdLink{Href: a.RunbookURL, Text: "runbook"})
	}
	if a.ArtifactURL != "" {
		ev.Images = append(ev.Images, pdImage{Src: a.ArtifactURL, Href: a.ArtifactURL, Alt: "failure screenshot"})
	}
	return ev
}

// amAlert is one element of Alertmanager's POST /api/v2/alerts body.
type amAlert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL,omitempty"`
}

type alertmanager struct {
	cfg            AlertmanagerConfig
	ep             endpoint // URL/api/v2/alerts
	client         *http.Client
	resolveTimeout time.Duration
}

func newAlertmanager(cfg AlertmanagerConfig, client *http.Client, resolveTimeout time.Duration) *alertmanager {
	return &alertmanager{cfg: cfg, ep: newEndpoint(joinURL(cfg.URL, "api/v2/alerts"), false, nil), client: client,
		resolveTimeout: resolveTimeout}
}

// Notify posts the active alerts with endsAt = now + resolve_timeout (so
// Alertmanager resolves them if vigil stops re-sending) and the resolved
// ones with their end time.
func (m *alertmanager) Notify(ctx context.Context, n Notification) error {
	var out []amAlert
	for _, a := range n.Firing {
		out = append(out, amOf(a, n.At.Add(m.resolveTimeout)))
	}
	for _, a := range n.Resolved {
		out = append(out, amOf(a, a.EndsAt))
	}
	body, err := json.Marshal(out)
	if err != nil {
		return &PermanentError{err}
	}
	return post(ctx, m.client, m.ep, body)
}

func amOf(a Alert, endsAt time.Time) amAlert {
	ann := map[string]string{"summary": a.Summary, "regions": strings.Join(a.Regions, ",")}
	for k, v := range map[string]string{"cause": a.Cause, "error": a.Err, "runbook_url": a.RunbookURL,
		"status_url": a.StatusURL, "screenshot_url": a.ArtifactURL, "windows": strings.Join(a.Windows, ",")} {
		if v != "" {
			ann[k] = v
		}
	}
	if !a.Since.IsZero() {
		// startsAt stays the firing time (after `for`), as Prometheus
		// sends it; the condition's start is an annotation.
		ann["since"] = a.Since.UTC().Format(time.RFC3339)
	}
	if a.TTFB > 0 {
		ann["ttfb"] = fmtTTFB(a.TTFB)
	}
	if !a.HeldUntil.IsZero() {
		ann["held_until"] = a.HeldUntil.UTC().Format(time.RFC3339)
	}
	if a.Silenced != "" {
		// Still sent so Alertmanager does not resolve it (see notify); an
		// annotation, not a label, so its identity there does not change.
		ann["silenced_by"] = a.Silenced
	}
	if a.Value != 0 {
		ann["value"] = strconv.FormatFloat(roundValue(a.Value), 'f', -1, 64)
	}
	return amAlert{Labels: a.Labels, Annotations: ann, StartsAt: a.StartsAt.UTC(), EndsAt: endsAt.UTC(),
		GeneratorURL: a.StatusURL}
}
