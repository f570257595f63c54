package alerting

import (
	"testing"
	"time"
)

// FuzzMaintenance feeds arbitrary cron specs and durations: validation
// never panics, and a compiled window is active right at one of its starts.
func FuzzMaintenance(f *testing.F) {
	for _, s := range []string{"0 2 * * SUN", "*/5 * * * *", "CRON_TZ=Europe/Paris 30 1 1 * *", "61 * * * *", "@daily", "", "TZ=Nowhere/Zone 0 0 * * *"} {
		f.Add(s, int64(time.Hour))
	}
	f.Fuzz(func(t *testing.T, spec string, dur int64) {
		m := Maintenance{Name: "m", Cron: spec, Duration: time.Duration(dur)}
		if err := m.ValidateAndSetDefaults(); err != nil {
			if m.Active(t0, "any") && m.sched == nil {
				t.Fatal("active without a schedule")
			}
			return
		}
		start := m.sched.Next(t0)
		if start.IsZero() {
			return
		}
		if !m.Active(start, "x") {
			t.Fatalf("%q (%s): not active at its start %s", spec, m.Duration, start)
		}
		if m.Active(start.Add(-time.Nanosecond), "x") && m.Duration < time.Minute {
			t.Fatalf("%q (%s): active just before its start %s", spec, m.Duration, start)
		}
	})
}
