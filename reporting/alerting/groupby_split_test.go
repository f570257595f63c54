package alerting

import (
	"net/http"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/reporting"
)

// TestGroupByReloadSplitSendsOnlyUnaccepted: a reload that splits a group
// while a receiver is failing sends it, once it recovers, only the group
// of the alert it did not accept: the alerts it accepted before it failed
// are not notified again, and a receiver that accepted everything is sent
// nothing.
func TestGroupByReloadSplitSendsOnlyUnaccepted(t *testing.T) {
	r := newGBRig(t)
	r.noPagerD = true
	a := r.start([]string{"severity"})
	st := map[string]reporting.State{"c01": U, "c02": U}
	r.step(a, st)
	r.step(a, st) // c01, c02 fire: one notification each to the webhook and Slack
	if titles, _ := r.slackTexts(); len(titles) != 1 || !strings.HasPrefix(titles[0], "[FIRING:2] ") {
		t.Fatalf("slack: %q, want one [FIRING:2]", titles)
	}
	r.slack.failNext(1000, http.StatusInternalServerError) // Slack is down from now on
	st["c03"] = U
	r.step(a, st)
	r.step(a, st) // c03 fires: the webhook accepts [FIRING:3], Slack does not
	if n := len(r.hook.all()); n != 2 {
		t.Fatalf("webhook: %d notifications, want 2", n)
	}
	if len(a.DeliveryFailures()) != 1 {
		t.Fatalf("delivery failures %v, want Slack's", a.DeliveryFailures())
	}
	if err := a.Reload(r.config([]string{"rule", "check", "severity"}), nil); err != nil {
		t.Fatal(err)
	}
	r.slack.failNext(0, 0) // Slack is back
	before := len(r.slack.all())
	for range 3 {
		r.step(a, st) // 15s apart: past retry.redeliver_backoff
	}
	titles, _ := r.slackTexts()
	titles = titles[before:]
	if len(titles) != 1 || titles[0] != "[FIRING:1] VigilCheckDown c03 (page)" {
		t.Fatalf("slack after the reload split the group: %d messages %q, want only c03's "+
			"(c01 and c02 were accepted before Slack failed)", len(titles), titles)
	}
	if n := len(r.hook.all()); n != 2 {
		t.Fatalf("webhook after the reload: %d notifications, want 2 (it accepted every alert)", n)
	}
	if f := a.DeliveryFailures(); len(f) != 0 {
		t.Fatalf("delivery failures after Slack recovered: %v", f)
	}

	// c01 recovering is one resolve, to each receiver, in c01's group.
	st["c01"] = H
	r.step(a, st)
	hooks := r.hook.webhooks(t)
	if p := hooks[len(hooks)-1]; len(hooks) != 3 || p.GroupKey != "down/c01/page" || p.Status != StatusResolved {
		t.Fatalf("c01's resolve: %d webhook notifications, last %q %s", len(hooks), p.GroupKey, p.Status)
	}
	if titles, _ = r.slackTexts(); len(titles) != before+2 || titles[len(titles)-1] != "[RESOLVED] VigilCheckDown c01 (page)" {
		t.Fatalf("slack: %q", titles[before:])
	}
}

// TestGroupByRestartSplitSendsOnlyUnaccepted: the same across a restart
// that changes group_by: what the state file kept of a failing receiver
// is sent, at the first evaluation, only for the alert it did not accept.
func TestGroupByRestartSplitSendsOnlyUnaccepted(t *testing.T) {
	r := newGBRig(t)
	r.noPagerD = true
	a := r.start([]string{"severity"})
	st := map[string]reporting.State{"c01": U, "c02": U}
	r.step(a, st)
	r.step(a, st)
	r.slack.failNext(1000, http.StatusInternalServerError)
	st["c03"] = U
	r.step(a, st)
	r.step(a, st) // Slack does not accept [FIRING:3]
	if titles, _ := r.slackTexts(); len(titles) < 2 || len(a.DeliveryFailures()) != 1 {
		t.Fatalf("slack: %q, failures %v", titles, a.DeliveryFailures())
	}
	r.slack.failNext(0, 0)
	before := len(r.slack.all())
	b := r.start([]string{"rule", "check", "severity"})
	r.step(b, st)
	r.step(b, st)
	titles, _ := r.slackTexts()
	if titles = titles[before:]; len(titles) != 1 || titles[0] != "[FIRING:1] VigilCheckDown c03 (page)" {
		t.Fatalf("slack after a restart split the group: %d messages %q, want only c03's", len(titles), titles)
	}
	if n := len(r.hook.all()); n != 2 {
		t.Fatalf("webhook after the restart: %d notifications, want 2", n)
	}
}
