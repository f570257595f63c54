package canary

import (
	"context"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// TestPassiveSignalsTriggerDeepChecks: the proxy's signals in the real
// embedded store make the canary run the degrading origin's deep check out
// of cycle; the shallow check and the healthy origin are left alone; the
// trigger is rate-limited by min_gap.
func TestPassiveSignalsTriggerDeepChecks(t *testing.T) {
	bad := checktest.NewOrigin()
	defer bad.Close()
	good := checktest.NewOrigin()
	defer good.Close()
	cfg := testConfig(t, map[string]string{"bad": bad.URL(), "good": good.URL()},
		CheckConfig{Name: "asset", Tier: "deep", Targets: []string{"bad", "good"}, Interval: time.Hour,
			HTTP: &checks.HTTPSpec{Path: "/asset.bin"}},
		CheckConfig{Name: "healthz", Tier: "shallow", Targets: []string{"bad"}, Interval: time.Hour,
			HTTP: &checks.HTTPSpec{Path: "/healthz"}},
	)
	st, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c := start(t, cfg, compile(t, cfg), Options{})
	// Each pair runs once in its first slot (within the hour): trigger them
	// so the counts start from a known point.
	for _, p := range [][2]string{{"asset", "bad"}, {"asset", "good"}, {"healthz", "bad"}} {
		if _, err := c.Trigger(p[0], p[1]); err != nil {
			t.Fatal(err)
		}
	}
	assetBad, assetGood, hzBad := bad.Count("GET", "/asset.bin"), good.Count("GET", "/asset.bin"), bad.Count("GET", "/healthz")

	trig := TriggerConfig{Poll: 50 * time.Millisecond, MinGap: 2 * time.Second, For: 10 * time.Second}
	if err := trig.ValidateAndSetDefaults(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.WatchSignals(ctx, st, trig) }()
	defer func() { cancel(); <-done }()

	now := time.Now()
	// Healthy traffic: below 1 % failures: nothing runs.
	if err := st.PublishSignals(ctx, []reporting.Signal{
		{Pool: "web", Origin: "bad", At: now, Window: 10 * time.Second, Requests: 500, Status5xx: 2},
		{Pool: "web", Origin: "good", At: now, Window: 10 * time.Second, Requests: 500},
	}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if n := bad.Count("GET", "/asset.bin"); n != assetBad {
		t.Fatalf("0.4%% failures triggered a run (%d → %d)", assetBad, n)
	}

	// 5 % of live requests fail on origin "bad": its deep check runs now.
	if err := st.PublishSignals(ctx, []reporting.Signal{
		{Pool: "web", Origin: "bad", At: now.Add(time.Second), Window: 10 * time.Second, Requests: 500, Status5xx: 25},
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a triggered deep check on the degraded origin", func() bool {
		return bad.Count("GET", "/asset.bin") == assetBad+1
	})
	// Rate-limited: the same signals keep arriving, but min_gap holds.
	time.Sleep(time.Second)
	if n := bad.Count("GET", "/asset.bin"); n != assetBad+1 {
		t.Errorf("deep check ran %d times within min_gap, want 1", n-assetBad)
	}
	if n := good.Count("GET", "/asset.bin"); n != assetGood {
		t.Errorf("healthy origin's check was triggered (%d → %d)", assetGood, n)
	}
	if n := bad.Count("GET", "/healthz"); n != hzBad {
		t.Errorf("shallow check was triggered (%d → %d); only deep and synthetic tiers should run", hzBad, n)
	}
	// An ejection reported by the proxy triggers too (after min_gap).
	if err := st.PublishSignals(ctx, []reporting.Signal{
		{Pool: "web", Origin: "good", At: time.Now(), Window: 10 * time.Second, Requests: 5, Ejected: true, Reason: "latency p95"},
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a triggered check after an ejection", func() bool {
		return good.Count("GET", "/asset.bin") == assetGood+1
	})
}
