package alerting

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// TestAlertLogRegionOnlyWhenSet: the `alert firing` and `alert resolved`
// log lines of a down alert carry no region attribute (it is per check ×
// target); a dead-man alert's name its silent region.
func TestAlertLogRegionOnlyWhenSet(t *testing.T) {
	var logs lockedBuffer
	clock := &fakeClock{t: t0}
	st := &memStore{clock: clock.Now}
	a, err := New(Config{Down: DownRule{For: time.Second}, DeadMan: DeadManRule{For: time.Second}}, nil, st, Options{Now: clock.Now,
		Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close(context.Background()) })
	step := func(states map[string]reporting.State) {
		t.Helper()
		now := clock.Add(15 * time.Second)
		for r, s := range states {
			st.add(verdict("asset", "origin-a", r, now.Add(-time.Second), s, 15*time.Second))
		}
		if err := a.Evaluate(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	step(map[string]reporting.State{"eu": U, "us": U})
	step(map[string]reporting.State{"eu": U, "us": U})
	step(map[string]reporting.State{"eu": H, "us": H})
	for range 6 { // us falls silent: 3 intervals, then dead_man.for
		step(map[string]reporting.State{"eu": H})
	}
	var down, dead []string
	for _, l := range strings.Split(logs.String(), "\n") {
		if !strings.Contains(l, `msg="alert firing"`) && !strings.Contains(l, `msg="alert resolved"`) {
			continue
		}
		switch {
		case strings.Contains(l, "rule=down"):
			down = append(down, l)
		case strings.Contains(l, "rule=dead_man"):
			dead = append(dead, l)
		}
	}
	if len(down) != 2 {
		t.Fatalf("down alert: %d log lines, want firing and resolved:\n%s", len(down), strings.Join(down, "\n"))
	}
	for _, l := range down {
		if strings.Contains(l, "region=") {
			t.Errorf("down alert log line has a region: %s", l)
		}
	}
	if len(dead) != 1 || !strings.Contains(dead[0], " region=us ") {
		t.Errorf("dead-man alert log lines %q, want one firing with region=us", dead)
	}
}
