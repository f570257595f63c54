package alerting

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// deadRig runs Alerters (restarts share the state file) over a memStore
// with a fake clock and one webhook receiver; canaries in regions publish
// checks every 10s.
type deadRig struct {
	t     *testing.T
	clock *fakeClock
	store *memStore
	hook  *recorder
	path  string
	// runs is, per region, the checks its canary runs.
	runs map[string][]string
}

const deadEvery = 10 * time.Second

func newDeadRig(t *testing.T) *deadRig {
	return &deadRig{t: t, clock: &fakeClock{t: t0}, hook: newRecorder(t),
		path: filepath.Join(t.TempDir(), "alerts.json"), runs: map[string][]string{}}
}

func (r *deadRig) start(checks []string) *Alerter {
	r.t.Helper()
	if r.store == nil {
		r.store = &memStore{clock: r.clock.Now}
	}
	cfg := Config{EvaluationInterval: 5 * time.Second, Retry: RetryConfig{Backoff: 5 * time.Millisecond},
		Receivers: []Receiver{{Name: "ops", Webhook: &WebhookConfig{URL: Secret(r.hook.srv.URL + "/hook")}}}}
	a, err := New(cfg, nil, r.store, Options{Now: r.clock.Now, StatePath: r.path,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		r.t.Fatal(err)
	}
	a.SetChecks(checks)
	r.t.Cleanup(func() { _ = a.Close(context.Background()) })
	return a
}

// advance moves the clock by d in 5s steps: the canaries publish on every
// 10s boundary, a evaluates after every step.
func (r *deadRig) advance(a *Alerter, d time.Duration) {
	r.t.Helper()
	for end := r.clock.Now().Add(d); r.clock.Now().Before(end); {
		now := r.clock.Add(5 * time.Second)
		if now.Sub(t0)%deadEvery == 0 {
			for region, checks := range r.runs {
				for _, c := range checks {
					r.store.add(verdict(c, "origin-a", region, now, H, deadEvery))
				}
			}
		}
		if err := a.Evaluate(context.Background()); err != nil {
			r.t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := a.Flush(ctx); err != nil {
			r.t.Fatal(err)
		}
		cancel()
	}
}

// deadMan lists what the receiver was told about dead-man alerts, in
// order: "firing check/region" or "resolved check/region".
func (r *deadRig) deadMan() []string {
	var out []string
	for _, p := range r.hook.webhooks(r.t) {
		if p.Rule != RuleDeadMan {
			continue
		}
		var as []string
		for _, al := range p.Alerts {
			as = append(as, al.Status+" "+al.Check+"/"+al.Region)
		}
		sort.Strings(as)
		out = append(out, as...)
	}
	return out
}

// TestDeadManRemovedCheck: a check removed from the config (SetChecks
// without it, as a hot reload does) never fires dead_man when its runs
// stop, before or after a restart; one whose dead-man alert was already
// firing resolves at once. A configured check that only another region's
// canary runs still fires when that canary stops running it.
func TestDeadManRemovedCheck(t *testing.T) {
	t.Run("removed before it goes silent", func(t *testing.T) {
		r := newDeadRig(t)
		r.runs = map[string][]string{"eu": {"asset", "xss"}, "us": {"asset", "xss", "api"}}
		a := r.start([]string{"asset", "xss", "api"})
		r.advance(a, time.Minute)
		// Reload without xss: the canaries stop running it.
		r.runs = map[string][]string{"eu": {"asset"}, "us": {"asset", "api"}}
		a.SetChecks([]string{"asset", "api"})
		r.advance(a, 3*time.Minute)
		if got := r.deadMan(); len(got) != 0 {
			t.Fatalf("dead-man notifications for a removed check: %v", got)
		}
		// Restart with the same config: still nothing.
		a = r.start([]string{"asset", "api"})
		r.advance(a, 3*time.Minute)
		if got := r.deadMan(); len(got) != 0 {
			t.Fatalf("after a restart: dead-man notifications for a removed check: %v", got)
		}
		// api is configured here and run by us only: when us stops
		// running it, that is a real silence.
		r.runs["us"] = []string{"asset"}
		r.advance(a, 2*time.Minute)
		if got := strings.Join(r.deadMan(), ","); got != "firing api/us" {
			t.Fatalf("us stopped running api: dead-man notifications %q, want firing api/us", got)
		}
	})
	t.Run("firing, then removed, across a restart", func(t *testing.T) {
		r := newDeadRig(t)
		r.runs = map[string][]string{"eu": {"asset", "xss"}}
		a := r.start([]string{"asset", "xss"})
		r.advance(a, time.Minute)
		r.runs["eu"] = []string{"asset"} // xss stops while still configured
		r.advance(a, 2*time.Minute)
		if got := strings.Join(r.deadMan(), ","); got != "firing xss/eu" {
			t.Fatalf("xss silent while configured: %q, want firing xss/eu", got)
		}
		// The config drops xss; the process restarts with it.
		a = r.start([]string{"asset"})
		r.advance(a, 5*time.Second)
		if got := strings.Join(r.deadMan(), ","); got != "firing xss/eu,resolved xss/eu" {
			t.Fatalf("after removing xss: %q, want its dead-man alert resolved at the first evaluation", got)
		}
		r.advance(a, 2*time.Minute)
		if got := len(r.deadMan()); got != 2 {
			t.Fatalf("later: %v, want nothing more", r.deadMan())
		}
	})
}

// TestDeadManGrace: a canary paused for 8s (SIGSTOP) with a 2s interval
// and 3 intervals of dead-man window is silent just past the window when
// the alerter evaluates, then catches up: nothing is sent. A canary that
// stays silent fires once dead_man.for (default 2 intervals) has passed.
func TestDeadManGrace(t *testing.T) {
	clock := &fakeClock{t: t0}
	store := &memStore{clock: clock.Now}
	hook := newRecorder(t)
	// quorum_lost (one region, quorum 1) fires with the dead-man alert:
	// this test counts dead-man notifications.
	a, err := New(Config{Retry: RetryConfig{Backoff: 5 * time.Millisecond}, QuorumLost: QuorumLostRule{Disabled: true},
		Receivers: []Receiver{{Name: "ops", Webhook: &WebhookConfig{URL: Secret(hook.srv.URL)}}}},
		nil, store, Options{Now: clock.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	const every = 2 * time.Second
	eval := func() {
		t.Helper()
		if err := a.Evaluate(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := a.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	run := func(checks ...string) {
		for _, c := range checks {
			store.add(verdict(c, "origin-a", "eu", clock.Now(), H, every))
		}
	}
	for range 5 {
		clock.Add(every)
		run("asset", "xss", "api")
		eval()
	}
	// Paused 8s: the alerter (1s evaluations) wakes first and sees 8s of
	// silence, over the 6s window; the canary catches up 1s later.
	clock.Add(8 * time.Second)
	eval()
	clock.Add(time.Second)
	run("asset", "xss", "api")
	eval()
	if n := len(hook.all()); n != 0 {
		t.Fatalf("pause of 8s: %d notifications, want none", n)
	}
	// api stops for good: silent > 6s at +7s, fires 4s (2 intervals) later.
	for i := 1; i <= 12; i++ {
		clock.Add(time.Second)
		if i%2 == 0 {
			run("asset", "xss")
		}
		eval()
		fired := len(hook.all()) > 0
		if want := i >= 11; fired != want {
			t.Fatalf("api silent %ds: notified %v, want %v", i, fired, want)
		}
	}
	if p := hook.webhooks(t); len(p) != 1 || p[0].Rule != RuleDeadMan || p[0].Alerts[0].Check != "api" {
		t.Fatalf("notifications: %+v, want dead_man for api", p)
	}
}
