package alerting

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// TestQuorumLostPages: two regions, quorum 2, the embedded SQLite store.
// The us-east canary dies; the on-call is paged that healthz has lost its
// quorum (the dead-man notice alone is a ticket), naming what is blind.
// When origin-b then goes down in eu-west, no down alert can fire, which
// is what the page said. us-east coming back resolves the page.
func TestQuorumLostPages(t *testing.T) {
	clock := &fakeClock{t: t0}
	st, err := store.Open(t.TempDir(), store.Options{Now: clock.Now, Retention: 24 * time.Hour,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	hook := newRecorder(t)
	cfg := Config{Quorum: 2, EvaluationInterval: 5 * time.Second, Retry: RetryConfig{Backoff: 5 * time.Millisecond},
		Receivers: []Receiver{{Name: "ops", Webhook: &WebhookConfig{URL: Secret(hook.srv.URL + "/hook")}}}}
	a, err := New(cfg, nil, st, Options{Now: clock.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	a.SetChecks([]string{"healthz"})

	const every = 5 * time.Second
	states := map[string]reporting.State{"us-east": H, "eu-west": H}
	step := func(d time.Duration) {
		t.Helper()
		for end := clock.Now().Add(d); clock.Now().Before(end); {
			now := clock.Add(every)
			var vs []reporting.Verdict
			for region, s := range states {
				vs = append(vs, verdict("healthz", "origin-b", region, now, s, every))
			}
			if err := st.Publish(context.Background(), vs); err != nil {
				t.Fatal(err)
			}
			if err := a.Evaluate(context.Background()); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := a.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			cancel()
		}
	}
	sent := func(rule, status string) []WebhookAlert {
		var out []WebhookAlert
		for _, p := range hook.webhooks(t) {
			for _, al := range p.Alerts {
				if al.Rule == rule && al.Status == status {
					out = append(out, al)
				}
			}
		}
		return out
	}

	step(time.Minute)
	if got := hook.webhooks(t); len(got) != 0 {
		t.Fatalf("notifications while both regions report: %+v", got)
	}
	// kill -9 of the us-east canary.
	delete(states, "us-east")
	killed := clock.Now()
	step(time.Minute)
	pages := sent(RuleQuorumLost, "firing")
	if len(pages) != 1 {
		t.Fatalf("quorum_lost notifications after us-east died: %+v (all: %+v)", pages, hook.webhooks(t))
	}
	p := pages[0]
	want := "healthz: only 1 region (eu-west) reports, alerting.quorum is 2: down, ttfb, burn_rate and cert_expiry alerts for healthz cannot fire until us-east reports again"
	if p.Severity != SeverityPage || p.Summary != want {
		t.Errorf("quorum_lost alert: severity %s, summary\n%q\nwant page,\n%q", p.Severity, p.Summary, want)
	}
	// It fires with the dead-man alert: limit 3 × 5s, then dead_man's
	// pending 2 × 5s, evaluated every 5s.
	if dm := sent(RuleDeadMan, "firing"); len(dm) != 1 || dm[0].Severity != SeverityTicket {
		t.Errorf("dead-man notices: %+v", dm)
	}
	if at := p.StartsAt.Sub(killed); at > 35*time.Second {
		t.Errorf("quorum_lost fired %s after the canary died", at)
	}

	// origin-b goes hard down; eu-west alone sees it: no down alert.
	states["eu-west"] = U
	step(2 * time.Minute)
	if d := sent(RuleDown, "firing"); len(d) != 0 {
		t.Fatalf("down fired with one region of quorum 2: %+v", d)
	}
	if r := sent(RuleQuorumLost, "resolved"); len(r) != 0 {
		t.Fatalf("quorum_lost resolved while us-east is still dead: %+v", r)
	}

	// us-east comes back (and sees origin-b down): the page resolves and
	// the down alert fires.
	states["us-east"] = U
	step(2 * time.Minute)
	if r := sent(RuleQuorumLost, "resolved"); len(r) != 1 {
		t.Errorf("quorum_lost resolves when us-east reports again: %+v", r)
	}
	if d := sent(RuleDown, "firing"); len(d) != 1 || !strings.Contains(d[0].Summary, "2 regions") {
		t.Errorf("down alert once both regions report: %+v", d)
	}
}

// TestQuorumLostThreeRegions: with three regions and quorum 2 one dead
// canary leaves the quorum reachable (a ticket only); a second one pages,
// naming both, and quorum_lost.severity and disabled are honoured.
func TestQuorumLostThreeRegions(t *testing.T) {
	run := func(t *testing.T, cfg Config, dead ...string) []Alert {
		h := newHarness(t, t0, cfg, nil)
		h.interval = 5 * time.Second
		states := map[string]reporting.State{"eu": H, "us": H, "ap": H}
		for range 12 {
			h.tick(states)
		}
		for _, r := range dead {
			delete(states, r)
		}
		for range 12 {
			h.tick(states)
		}
		var out []Alert
		for _, al := range h.a.Active() {
			if al.Rule == RuleQuorumLost {
				out = append(out, al)
			}
		}
		return out
	}
	if got := run(t, Config{Quorum: 2}, "us"); len(got) != 0 {
		t.Errorf("quorum_lost with 2 of 3 regions reporting: %+v", got)
	}
	got := run(t, Config{Quorum: 2}, "us", "ap")
	want := "asset: only 1 region (eu) reports, alerting.quorum is 2: down, ttfb, burn_rate and cert_expiry alerts for asset cannot fire until 1 of ap, us reports again"
	if len(got) != 1 || got[0].Summary != want || got[0].Severity != SeverityPage {
		t.Errorf("two of three dead: %+v\nwant %q", got, want)
	}
	got = run(t, Config{Quorum: 2, QuorumLost: QuorumLostRule{Severity: SeverityTicket}, TTFB: TTFBRule{Disabled: true}}, "us", "ap", "eu")
	want = "asset: no region reports, alerting.quorum is 2: down, burn_rate and cert_expiry alerts for asset cannot fire until 2 of ap, eu, us report again"
	if len(got) != 1 || got[0].Summary != want || got[0].Severity != SeverityTicket {
		t.Errorf("all dead, severity ticket: %+v\nwant %q", got, want)
	}
	if got := run(t, Config{Quorum: 2, QuorumLost: QuorumLostRule{Disabled: true}}, "us", "ap"); len(got) != 0 {
		t.Errorf("quorum_lost.disabled: %+v", got)
	}
}
