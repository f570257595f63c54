package statuspage

import (
	"github.com/vigil-synthetics/vigil/reporting/units"

	"math"
	"testing"
	"time"
)

func TestFormatting(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{fmtRuns(1), "1 run"},
		{fmtRuns(2), "2 runs"},
		{fmtPct(0.99999), "99.999%"},
		{fmtPct(0.999996), "99.999%"}, // never rounds up to 100
		{fmtPct(1), "100.000%"},
		{fmtPct(0.5), "50.000%"},
		{fmtPct(0), "0.000%"},
		{fmtMs(420 * time.Microsecond), "0.42 ms"},
		{fmtMs(4200 * time.Microsecond), "4.2 ms"},
		{fmtMs(123 * time.Millisecond), "123 ms"},
		{fmtMs(2410 * time.Millisecond), "2.41 s"},
		{fmtAgo(3 * time.Second), "3s"},
		{fmtAgo(250 * time.Second), "4m 10s"},
		{fmtAgo(2*time.Hour + 5*time.Minute), "2h 5m"},
		{fmtAgo(76 * time.Hour), "3d 4h"},
		{fmtAgo(-time.Second), "0s"},
		{fmtDur(30 * 24 * time.Hour), "30d"},
		{fmtDur(24 * time.Hour), "24h"},
		{fmtDur(5 * time.Minute), "5m"},
		{fmtDur(90 * time.Second), "1m30s"},
		{fmtDur(0), "—"},
		{fmtBudget(0.314), "31.4% left"},
		{fmtBudget(0), "exhausted"},
		{fmtBudget(-0.01), "exhausted"},
		{fmtBudget(-0.2), "exhausted (1.2× spent)"},
		{fmtBudget(-999), "exhausted (1000× spent)"},
		{fmtBudget(math.Inf(-1)), "exhausted"},
		{fmtBudget(math.NaN()), "unknown"},
		{sloCurrent(SLOStatus{Objective: "99.9%", Current: 0.99931}), "99.931%"},
		{sloCurrent(SLOStatus{Objective: "600ms", Current: 0.212}), "212 ms"},
		{sloCurrent(SLOStatus{Objective: "ratio", Current: 2.5}), "2.5"},
		{units.RedactURL("https://bob:hunter2@origin.example/x"), "https://origin.example/x"},
		{units.RedactURL("http://127.0.0.1:9201"), "http://127.0.0.1:9201"},
		{localPath("/check/asset?window=1h"), "/check/asset?window=1h"},
		{localPath("//evil.example/"), "/"},
		{localPath("/\\evil.example"), "/"},
		{localPath("https://evil.example/"), "/"},
		{localPath(""), "/"},
		{cleanArtifact("./shots/a.png"), "shots/a.png"},
		{cleanArtifact("/etc/x.png"), ""},
		{cleanArtifact("a/../../x.png"), ""},
		{cleanArtifact("a\\..\\x.png"), ""},
		{cleanArtifact("store.db"), ""},
		{cleanArtifact("SHOT.PNG"), "SHOT.PNG"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestNiceScaleAndPercentile(t *testing.T) {
	for _, c := range []struct {
		top   time.Duration
		max   time.Duration
		ticks int
	}{
		{428 * time.Millisecond, 600 * time.Millisecond, 4},
		{150 * time.Millisecond, 150 * time.Millisecond, 4},
		{170 * time.Millisecond, 200 * time.Millisecond, 5},
		{0, time.Millisecond, 5},
		{3 * time.Second, 3 * time.Second, 4},
	} {
		m, ticks := niceScale(c.top)
		if m != c.max || len(ticks) != c.ticks || m < c.top {
			t.Errorf("niceScale(%v) = %v with %d ticks, want %v with %d", c.top, m, len(ticks), c.max, c.ticks)
		}
	}
	ds := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if p := percentile(ds, 0.5); p != 5 {
		t.Errorf("p50 = %v", p)
	}
	if p := percentile(ds, 0.95); p != 10 {
		t.Errorf("p95 = %v", p)
	}
	if p := percentile(nil, 0.95); p != 0 {
		t.Errorf("p95 of nothing = %v", p)
	}
}
