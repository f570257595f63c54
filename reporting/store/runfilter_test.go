package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// TestHistoryRunFilter: a History read with a Runs filter and a Limit
// returns the newest runs of that outcome even when many passing runs came
// after them (the check page's failure and slow lists, the alerter's
// failure cause).
func TestHistoryRunFilter(t *testing.T) {
	st := open(t, t.TempDir(), store.Options{})
	ctx := context.Background()
	base := time.Now().Add(-30 * time.Minute).Truncate(time.Millisecond)
	v := func(i int, target string, ok bool, cause string) reporting.Verdict {
		return reporting.Verdict{Check: "home", Target: target, Region: "eu", State: reporting.StateHealthy, OK: ok, Cause: cause,
			Err: cause, TTFB: time.Duration(i+1) * time.Millisecond, At: base.Add(time.Duration(i) * time.Second)}
	}
	vs := []reporting.Verdict{
		v(0, "a", false, "connect_refused"), v(1, "a", false, reporting.CauseTTFB), v(2, "b", false, "status"),
		v(3, "b", false, reporting.CauseAgent), v(4, "a", false, reporting.CauseDuration),
	}
	for i := 5; i < 205; i++ {
		vs = append(vs, v(i, []string{"a", "b"}[i%2], true, ""))
	}
	if err := st.Publish(ctx, vs); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		q    reporting.HistoryQuery
		want []string
	}{
		{"failed", reporting.HistoryQuery{Runs: reporting.FailedRuns}, []string{"a:connect_refused", "a:ttfb", "b:status", "b:agent", "a:duration"}},
		{"down, newest 2", reporting.HistoryQuery{Runs: reporting.DownRuns, Limit: 2}, []string{"b:status", "b:agent"}},
		{"down of a target", reporting.HistoryQuery{Target: "a", Runs: reporting.DownRuns, Limit: 30}, []string{"a:connect_refused"}},
		{"slow", reporting.HistoryQuery{Runs: reporting.SlowRuns, Limit: 30}, []string{"a:ttfb", "a:duration"}},
		{"newest 1 of all runs is a pass", reporting.HistoryQuery{Limit: 1}, []string{"a:"}},
	} {
		q := c.q
		q.Check = "home"
		got, err := st.History(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var out []string
		for _, g := range got {
			out = append(out, g.Target+":"+g.Cause)
			if !c.q.Runs.Keep(g) {
				t.Errorf("%s: %+v is not a run of the filter", c.name, g)
			}
		}
		if !slices.Equal(out, c.want) {
			t.Errorf("%s: got %q, want %q", c.name, out, c.want)
		}
	}
}
