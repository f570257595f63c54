package alerting

import (
	"context"
	"io"
	"log/slog"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// TestReceiverRulesRoute: receivers[].rules sends the dead_man alerts (a
// canary gone silent, or unable to run its checks) to the team that runs
// the canaries and the down alerts to the origins' owners, each to no
// other; a receiver without rules gets both. An unknown rule is a config
// error naming the key and the rules there are.
func TestReceiverRulesRoute(t *testing.T) {
	canaryOps, owners, all := newRecorder(t), newRecorder(t), newRecorder(t)
	clock := &fakeClock{t: t0}
	store := &memStore{clock: clock.Now}
	hook := func(name string, r *recorder, rules ...string) Receiver {
		return Receiver{Name: name, Rules: rules, Webhook: &WebhookConfig{URL: Secret(r.srv.URL + "/hook")}}
	}
	cfg := Config{EvaluationInterval: 5 * time.Second, Retry: RetryConfig{Backoff: 5 * time.Millisecond},
		Down:      DownRule{For: time.Second},
		Receivers: []Receiver{hook("canary-ops", canaryOps, RuleDeadMan), hook("owners", owners, RuleDown), hook("all", all)}}
	a, err := New(cfg, nil, store, Options{Now: clock.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close(context.Background()) })
	a.SetChecks([]string{"api", "journey"})
	step := func(d time.Duration, journeyRuns bool) {
		for end := clock.Now().Add(d); clock.Now().Before(end); {
			now := clock.Add(5 * time.Second)
			if now.Sub(t0)%deadEvery == 0 {
				store.add(verdict("api", "origin-a", "eu", now, reporting.StateUnhealthy, deadEvery))
				if journeyRuns {
					store.add(verdict("journey", "origin-a", "eu", now, H, deadEvery))
				}
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
	step(time.Minute, true)
	step(2*time.Minute, false) // journey goes silent
	rules := func(r *recorder) string {
		var out []string
		for _, p := range r.webhooks(t) {
			if p.Status == "firing" && !strings.Contains(strings.Join(out, ","), p.Rule+"/"+p.Check) {
				out = append(out, p.Rule+"/"+p.Check)
			}
		}
		return strings.Join(out, ",")
	}
	if got := rules(canaryOps); got != "dead_man/journey" {
		t.Errorf("canary-ops (rules: [dead_man]) was told %q, want dead_man/journey only", got)
	}
	if got := rules(owners); got != "down/api" {
		t.Errorf("owners (rules: [down]) was told %q, want down/api only", got)
	}
	// journey's only region is silent: quorum_lost fires with dead_man.
	got := strings.Split(rules(all), ",")
	sort.Strings(got)
	if got := strings.Join(got, ","); got != "dead_man/journey,down/api,quorum_lost/journey" {
		t.Errorf("a receiver without rules was told %q, want all three", got)
	}

	bad := Receiver{Name: "x", Rules: []string{"dead-man"}, Webhook: &WebhookConfig{URL: "http://127.0.0.1:1/hook"}}
	if err := bad.ValidateAndSetDefaults(); err == nil || !strings.Contains(err.Error(), `rules[0]: "dead-man": unknown rule (want one of down, ttfb, burn_rate, cert_expiry, dead_man, quorum_lost, live_errors)`) {
		t.Errorf("unknown rule: %v", err)
	}
}
