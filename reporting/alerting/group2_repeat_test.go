package alerting

import (
	"net/http"
	"slices"
	"testing"
	"time"
)

// TestGroupBySplitRedeliversFailedRepeat: Slack and PagerDuty fail a
// group's repeat_interval repeat (the webhook accepts it); a reload, or
// a restart, then splits the group. Once they recover, at the next retry
// (retry.redeliver_backoff), Slack gets each new group's notification and
// PagerDuty the triggers again, as they would without the split, rather
// than nothing until the next repeat; and the next repeat comes on
// schedule, repeat_interval after the failed one.
func TestGroupBySplitRedeliversFailedRepeat(t *testing.T) {
	for _, how := range []string{"reload", "restart"} {
		t.Run(how, func(t *testing.T) {
			r := newGBRig(t)
			repeat := func(c *Config) { c.RepeatInterval = 2 * time.Minute }
			a := r.startWith([]string{"severity"}, repeat)
			st := nChecks(2, U)
			r.step(a, st)
			r.step(a, st) // +30s: c01, c02 fire in group page
			if titles, _ := r.slackTexts(); len(titles) != 1 || len(r.pdEvents()) != 2 {
				t.Fatalf("c01 and c02 fired: slack %q, %d pagerduty events", titles, len(r.pdEvents()))
			}
			for range 7 {
				r.step(a, st) // to +135s
			}
			r.slack.failNext(1000, http.StatusServiceUnavailable)
			r.pd.failNext(1000, http.StatusServiceUnavailable)
			r.step(a, st) // +150s: the repeat; Slack and PagerDuty fail it
			if f := a.DeliveryFailures(); len(f) != 2 || len(r.hook.all()) != 2 {
				t.Fatalf("the repeat: delivery failures %v, %d webhook notifications (want 2)", f, len(r.hook.all()))
			}
			if how == "reload" {
				if err := a.Reload(r.configWith(nil, repeat), nil); err != nil {
					t.Fatal(err)
				}
			} else {
				a = r.startWith(nil, repeat)
			}
			r.slack.failNext(0, 0)
			r.pd.failNext(0, 0)
			slackBefore, pdBefore := len(r.slack.all()), len(r.pdEvents())
			r.step(a, st) // +165s: past retry.redeliver_backoff (10s)
			titles, _ := r.slackTexts()
			slices.Sort(titles[slackBefore:])
			want := []string{"[FIRING:1] VigilCheckDown c01 (page)", "[FIRING:1] VigilCheckDown c02 (page)"}
			if !slices.Equal(titles[slackBefore:], want) {
				t.Fatalf("slack after the %s split the group whose repeat it failed: %q, want %q", how, titles[slackBefore:], want)
			}
			got := r.pdActions(pdBefore)
			slices.Sort(got)
			if want := actions("trigger", "c01", "c02"); !slices.Equal(got, want) {
				t.Fatalf("pagerduty after the %s split the group whose repeat it failed: %q, want %q", how, got, want)
			}
			if f := a.DeliveryFailures(); len(f) != 0 {
				t.Fatalf("delivery failures after recovering: %v", f)
			}
			slackBefore, pdBefore = len(r.slack.all()), len(r.pdEvents())
			for range 6 {
				r.step(a, st) // to +255s
			}
			if n, m, h := len(r.slack.all())-slackBefore, len(r.pdEvents())-pdBefore, len(r.hook.all()); n+m != 0 || h != 2 {
				t.Fatalf("before the next repeat: %d slack messages, %d pagerduty events, %d webhook notifications (want 2)", n, m, h)
			}
			r.step(a, st) // +270s: repeat_interval after the failed repeat
			if n, m, h := len(r.slack.all())-slackBefore, len(r.pdEvents())-pdBefore, len(r.hook.all()); n != 2 || m != 2 || h != 4 {
				t.Fatalf("the next repeat: %d slack messages (want 2), %d pagerduty events (want 2), %d webhook "+
					"notifications (want 4)", n, m, h)
			}
		})
	}
}
