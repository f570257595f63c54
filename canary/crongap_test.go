package canary

import (
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

// TestCronMaxGapStable: the longest gap of a schedule is the same whatever
// day and hour it is computed on, also for one that fires often but only
// on some days (every minute on weekdays: the weekend is its longest gap).
func TestCronMaxGapStable(t *testing.T) {
	p := cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
	for spec, want := range map[string]time.Duration{
		"0 9 * * 1-5":   3 * 24 * time.Hour,
		"* * * * 1-5":   48*time.Hour + time.Minute,
		"*/5 * * * *":   5 * time.Minute,
		"0 3 * * *":     24 * time.Hour,
		"30 2 * * 0":    7 * 24 * time.Hour,
		"0 */6 * * 1":   6*24*time.Hour + 6*time.Hour,
		"15 10 * * 6,0": 6 * 24 * time.Hour,
	} {
		s, err := p.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		monday := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
		for h := 0; h < 7*24; h += 5 {
			if got := CronMaxGap(s, monday.Add(time.Duration(h)*time.Hour)); got != want {
				t.Errorf("%q from %s: %s, want %s", spec, monday.Add(time.Duration(h)*time.Hour).Format("Mon 15:04"), got, want)
				break
			}
		}
	}
}
