package alerting

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// targets publishes one eu verdict per target and evaluates.
func (h *harness) targets(states map[string]reporting.State) {
	h.t.Helper()
	now := h.clock.Add(h.interval)
	for target, st := range states {
		h.store.add(verdict("asset", target, "eu", now.Add(-time.Second), st, h.interval))
	}
	h.eval()
}

func TestGroupingAndGroupWait(t *testing.T) {
	h := newHarness(t, t0, Config{GroupWait: 30 * time.Second, Down: DownRule{For: time.Second}}, nil)
	st := map[string]reporting.State{"a": U, "b": U, "c": H}
	h.targets(st) // pending
	h.targets(st) // a and b fire: the group waits 30s
	h.targets(st)
	if n := len(h.hook.all()); n != 0 {
		t.Fatalf("inside group_wait: %d notifications", n)
	}
	h.targets(st)
	got := h.hook.webhooks(t)
	if len(got) != 1 || got[0].Title != "[FIRING:2] VigilCheckDown asset (page)" || len(got[0].Alerts) != 2 ||
		got[0].Alerts[0].Target != "a" || got[0].Alerts[1].Target != "b" {
		t.Fatalf("after group_wait: %+v", got)
	}
	st["c"] = U
	h.targets(st) // c pending
	h.targets(st) // c fires: the group changed, notified without waiting again
	got = h.hook.webhooks(t)
	if len(got) != 2 || !strings.HasPrefix(got[1].Title, "[FIRING:3]") {
		t.Fatalf("new alert in a notified group: %+v", got[len(got)-1])
	}
	st["a"] = H
	h.targets(st)
	got = h.hook.webhooks(t)
	last := got[len(got)-1]
	if len(got) != 3 || last.Status != StatusFiring || len(last.Alerts) != 3 || last.Alerts[2].Status != StatusResolved ||
		last.Alerts[2].Target != "a" || !strings.Contains(last.Text, "resolved:") {
		t.Fatalf("partial resolve: %+v", last)
	}
	h.targets(st)
	if n := len(h.hook.all()); n != 3 {
		t.Fatalf("no change: %d notifications, want 3", n)
	}
	st["b"], st["c"] = H, H
	h.targets(st)
	got = h.hook.webhooks(t)
	last = got[len(got)-1]
	if len(got) != 4 || last.Status != StatusResolved || len(last.Alerts) != 2 {
		t.Fatalf("all resolved: %+v", last)
	}
}

func TestReloadKeepsState(t *testing.T) {
	h := newHarness(t, t0, Config{Down: DownRule{For: time.Second}}, nil)
	h.tick(map[string]reporting.State{"eu": U})
	h.tick(map[string]reporting.State{"eu": U})
	if n := len(h.hook.all()); n != 1 {
		t.Fatalf("%d notifications", n)
	}
	bad := Config{Quorum: -1}
	if err := h.a.Reload(bad, nil); err == nil {
		t.Fatal("Reload accepted an invalid config")
	}
	second := newRecorder(t)
	cfg := Config{Down: DownRule{For: time.Second}, Retry: RetryConfig{Backoff: 5 * time.Millisecond},
		Receivers: []Receiver{{Name: "second", Webhook: &WebhookConfig{URL: Secret(second.srv.URL)}}}}
	if err := h.a.Reload(cfg, nil); err != nil {
		t.Fatal(err)
	}
	// The alert keeps firing (no resolve, no new episode); the receiver the
	// reload added is sent it at the next evaluation, as a firing
	// notification, and its resolve afterwards.
	h.tick(map[string]reporting.State{"eu": U})
	got := second.webhooks(t)
	if len(h.a.Active()) != 1 || len(got) != 1 || got[0].Status != StatusFiring || len(h.hook.all()) != 1 {
		t.Fatalf("after reload: active %d, second %+v, first %d", len(h.a.Active()), got, len(h.hook.all()))
	}
	h.tick(map[string]reporting.State{"eu": U})
	if n := len(second.all()); n != 1 {
		t.Fatalf("second re-notified: %d notifications", n)
	}
	h.tick(map[string]reporting.State{"eu": H})
	got = second.webhooks(t)
	if len(got) != 2 || got[1].Status != StatusResolved || len(h.hook.all()) != 1 {
		t.Fatalf("resolve after reload: second %+v, first %d", got, len(h.hook.all()))
	}
	if v := counter(t, h.reg, "vigil_alert_notifications_total", map[string]string{"receiver": "second", "result": "failure"}); v != 0 {
		t.Fatalf("new receiver's series not pre-created: %v", v)
	}
}

func TestRunEvaluatesUntilCancelled(t *testing.T) {
	h := newHarness(t, t0, Config{EvaluationInterval: time.Second, Down: DownRule{For: time.Second}}, nil)
	h.store.add(verdict("asset", "origin-a", "eu", t0, U, time.Hour))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.a.Run(ctx); close(done) }()
	// Run evaluates at once and every second (real time): the alert goes
	// pending, then fires on a later evaluation as the fake clock moves.
	deadline := time.Now().Add(20 * time.Second)
	for len(h.a.Active()) == 0 && time.Now().Before(deadline) {
		h.clock.Add(100 * time.Millisecond)
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	<-done
	if len(h.a.Active()) != 1 {
		t.Fatal("Run did not evaluate on its interval")
	}
}

// TestReloadAddedReceiver: a receiver added by a reload while a group
// fires is sent the firing alerts at the next evaluation (not at
// repeat_interval), then their resolve; one added when the alert resolves
// before that evaluation hears nothing of it, rather than a resolve for an
// alert it never saw firing.
func TestReloadAddedReceiver(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after []reporting.State // eu's state at each evaluation after the reload
		want  []string          // what `late` receives
	}{
		{"firing, then resolved", []reporting.State{U, U, H}, []string{"firing:1:0", "resolved:0:1"}},
		{"resolved at once", []reporting.State{H, H}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Down: DownRule{For: time.Second}, RepeatInterval: 4 * time.Hour}
			h := newHarness(t, t0, cfg, nil)
			h.tick(map[string]reporting.State{"eu": U})
			h.tick(map[string]reporting.State{"eu": U})
			if n := len(h.hook.all()); n != 1 {
				t.Fatalf("%d notifications before the reload, want 1", n)
			}
			late := newRecorder(t)
			cfg.Retry.Backoff = 5 * time.Millisecond
			cfg.Receivers = []Receiver{{Name: "ops", Webhook: &WebhookConfig{URL: Secret(h.hook.srv.URL + "/hook")}},
				{Name: "late", Webhook: &WebhookConfig{URL: Secret(late.srv.URL + "/late")}}}
			if err := h.a.Reload(cfg, nil); err != nil {
				t.Fatal(err)
			}
			for _, st := range tc.after {
				h.tick(map[string]reporting.State{"eu": st})
			}
			var got []string
			for _, p := range late.webhooks(t) {
				firing, resolved := 0, 0
				for _, a := range p.Alerts {
					if a.Status == StatusFiring {
						firing++
					} else {
						resolved++
					}
				}
				got = append(got, fmt.Sprintf("%s:%d:%d", p.Status, firing, resolved))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("late received %v, want %v", got, tc.want)
			}
			ops := h.hook.webhooks(t)
			if len(ops) != 2 || ops[1].Status != StatusResolved {
				t.Fatalf("ops received %+v, want firing then resolved", ops)
			}
		})
	}
}
