package proxy

import (
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// The "verdicts expired" line says which limit ended a silent region's
// verdicts: the pool's max_age, or the verdict's own expires when that came
// first. Was: max_age=10s even when the verdict's expires had ended it.
func TestVerdictClearLogNamesLimit(t *testing.T) {
	const maxAge = 10 * time.Second
	t0 := time.Now().Truncate(time.Second)
	down := func(expires time.Duration) []reporting.Verdict {
		return []reporting.Verdict{{Check: "home", Target: "o0", Region: "us", State: reporting.StateUnhealthy,
			Cause: "status", At: t0, Expires: t0.Add(expires)}}
	}
	for _, tc := range []struct {
		name    string
		expires time.Duration // of us's verdict
		gone    bool          // the source no longer returns it
		later   time.Duration // when it no longer counts
		want    []string
		not     []string
	}{
		{"expires first", 4 * time.Second, false, 5 * time.Second,
			[]string{`stopped_by="us: expires ` + t0.Add(4*time.Second).UTC().Format("15:04:05") + `Z"`}, []string{"max_age="}},
		{"max_age first", time.Hour, false, maxAge + time.Second,
			[]string{`stopped_by="us: max_age 10s"`, "max_age=10s"}, []string{"expires"}},
		{"no verdict left", time.Hour, true, time.Second,
			[]string{`stopped_by="us: no verdict left"`}, []string{"max_age="}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := newBackend(t, "a"), newBackend(t, "b")
			cfg := pool1(PolicyFirst, urls(a, b)...)
			cfg.Pools[0].Verdicts.MaxAge = maxAge
			h, logs := startCapturing(t, cfg, EngineFast)
			p := h.pool("web")
			vs := down(tc.expires)
			p.applyVerdicts(vs, t0)
			if !adminOrigins(t, h.p)[0].VerdictDown {
				t.Fatal("o0 not out with us unhealthy")
			}
			if tc.gone {
				vs = nil
			}
			p.applyVerdicts(vs, t0.Add(tc.later))
			got := logs.lines("verdicts cleared origin: verdicts expired, region(s) stopped reporting")
			if len(got) != 1 {
				t.Fatalf("want one verdicts-expired line, got %q", logs.String())
			}
			for _, want := range append(tc.want, "stopped_reporting=us") {
				if !strings.Contains(got[0], want) {
					t.Errorf("line lacks %s:\n%s", want, got[0])
				}
			}
			for _, bad := range tc.not {
				if strings.Contains(got[0], bad) {
					t.Errorf("line has %s:\n%s", bad, got[0])
				}
			}
		})
	}
}
