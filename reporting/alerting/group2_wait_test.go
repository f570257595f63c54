package alerting

import (
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// TestGroupByChangeKeepsGroupWait: c01 and c02 fire 15s apart, each in
// its own group (the default group_by) waiting out group_wait (60s). A
// reload, or a restart, to group_by [severity] moves both into one group
// that keeps the earliest wait: it is notified 60s after c01 fired, with
// both, not 60s after the reload (the wait started again).
func TestGroupByChangeKeepsGroupWait(t *testing.T) {
	for _, how := range []string{"reload", "restart"} {
		t.Run(how, func(t *testing.T) {
			r := newGBRig(t)
			r.noPagerD, r.noSlack = true, true
			wait := func(c *Config) { c.GroupWait = time.Minute }
			a := r.startWith(nil, wait)
			st := map[string]reporting.State{"c01": U}
			r.step(a, st) // +15s: c01 pending
			st["c02"] = U
			r.step(a, st) // +30s: c01 fires, waits until +90s
			r.step(a, st) // +45s: c02 fires, waits until +105s
			if how == "reload" {
				if err := a.Reload(r.configWith([]string{"severity"}, wait), nil); err != nil {
					t.Fatal(err)
				}
			} else {
				a = r.startWith([]string{"severity"}, wait)
			}
			r.step(a, st) // +60s
			r.step(a, st) // +75s
			if n := len(r.hook.all()); n != 0 {
				t.Fatalf("inside group_wait: %d notifications", n)
			}
			r.step(a, st) // +90s: c01's wait is over
			hooks := r.hook.webhooks(t)
			if len(hooks) != 1 || hooks[0].GroupKey != "page" || len(hooks[0].Alerts) != 2 {
				t.Fatalf("60s after c01 fired, after a %s to group_by [severity]: %d notifications, want one of "+
					"group page with c01 and c02 (the group keeps the earliest wait of the groups it was made of)", how, len(hooks))
			}
			for range 3 {
				r.step(a, st)
			}
			if n := len(r.hook.all()); n != 1 {
				t.Fatalf("then: %d notifications, want 1", n)
			}
		})
	}
}
