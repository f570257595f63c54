package influx_test

import (
	"context"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/influx"
	"github.com/vigil-synthetics/vigil/reporting/influx/influxtest"
)

// TestVerdictsDatedAheadAreRead: a verdict from a canary whose clock is 40s
// fast is returned by Verdicts(maxAge 60s) at once, as the HTTP and SQLite
// sources return it, so the proxy can weigh (and age) it from when it
// arrived; one dated beyond maxAge ahead is not. A range that ended at now
// hid it until its date came, then showed it as fresh after its canary had
// stopped.
func TestVerdictsDatedAheadAreRead(t *testing.T) {
	s := influxtest.Start(t)
	st := openStore(t, s.URL, s.NewDatabase(t), t.TempDir(), influx.Options{})
	ctx := context.Background()
	now := time.Now()
	v := func(check string, at time.Time) reporting.Verdict {
		return reporting.Verdict{Check: check, Target: "origin-a", Tier: reporting.TierShallow, Region: "eu-west", Vantage: "c1",
			State: reporting.StateUnhealthy, At: at, Expires: at.Add(15 * time.Second)}
	}
	if err := st.Publish(ctx, []reporting.Verdict{v("ahead", now.Add(40*time.Second)), v("far", now.Add(10*time.Minute)), v("now", now)}); err != nil {
		t.Fatal(err)
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	vs, err := st.Verdicts(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, v := range vs {
		got[v.Check] = true
	}
	if !got["ahead"] || !got["now"] || got["far"] {
		t.Errorf("Verdicts(60s) returned %v; want the verdicts dated now and 40s ahead, not the one 10m ahead", got)
	}
}
