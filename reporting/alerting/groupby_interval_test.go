package alerting

import (
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// TestGroupByChangeKeepsGroupInterval: group_by [severity] notifies c01
// (group page); a reload, or a restart, to the default group_by splits it
// per check. c02 then fires inside group_interval (2m) of that
// notification: its group (down/c02/page) is new, but it is timed as the
// change of the group it would have joined, at group_interval after
// page's notification, not group_wait (30s) after it fired.
func TestGroupByChangeKeepsGroupInterval(t *testing.T) {
	for _, how := range []string{"reload", "restart"} {
		t.Run(how, func(t *testing.T) {
			r := newGBRig(t)
			r.noPagerD, r.noSlack = true, true
			timing := func(c *Config) { c.GroupWait, c.GroupInterval = 30*time.Second, 2*time.Minute }
			a := r.startWith([]string{"severity"}, timing)
			st := map[string]reporting.State{"c01": U}
			r.step(a, st) // +15s: c01 pending
			r.step(a, st) // +30s: c01 fires, waits 30s
			r.step(a, st)
			r.step(a, st) // +60s: page notified with c01
			sent := r.clock.Now()
			if hooks := r.hook.webhooks(t); len(hooks) != 1 || hooks[0].GroupKey != "page" {
				t.Fatalf("c01: %d notifications, want one of group page", len(hooks))
			}
			if how == "reload" {
				if err := a.Reload(r.configWith(nil, timing), nil); err != nil {
					t.Fatal(err)
				}
			} else {
				a = r.startWith(nil, timing)
			}
			st["c02"] = U
			for r.clock.Now().Before(sent.Add(2*time.Minute - 15*time.Second)) {
				r.step(a, st) // c02 fires at +90s
				if n := len(r.hook.all()); n != 1 {
					t.Fatalf("%s after page's notification, after a %s to the default group_by: %d notifications, "+
						"want 1 (c02 waits out group_interval from page's notification, as it would have in page)",
						r.clock.Now().Sub(sent), how, n)
				}
			}
			r.step(a, st) // group_interval after page's notification
			hooks := r.hook.webhooks(t)
			if len(hooks) != 2 || hooks[1].GroupKey != "down/c02/page" || len(hooks[1].Alerts) != 1 {
				t.Fatalf("group_interval after page's notification: %d notifications, want c02's", len(hooks))
			}
			for range 3 {
				r.step(a, st)
			}
			if n := len(r.hook.all()); n != 2 {
				t.Fatalf("then: %d notifications, want 2", n)
			}
		})
	}
}
