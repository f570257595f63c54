package statuspage

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// sampleNow is the fixed clock of the sample data.
var sampleNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// sampleSource builds a realistic hour of history for three checks × three
// origins × three regions: origin-b serves a corrupt asset since 4 minutes,
// origin-c is slow from ap-south, and the ap-south canary of checkout-flow
// went silent (stale). Rollups cover 30 days at 10-minute granularity.
func sampleSource() *memSource {
	rng := rand.New(rand.NewPCG(1, 2))
	m := &memSource{now: func() time.Time { return sampleNow }}
	regions := []string{"ap-south", "eu-west", "us-east"}
	base := map[string]time.Duration{"eu-west": 18 * time.Millisecond, "us-east": 42 * time.Millisecond, "ap-south": 95 * time.Millisecond}
	type chk struct {
		name, tier string
		interval   time.Duration
		targets    []string
	}
	checks := []chk{
		{"healthz", reporting.TierShallow, 15 * time.Second, []string{"origin-a", "origin-b", "origin-c"}},
		{"asset", reporting.TierDeep, 30 * time.Second, []string{"origin-a", "origin-b", "origin-c"}},
		{"checkout-flow", reporting.TierSynthetic, 60 * time.Second, []string{"origin-a"}},
	}
	for _, c := range checks {
		for _, t := range c.targets {
			for _, r := range regions {
				streak := 0
				prevOK := true
				var state reporting.State
				var since time.Time
				for at := sampleNow.Add(-time.Hour); !at.After(sampleNow.Add(-2 * time.Second)); at = at.Add(c.interval) {
					if c.name == "checkout-flow" && r == "ap-south" && at.After(sampleNow.Add(-7*time.Minute)) {
						break // canary silent: the last verdict goes stale
					}
					dns := time.Duration(300+rng.IntN(400)) * time.Microsecond
					conn := base[r]/3 + time.Duration(rng.IntN(2000))*time.Microsecond
					tls := base[r]/2 + time.Duration(rng.IntN(3000))*time.Microsecond
					wait := base[r]/2 + time.Duration(rng.ExpFloat64()*float64(6*time.Millisecond))
					if t == "origin-c" && r == "ap-south" {
						wait += 180*time.Millisecond + time.Duration(rng.IntN(120))*time.Millisecond
					}
					if c.name == "checkout-flow" {
						wait += 350 * time.Millisecond
					}
					xfer := time.Duration(1+rng.IntN(4)) * time.Millisecond
					if c.name == "asset" {
						xfer += 25 * time.Millisecond
					}
					v := reporting.Verdict{Check: c.name, Target: t, Tier: c.tier, Region: r, Vantage: "canary-" + r + "-1",
						OK: true, StatusCode: 200, DNS: dns, Connect: conn, TLS: tls, TTFB: dns + conn + tls + wait, Transfer: xfer,
						Interval: c.interval, At: at, Expires: at.Add(3 * c.interval), URL: "http://" + t + ".internal:8080/"}
					v.Duration = v.TTFB + xfer
					if c.name == "asset" && t == "origin-b" && at.After(sampleNow.Add(-4*time.Minute)) {
						v.OK, v.Cause, v.Err = false, "checksum", "body sha256 9f2c…e1 ≠ want 4b7a…0d (1048576 bytes)"
					}
					if c.name == "asset" && t == "origin-c" && r == "ap-south" && v.TTFB > 300*time.Millisecond {
						v.OK, v.Cause, v.Err = false, "ttfb", fmt.Sprintf("ttfb %s > 300ms", v.TTFB.Round(time.Millisecond))
					}
					if c.name == "checkout-flow" && at.Equal(sampleNow.Add(-time.Hour).Add(20*c.interval)) {
						v.OK, v.Cause, v.Err = false, "browser", `wait_visible "#cart-count": timed out after 5s`
						v.Artifact = "artifacts/checkout-flow/origin-a-eu-west.png"
					}
					if v.OK == prevOK {
						streak++
					} else {
						streak = 1
					}
					prevOK = v.OK
					v.Streak = streak
					switch {
					case v.OK:
						v.State = reporting.StateHealthy
					case v.Cause == "ttfb":
						v.State = reporting.StateDegraded
					case streak >= 3:
						v.State = reporting.StateUnhealthy
					default:
						v.State = reporting.StateHealthy
					}
					if v.State != state {
						state, since = v.State, at
					}
					v.Since = since
					m.hist = append(m.hist, v)
				}
				// 30 days of rollups, one per 10 minutes.
				for mi := sampleNow.Add(-30 * 24 * time.Hour).Truncate(time.Minute); mi.Before(sampleNow); mi = mi.Add(10 * time.Minute) {
					total := int(10 * time.Minute / c.interval)
					failed := 0
					if rng.IntN(400) == 0 {
						failed = 1 + rng.IntN(total/2)
					}
					m.rollups = append(m.rollups, reporting.Rollup{Check: c.name, Target: t, Region: r, Minute: mi,
						Total: total, Failed: failed, TTFBSum: time.Duration(total) * base[r], TTFBMax: 2 * base[r], TTFBP95: base[r] * 3 / 2})
				}
			}
		}
	}
	return m
}

// sampleOptions wires sampleSource with a proxy, alerts, SLOs and fault switches.
func sampleOptions(m *memSource, faults *FaultControl) Options {
	since := sampleNow.Add(-3*time.Minute - 40*time.Second)
	return Options{
		Verdicts: m,
		Title:    "vigil",
		Now:      func() time.Time { return sampleNow },
		Origins: func() []Origin {
			return []Origin{
				{Pool: "web", Name: "origin-a", URL: "http://127.0.0.1:9201", Available: true,
					Flags: []Flag{{Source: FlagVerdict, Reason: "3/3 regions healthy"}, {Source: FlagPassive, Reason: "0.1% 5xx over 30s"}}},
				{Pool: "web", Name: "origin-b", URL: "http://127.0.0.1:9202", Available: false, Ejections: 1,
					Flags: []Flag{{Source: FlagVerdict, Bad: true, Reason: "3/3 regions unhealthy: checksum", Since: since}, {Source: FlagPassive, Reason: "0% 5xx over 30s"}}},
				{Pool: "web", Name: "origin-c", URL: "http://127.0.0.1:9203", Available: true,
					Flags: []Flag{{Source: FlagVerdict, Reason: "1/3 regions degraded (quorum 2)"}, {Source: FlagPassive, Reason: "p95 312ms"}}},
			}
		},
		Alerts: func() []Alert {
			return []Alert{{Rule: "down", Check: "asset", Target: "origin-b", Severity: "page",
				Summary: "asset on origin-b is unhealthy in 3 regions: checksum", Regions: []string{"ap-south", "eu-west", "us-east"}, Since: since}}
		},
		Failing: func() map[string]string {
			return map[string]string{"pagerduty": "POST https://events.pagerduty.com/v2/enqueue: 503 Service Unavailable (retry 3 in 40s)"}
		},
		SLOs: func() []SLOStatus {
			return []SLOStatus{
				{Name: "asset-availability", Check: "asset", Objective: "99.9%", Current: 0.99931, BudgetLeft: 0.31, Window: 30 * 24 * time.Hour},
				{Name: "asset-ttfb", Check: "asset", Objective: "600ms", Current: 0.212, BudgetLeft: 0.92, Window: 5 * time.Minute},
			}
		},
		LastRuns: func(check string) []RunDetail {
			at := sampleNow.Add(-12 * time.Second)
			switch check {
			case "asset":
				return []RunDetail{
					{Target: "origin-b", Region: "eu-west", Vantage: "canary-eu-west-1", At: at, Cause: "checksum", Err: "body sha256 9f2c…e1 ≠ want 4b7a…0d",
						Assertions: []Assertion{
							{Name: "status", OK: true, Got: "200", Want: "200"},
							{Name: "header Content-Type", OK: true, Got: "application/octet-stream", Want: "application/octet-stream"},
							{Name: "checksum", Got: "sha256:9f2c…e1", Want: "sha256:4b7a…0d"},
							{Name: "ttfb", OK: true, Got: "37ms", Want: "≤ 600ms"},
						}},
					{Target: "origin-a", Region: "eu-west", Vantage: "canary-eu-west-1", At: at, OK: true,
						Assertions: []Assertion{{Name: "status", OK: true, Got: "200", Want: "200"}, {Name: "checksum", OK: true, Got: "sha256:4b7a…0d", Want: "sha256:4b7a…0d"}}},
				}
			case "checkout-flow":
				return []RunDetail{{Target: "origin-a", Region: "eu-west", At: at, Cause: "browser", Err: "step 3: timed out",
					Steps: []Step{
						{Name: "navigate /shop", OK: true, Duration: 412 * time.Millisecond},
						{Name: "click #add-to-cart", OK: true, Duration: 95 * time.Millisecond},
						{Name: "assert_text #cart-count", Cause: "browser", Err: `wait_visible "#cart-count": timed out after 5s`, Duration: 5 * time.Second,
							Assertions: []Assertion{{Name: "text #cart-count", Got: "(not visible)", Want: "1"}}},
						{Name: "screenshot", Skipped: true},
					}}}
			}
			return nil
		},
		Faults: faults,
	}
}
