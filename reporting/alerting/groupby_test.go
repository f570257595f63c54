package alerting

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-synthetics/vigil/reporting"
)

// gbRig runs Alerters with a given alerting.group_by over one store,
// clock and state file, with a webhook, a Slack and a PagerDuty receiver
// (real HTTP servers on 127.0.0.1).
type gbRig struct {
	t                 *testing.T
	clock             *fakeClock
	store             *memStore
	hook, slack, pd   *recorder
	path              string
	logs              *strings.Builder
	groupInterval     time.Duration
	extra             []Receiver
	maint             []Maintenance
	noSlack, noPagerD bool
}

func newGBRig(t *testing.T) *gbRig {
	r := &gbRig{t: t, clock: &fakeClock{t: t0}, hook: newRecorder(t), slack: newRecorder(t), pd: newRecorder(t),
		path: filepath.Join(t.TempDir(), "alerts.json"), logs: &strings.Builder{}}
	r.pd.okStatus = http.StatusAccepted
	r.store = &memStore{clock: r.clock.Now}
	return r
}

func (r *gbRig) config(groupBy []string) Config {
	cfg := Config{Down: DownRule{For: time.Second}, RepeatInterval: time.Hour, GroupBy: groupBy,
		GroupInterval: r.groupInterval, Maintenance: r.maint, Retry: RetryConfig{Backoff: 5 * time.Millisecond},
		Receivers: []Receiver{{Name: "ops", Webhook: &WebhookConfig{URL: Secret(r.hook.srv.URL + "/hook")}}}}
	if !r.noSlack {
		cfg.Receivers = append(cfg.Receivers, Receiver{Name: "chat", Slack: &SlackConfig{URL: Secret(r.slack.srv.URL + "/slack")}})
	}
	if !r.noPagerD {
		cfg.Receivers = append(cfg.Receivers, Receiver{Name: "pd",
			PagerDuty: &PagerDutyConfig{RoutingKey: "rk", URL: r.pd.srv.URL + "/v2/enqueue"}})
	}
	cfg.Receivers = append(cfg.Receivers, r.extra...)
	return cfg
}

// start is one process start with alerting.group_by set to groupBy (nil:
// the default).
func (r *gbRig) start(groupBy []string) *Alerter {
	r.t.Helper()
	a, err := New(r.config(groupBy), nil, r.store, Options{Now: r.clock.Now, Registry: prometheus.NewRegistry(),
		StatePath: r.path, Log: slog.New(slog.NewTextHandler(lockedWriter{r.logs}, nil))})
	if err != nil {
		r.t.Fatalf("New: %v", err)
	}
	r.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Close(ctx)
	})
	return a
}

// step advances the clock 15s, publishes one eu verdict per check (target
// origin-a) and evaluates with a, waiting for the deliveries.
func (r *gbRig) step(a *Alerter, checks map[string]reporting.State) {
	r.t.Helper()
	now := r.clock.Add(15 * time.Second)
	for c, st := range checks {
		r.store.add(verdict(c, "origin-a", "eu", now.Add(-time.Second), st, 15*time.Second))
	}
	if err := a.Evaluate(context.Background()); err != nil {
		r.t.Fatalf("Evaluate: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Flush(ctx); err != nil {
		r.t.Fatalf("Flush: %v", err)
	}
}

// slackTexts are the attachments' titles and texts of every Slack message.
func (r *gbRig) slackTexts() (titles, texts []string) {
	r.t.Helper()
	for _, rec := range r.slack.all() {
		var m slackMessage
		if err := json.Unmarshal(rec.Body, &m); err != nil {
			r.t.Fatalf("slack body: %v", err)
		}
		titles, texts = append(titles, m.Attachments[0].Title), append(texts, m.Attachments[0].Text)
	}
	return titles, texts
}

// pdEvents decodes every PagerDuty event received.
func (r *gbRig) pdEvents() []pdEvent {
	r.t.Helper()
	var out []pdEvent
	for _, rec := range r.pd.all() {
		var ev pdEvent
		if err := json.Unmarshal(rec.Body, &ev); err != nil {
			r.t.Fatalf("pagerduty body: %v", err)
		}
		out = append(out, ev)
	}
	return out
}

// nChecks maps checks c01..cNN to st.
func nChecks(n int, st reporting.State) map[string]reporting.State {
	m := map[string]reporting.State{}
	for i := 1; i <= n; i++ {
		m[fmt.Sprintf("c%02d", i)] = st
	}
	return m
}

// TestGroupBySeverityOneMessagePerIncident: with group_by [severity], 12
// checks going down together are one webhook notification and one Slack
// message listing them (PagerDuty still gets one incident per alert), and
// a check recovering is one more message saying which; the default
// group_by sends one per check.
func TestGroupBySeverityOneMessagePerIncident(t *testing.T) {
	r := newGBRig(t)
	a := r.start([]string{"severity"})
	st := nChecks(12, U)
	r.step(a, st) // pending
	r.step(a, st) // fires
	hooks := r.hook.webhooks(t)
	if len(hooks) != 1 {
		t.Fatalf("12 checks down with group_by [severity]: %d webhook notifications, want 1", len(hooks))
	}
	p := hooks[0]
	wantTitle := "[FIRING:12] VigilCheckDown on 12 checks: c01, c02, c03 +9 more (page)"
	if p.GroupKey != "page" || p.GroupLabels["severity"] != "page" || len(p.GroupLabels) != 1 || p.Title != wantTitle ||
		len(p.Alerts) != 12 || p.Check != "" || p.Rule != RuleDown || p.Severity != SeverityPage {
		t.Fatalf("notification: key %q labels %v title %q alerts %d rule %q check %q severity %q",
			p.GroupKey, p.GroupLabels, p.Title, len(p.Alerts), p.Rule, p.Check, p.Severity)
	}
	first, _, _ := strings.Cut(p.Text, "\n")
	if want := "12 firing: down on c01/origin-a, down on c02/origin-a, down on c03/origin-a, down on c04/origin-a, " +
		"down on c05/origin-a, down on c06/origin-a, down on c07/origin-a, down on c08/origin-a, down on c09/origin-a, " +
		"down on c10/origin-a, … 2 more"; first != want {
		t.Fatalf("first line:\n%s\nwant\n%s", first, want)
	}
	if n := strings.Count(p.Text, "🔥"); n != 12 {
		t.Fatalf("text has %d alert blocks, want 12:\n%s", n, p.Text)
	}
	titles, texts := r.slackTexts()
	if len(titles) != 1 || titles[0] != wantTitle || !strings.HasPrefix(texts[0], "12 firing: down on c01/origin-a") {
		t.Fatalf("slack: %d messages %q", len(titles), titles)
	}
	evs := r.pdEvents()
	keys := map[string]bool{}
	for _, ev := range evs {
		keys[ev.DedupKey] = ev.EventAction == "trigger"
	}
	if len(evs) != 12 || len(keys) != 12 || !keys["vigil/down/c07/origin-a/page"] {
		t.Fatalf("pagerduty: %d events, %d dedup keys; want one trigger per alert", len(evs), len(keys))
	}

	st["c07"] = H
	r.step(a, st)
	hooks = r.hook.webhooks(t)
	if len(hooks) != 2 {
		t.Fatalf("one check recovered: %d webhook notifications, want 2", len(hooks))
	}
	p = hooks[1]
	first, _, _ = strings.Cut(p.Text, "\n")
	if p.Status != StatusFiring || len(p.Alerts) != 12 || p.Alerts[11].Status != StatusResolved ||
		!strings.HasPrefix(p.Title, "[FIRING:11] ") || !strings.HasSuffix(first, "; 1 resolved: down on c07/origin-a") {
		t.Fatalf("after c07 recovered: status %s title %q first line %q", p.Status, p.Title, first)
	}
	if _, texts = r.slackTexts(); len(texts) != 2 || !strings.Contains(texts[1], "1 resolved: down on c07/origin-a") {
		t.Fatalf("slack after c07 recovered: %q", texts)
	}
	evs = r.pdEvents()
	if last := evs[len(evs)-1]; last.EventAction != "resolve" || last.DedupKey != "vigil/down/c07/origin-a/page" {
		t.Fatalf("pagerduty: last event %s %s, want the resolve of c07's incident", last.EventAction, last.DedupKey)
	}
	r.step(a, nChecks(12, H))
	hooks = r.hook.webhooks(t)
	if p = hooks[len(hooks)-1]; len(hooks) != 3 || p.Status != StatusResolved || len(p.Alerts) != 11 ||
		p.Title != "[RESOLVED] VigilCheckDown on 11 checks: c01, c02, c03 +8 more (page)" {
		t.Fatalf("all resolved: %d notifications, last %s %q with %d alerts", len(hooks), p.Status, p.Title, len(p.Alerts))
	}

	// The default: one notification per check.
	d := newGBRig(t)
	d.noPagerD = true
	da := d.start(nil)
	d.step(da, nChecks(12, U))
	d.step(da, nChecks(12, U))
	hooks = d.hook.webhooks(t)
	byKey := map[string]WebhookPayload{}
	for _, p := range hooks {
		byKey[p.GroupKey] = p
	}
	if p := byKey["down/c01/page"]; len(hooks) != 12 || len(byKey) != 12 || p.Title != "[FIRING:1] VigilCheckDown c01 (page)" ||
		strings.Contains(p.Text, "firing:") {
		t.Fatalf("default group_by: %d notifications, c01's %+v", len(hooks), p)
	}
}

// TestGroupByKeepsSilencesAndRouting: a group spanning checks leaves out
// the alerts a maintenance window silences, and with group_by [check,
// severity] a receiver filtered to some checks gets only their groups.
func TestGroupByKeepsSilencesAndRouting(t *testing.T) {
	r := newGBRig(t)
	r.noPagerD, r.noSlack = true, true
	team := newRecorder(t)
	r.extra = []Receiver{{Name: "team", Checks: []string{"c01"}, Webhook: &WebhookConfig{URL: Secret(team.srv.URL)}}}
	// Every day from 10:00 for 2h: t0 is 10:00.
	r.maint = []Maintenance{{Name: "c03-upgrade", Cron: "0 10 * * *", Duration: 2 * time.Hour, Checks: []string{"c03"}}}
	if _, err := New(r.config([]string{"severity"}), nil, r.store, Options{}); err == nil ||
		!strings.Contains(err.Error(), `group_by: [severity] leaves out check, which receivers[1].checks ("team") filters on`) {
		t.Fatalf("group_by without check and a checks filter: err %v", err)
	}
	a := r.start([]string{"check", "severity"})
	st := nChecks(3, U)
	r.step(a, st)
	r.step(a, st)
	hooks := r.hook.webhooks(t)
	if keys := []string{hooks[0].GroupKey, hooks[len(hooks)-1].GroupKey}; len(hooks) != 2 ||
		!(keys[0] == "c01/page" && keys[1] == "c02/page" || keys[0] == "c02/page" && keys[1] == "c01/page") {
		t.Fatalf("ops: %d notifications (want c01 and c02; c03 is silenced)", len(hooks))
	}
	if th := team.webhooks(t); len(th) != 1 || th[0].GroupKey != "c01/page" || th[0].Title != "[FIRING:1] VigilCheckDown c01 (page)" {
		t.Fatalf("team (checks [c01]): %d notifications", len(th))
	}

	// group_by [severity] without the checks filter: one notification,
	// without the silenced check.
	s := newGBRig(t)
	s.noPagerD, s.noSlack, s.maint = true, true, r.maint
	sa := s.start([]string{"severity"})
	s.step(sa, nChecks(3, U))
	s.step(sa, nChecks(3, U))
	hooks = s.hook.webhooks(t)
	if len(hooks) != 1 || len(hooks[0].Alerts) != 2 || hooks[0].Alerts[0].Check != "c01" || hooks[0].Alerts[1].Check != "c02" {
		t.Fatalf("group_by [severity] with c03 silenced: %+v", hooks)
	}
}

func TestGroupByValidation(t *testing.T) {
	for _, tc := range []struct {
		groupBy   []string
		receivers []Receiver
		want      string // "" valid
		canonical string
	}{
		{nil, nil, "", "rule,check,severity"},
		{[]string{"severity", "check", "alertname"}, nil, "", "rule,check,severity"},
		{[]string{"target", "severity", "region"}, nil, "", "target,region,severity"},
		{[]string{"severity", "env"}, nil, `group_by[1]: "env": not a group_by label (want rule, alertname, check, target, region, slo or severity)`, ""},
		{[]string{"tier", "severity"}, nil, `group_by[0]: "tier": not a group_by label`, ""},
		{[]string{"check"}, nil, "group_by: [check] lacks severity", ""},
		{[]string{"severity"}, []Receiver{{Name: "canaries", Rules: []string{"dead_man"}, Webhook: &WebhookConfig{URL: "https://x.example"}}},
			`group_by: [severity] leaves out rule, which receivers[0].rules ("canaries") filters on`, ""},
		{[]string{"severity"}, []Receiver{{Name: "deep", Tiers: []string{"deep"}, Webhook: &WebhookConfig{URL: "https://x.example"}}},
			`group_by: [severity] leaves out check, which receivers[0].tiers ("deep") filters on`, ""},
		// An Alertmanager is sent each alert on its own.
		{[]string{"severity"}, []Receiver{{Name: "am", Checks: []string{"api*"}, Alertmanager: &AlertmanagerConfig{URL: "https://am.example"}}},
			"", "severity"},
	} {
		cfg := Config{GroupBy: tc.groupBy, Receivers: tc.receivers}
		err := cfg.ValidateAndSetDefaults()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("group_by %v: %v", tc.groupBy, err)
		case tc.want == "" && strings.Join(cfg.GroupBy, ",") != tc.canonical:
			t.Errorf("group_by %v: set to %v, want %s", tc.groupBy, cfg.GroupBy, tc.canonical)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("group_by %v: err %v, want %q", tc.groupBy, err, tc.want)
		}
	}
	cfg := Config{GroupInterval: -time.Second}
	if err := cfg.ValidateAndSetDefaults(); err == nil || !strings.Contains(err.Error(), "group_interval: -1s") {
		t.Errorf("group_interval -1s: %v", err)
	}
}

// TestGroupInterval: a change of a notified group waits group_interval
// after its last notification, and the changes in between go out in one;
// repeats and the first notification do not wait for it.
func TestGroupInterval(t *testing.T) {
	r := newGBRig(t)
	r.noPagerD, r.noSlack = true, true
	r.groupInterval = time.Minute
	a := r.start([]string{"severity"})
	r.step(a, map[string]reporting.State{"c01": U})
	r.step(a, map[string]reporting.State{"c01": U}) // fires: notified at once (t+30s)
	if n := len(r.hook.all()); n != 1 {
		t.Fatalf("first notification: %d", n)
	}
	st := map[string]reporting.State{"c01": U, "c02": U, "c03": U}
	r.step(a, st) // t+45s: c02, c03 pending
	r.step(a, st) // t+60s: they fire, 30s after the last notification
	r.step(a, st) // t+75s
	if n := len(r.hook.all()); n != 1 {
		t.Fatalf("inside group_interval: %d notifications, want 1", n)
	}
	r.step(a, st) // t+90s: a minute after the last one
	hooks := r.hook.webhooks(t)
	if len(hooks) != 2 || len(hooks[1].Alerts) != 3 {
		t.Fatalf("after group_interval: %d notifications, last with %d alerts", len(hooks), len(hooks[len(hooks)-1].Alerts))
	}
	r.step(a, map[string]reporting.State{"c01": H, "c02": H, "c03": H}) // t+105s: resolved, 15s after
	if n := len(r.hook.all()); n != 2 {
		t.Fatalf("resolve inside group_interval: %d notifications, want 2", n)
	}
	for range 3 {
		r.step(a, map[string]reporting.State{"c01": H, "c02": H, "c03": H})
	}
	hooks = r.hook.webhooks(t)
	if len(hooks) != 3 || hooks[2].Status != StatusResolved || len(hooks[2].Alerts) != 3 {
		t.Fatalf("resolve after group_interval: %d notifications", len(hooks))
	}
}

// TestGroupByChangedAcrossRestart: a restart (or a reload) that changes
// group_by neither notifies the firing alerts again nor loses a resolve:
// the groups' state moves with the alerts, whether groups merge or split,
// and an alert that resolved while vigil was down still gets its resolve.
func TestGroupByChangedAcrossRestart(t *testing.T) {
	r := newGBRig(t)
	r.noPagerD = true
	a := r.start(nil)
	st := nChecks(4, U)
	r.step(a, st)
	r.step(a, st)
	if n := len(r.hook.all()); n != 4 {
		t.Fatalf("default group_by: %d notifications, want 4", n)
	}
	r.step(a, st)
	r.step(a, st) // nothing changes
	if n := len(r.hook.all()); n != 4 {
		t.Fatalf("no change: %d notifications", n)
	}

	// Restart with group_by [severity]: c04 recovered while vigil was
	// down.
	st["c04"] = H
	b := r.start([]string{"severity"})
	r.step(b, st)
	hooks := r.hook.webhooks(t)
	if len(hooks) != 5 {
		t.Fatalf("after the restart: %d notifications, want 5 (c04's resolve)", len(hooks))
	}
	p := hooks[4]
	if p.GroupKey != "page" || len(p.Alerts) != 4 || p.Alerts[3].Status != StatusResolved || p.Alerts[3].Check != "c04" {
		t.Fatalf("c04's resolve: %+v", p)
	}
	r.step(b, st)
	r.step(b, st)
	if n := len(r.hook.all()); n != 5 {
		t.Fatalf("firing alerts notified again after the restart: %d notifications, want 5", n)
	}
	if _, texts := r.slackTexts(); len(texts) != 5 {
		t.Fatalf("slack: %d messages, want 5", len(texts))
	}

	// Back to the default by a reload: the group splits per check, and
	// nothing is sent until one changes.
	if err := b.Reload(r.config(nil), nil); err != nil {
		t.Fatal(err)
	}
	r.step(b, st)
	r.step(b, st)
	if n := len(r.hook.all()); n != 5 {
		t.Fatalf("after the reload: %d notifications, want 5", n)
	}
	st["c02"] = H
	r.step(b, st)
	hooks = r.hook.webhooks(t)
	if len(hooks) != 6 || hooks[5].GroupKey != "down/c02/page" || hooks[5].Status != StatusResolved ||
		len(hooks[5].Alerts) != 1 {
		t.Fatalf("c02's resolve after the reload: %d notifications, last %+v", len(hooks), hooks[len(hooks)-1])
	}
	// And a restart to [severity] again, then everything recovers: one
	// resolved notification with the two left.
	c := r.start([]string{"severity"})
	r.step(c, st)
	if n := len(r.hook.all()); n != 6 {
		t.Fatalf("after the second restart: %d notifications, want 6", n)
	}
	r.step(c, nChecks(4, H))
	hooks = r.hook.webhooks(t)
	if p = hooks[len(hooks)-1]; len(hooks) != 7 || p.Status != StatusResolved || len(p.Alerts) != 2 {
		t.Fatalf("all recovered: %d notifications, last %s with %d alerts", len(hooks), p.Status, len(p.Alerts))
	}
	if !strings.Contains(r.logs.String(), "notification groups rebuilt for alerting.group_by") {
		t.Fatalf("no log line about the regrouping:\n%s", r.logs)
	}
}

// TestGroupByChangedKeepsUndelivered: a resolve the webhook had not
// accepted when vigil stopped is delivered after a restart that changed
// group_by, and the alert still firing is not paged again.
func TestGroupByChangedKeepsUndelivered(t *testing.T) {
	r := newGBRig(t)
	r.noPagerD, r.noSlack = true, true
	a := r.start(nil)
	st := nChecks(2, U)
	r.step(a, st)
	r.step(a, st)
	if n := len(r.hook.all()); n != 2 {
		t.Fatalf("%d notifications, want 2", n)
	}
	r.hook.failNext(5, http.StatusServiceUnavailable) // every attempt of the next delivery
	st["c02"] = H
	r.step(a, st)
	if n := len(r.hook.all()); n != 7 || len(a.DeliveryFailures()) != 1 {
		t.Fatalf("c02's resolve: %d requests, failures %v; want 2 + 5 failed attempts", n, a.DeliveryFailures())
	}
	b := r.start([]string{"severity"})
	r.step(b, st)
	hooks := r.hook.webhooks(t)
	if len(hooks) != 8 {
		t.Fatalf("after the restart: %d requests, want 8", len(hooks))
	}
	var resolved []string
	for _, x := range hooks[7].Alerts {
		if x.Status == StatusResolved {
			resolved = append(resolved, x.Check)
		}
	}
	if p := hooks[7]; p.GroupKey != "page" || len(resolved) != 1 || resolved[0] != "c02" {
		t.Fatalf("undelivered resolve after the restart: key %q resolved %v", p.GroupKey, resolved)
	}
	r.step(b, st)
	r.step(b, st)
	if n := len(r.hook.all()); n != 8 || len(b.DeliveryFailures()) != 0 {
		t.Fatalf("then: %d requests (want 8), failures %v", n, b.DeliveryFailures())
	}
}

// TestGroupByReloadKeepsUndelivered: a reload that changes group_by while
// a receiver has not accepted a resolve: the resolve goes out with the
// new group's redelivery, and the alert still firing is not paged again.
func TestGroupByReloadKeepsUndelivered(t *testing.T) {
	r := newGBRig(t)
	r.noPagerD, r.noSlack = true, true
	a := r.start(nil)
	st := nChecks(3, U)
	r.step(a, st)
	r.step(a, st)
	r.hook.failNext(5, http.StatusServiceUnavailable)
	st["c03"] = H
	r.step(a, st)
	if n := len(r.hook.all()); n != 8 {
		t.Fatalf("%d requests, want 3 + 5 failed attempts", n)
	}
	if err := a.Reload(r.config([]string{"severity"}), nil); err != nil {
		t.Fatal(err)
	}
	r.step(a, st) // 15s later: past retry.redeliver_backoff (10s)
	hooks := r.hook.webhooks(t)
	if len(hooks) != 9 {
		t.Fatalf("after the reload: %d requests, want 9", len(hooks))
	}
	p := hooks[8]
	var firing, resolved []string
	for _, x := range p.Alerts {
		if x.Status == StatusResolved {
			resolved = append(resolved, x.Check)
		} else {
			firing = append(firing, x.Check)
		}
	}
	if p.GroupKey != "page" || strings.Join(resolved, ",") != "c03" || strings.Join(firing, ",") != "c01,c02" {
		t.Fatalf("redelivery after the reload: key %q firing %v resolved %v", p.GroupKey, firing, resolved)
	}
	for range 3 {
		r.step(a, st)
	}
	if n := len(r.hook.all()); n != 9 || len(a.DeliveryFailures()) != 0 {
		t.Fatalf("then: %d requests (want 9), failures %v", n, a.DeliveryFailures())
	}
	st["c01"] = H
	r.step(a, st)
	hooks = r.hook.webhooks(t)
	if p = hooks[len(hooks)-1]; len(hooks) != 10 || len(p.Alerts) != 2 || p.Alerts[1].Check != "c01" ||
		p.Alerts[1].Status != StatusResolved {
		t.Fatalf("c01 recovered: %d requests, last %+v", len(hooks), p.Alerts)
	}
}

// TestGroupByLargeIncidentText: a group of 45 checks details its first 20
// alerts in the text (a Slack message stays readable) after the line
// counting them all; the webhook payload still carries every alert.
func TestGroupByLargeIncidentText(t *testing.T) {
	r := newGBRig(t)
	r.noPagerD = true
	a := r.start([]string{"severity"})
	r.step(a, nChecks(45, U))
	r.step(a, nChecks(45, U))
	hooks := r.hook.webhooks(t)
	if len(hooks) != 1 || len(hooks[0].Alerts) != 45 {
		t.Fatalf("%d notifications", len(hooks))
	}
	text := hooks[0].Text
	if n := strings.Count(text, "🔥"); n != 20 || !strings.HasPrefix(text, "45 firing: down on c01/origin-a") ||
		!strings.HasSuffix(text, "… 25 more alerts (every one is in the webhook payload's alerts and on the status page)") {
		t.Fatalf("text with %d alert blocks:\n%s", n, text)
	}
	_, texts := r.slackTexts()
	if len(texts) != 1 || len(texts[0]) > 12000 {
		t.Fatalf("slack: %d messages, %d bytes", len(texts), len(texts[0]))
	}
}
