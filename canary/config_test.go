package canary

import (
	"testing"
	"time"
)

// A cron check runs at the time written: defaults.jitter (10% of a daily
// cron's derived 24 h interval is 2.4 h) does not apply to it, and its own
// jitter is capped at MaxCronJitter. Interval checks keep the default.
func TestCronJitter(t *testing.T) {
	c := Config{
		Targets: []TargetConfig{{Name: "a", URL: "http://127.0.0.1:1"}},
		Checks: []CheckConfig{
			{Name: "daily", Targets: []string{"a"}, Cron: "0 2 * * *"},
			{Name: "daily-jittered", Targets: []string{"a"}, Cron: "0 2 * * *", Jitter: pct(10)},
			{Name: "minutely-jittered", Targets: []string{"a"}, Cron: "* * * * *", Jitter: pct(50)},
			{Name: "interval", Targets: []string{"a"}, Interval: time.Hour},
		},
	}
	if err := c.ValidateAndSetDefaults(); err != nil {
		t.Fatal(err)
	}
	maxDelay := func(i int) time.Duration {
		ch := c.Checks[i]
		return time.Duration(ch.Jitter.Fraction() * float64(ch.Interval))
	}
	for i, want := range []time.Duration{0, time.Minute, 30 * time.Second, 6 * time.Minute} {
		if got := maxDelay(i); got.Round(time.Millisecond) != want {
			t.Errorf("%s: runs up to %s after their time, want %s", c.Checks[i].Name, got, want)
		}
	}
}
