package alerting

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// amPosts decodes every request an Alertmanager recorder received.
func amPosts(t *testing.T, r *recorder) [][]amAlert {
	t.Helper()
	var out [][]amAlert
	for _, rec := range r.all() {
		var as []amAlert
		if err := json.Unmarshal(rec.Body, &as); err != nil {
			t.Fatalf("alertmanager body: %v: %s", err, rec.Body)
		}
		out = append(out, as)
	}
	return out
}

// TestMaintenanceKeepsAlertmanagerActive: an alert Alertmanager holds as
// active when a maintenance window begins is still sent to it on every
// evaluation, annotated silenced_by, so its endsAt does not lapse and
// Alertmanager does not resolve it while the check is down; an alert that
// first fires inside the window is not sent until the window ends. The
// other receivers hear nothing inside the window.
func TestMaintenanceKeepsAlertmanagerActive(t *testing.T) {
	am := newRecorder(t)
	// 10:02–10:07 every day; the harness starts at 10:00.
	cfg := Config{Down: DownRule{For: time.Second},
		Maintenance: []Maintenance{{Name: "mw", Cron: "2 10 * * *", Duration: 5 * time.Minute, Checks: []string{"asset"}}},
		Receivers:   []Receiver{{Name: "am", Alertmanager: &AlertmanagerConfig{URL: am.srv.URL}}}}
	h := newHarness(t, t0, cfg, nil)
	step := func(a, b reporting.State) {
		t.Helper()
		now := h.clock.Add(h.interval)
		h.store.add(verdict("asset", "origin-a", "eu", now.Add(-time.Second), a, h.interval),
			verdict("asset", "origin-b", "eu", now.Add(-time.Second), b, h.interval))
		h.eval()
	}
	step(U, H) // 10:00:15 pending
	step(U, H) // 10:00:30 fires, sent to both receivers
	if n := len(h.hook.all()); n != 1 {
		t.Fatalf("before the window: %d webhook notifications, want 1", n)
	}
	for h.clock.Now().Before(t0.Add(2 * time.Minute)) {
		step(U, H)
	}
	before := len(am.all())
	hook := len(h.hook.all())
	// Inside the window origin-a stays down and origin-b goes down.
	for h.clock.Now().Before(t0.Add(7*time.Minute - h.interval)) {
		step(U, U)
	}
	if n := len(h.hook.all()); n != hook {
		t.Fatalf("inside the window: %d webhook notifications, want none", n-hook)
	}
	posts := amPosts(t, am)[before:]
	if len(posts) < 15 {
		t.Fatalf("inside the window: %d posts to alertmanager, want one per evaluation", len(posts))
	}
	for i, p := range posts {
		if len(p) != 1 || p[0].Labels["target"] != "origin-a" || p[0].Annotations["silenced_by"] != "mw" {
			t.Fatalf("post %d inside the window: %+v, want origin-a only, annotated silenced_by=mw", i, p)
		}
		if !p[0].EndsAt.After(h.clock.Now()) {
			t.Fatalf("post %d: endsAt %s, not after now", i, p[0].EndsAt)
		}
	}
	active := h.a.Active()
	if len(active) != 2 || active[0].Silenced != "mw" || active[1].Silenced != "mw" {
		t.Fatalf("inside the window: active %+v, want both silenced by mw", active)
	}
	step(U, U) // 10:07:00, the window is over
	last := amPosts(t, am)[len(am.all())-1]
	if len(last) != 2 || last[0].Annotations["silenced_by"] != "" || last[1].Annotations["silenced_by"] != "" {
		t.Fatalf("after the window: %+v, want both targets, not annotated", last)
	}
	step(H, H)
	last = amPosts(t, am)[len(am.all())-1]
	if len(last) != 2 || !last[0].EndsAt.Equal(h.clock.Now()) || !last[1].EndsAt.Equal(h.clock.Now()) {
		t.Fatalf("resolve: %+v, want both ended now", last)
	}
}

// TestMaintenanceNoFalseResolveInRealAlertmanager: with a window beginning
// while an alert is active in a real Alertmanager, the alert stays active
// there past resolve_timeout (before, vigil stopped sending it and
// Alertmanager resolved it while the check was still down).
func TestMaintenanceNoFalseResolveInRealAlertmanager(t *testing.T) {
	base := startAlertmanager(t)
	clock := &fakeClock{t: time.Now()}
	store := &memStore{clock: clock.Now}
	cfg := Config{Quorum: 1, Down: DownRule{For: time.Second}, EvaluationInterval: time.Second, ResolveTimeout: 3 * time.Second,
		Receivers: []Receiver{{Name: "am", Alertmanager: &AlertmanagerConfig{URL: base}}},
		Retry:     RetryConfig{Backoff: 10 * time.Millisecond}}
	a, err := New(cfg, nil, store, Options{Now: clock.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close(context.Background()) })
	step := func() {
		t.Helper()
		clock.Set(time.Now())
		store.add(verdict("asset", "origin-a", "eu", clock.Now().Add(-time.Millisecond), U, 15*time.Second))
		evalDelivered(t, a)
	}
	step()
	time.Sleep(1100 * time.Millisecond) // down.for
	step()
	if len(a.Active()) != 1 {
		t.Fatalf("active: %+v", a.Active())
	}
	// A window covering every minute begins (as a reload adding it would).
	cfg.Maintenance = []Maintenance{{Name: "mw", Cron: "* * * * *", Duration: 2 * time.Minute, Checks: []string{"asset"}}}
	if err := a.Reload(cfg, nil); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(cfg.ResolveTimeout + 2*time.Second); time.Now().Before(end); {
		step()
		time.Sleep(500 * time.Millisecond)
	}
	if act := a.Active(); len(act) != 1 || act[0].Silenced != "mw" {
		t.Fatalf("vigil: %+v, want one alert silenced by mw", act)
	}
	var found *amGot
	for _, al := range getAlerts(t, base) {
		if al.Labels["alertname"] == "VigilCheckDown" {
			found = &al
		}
	}
	if found == nil || found.Status.State != "active" || !found.EndsAt.After(time.Now()) {
		t.Fatalf("alertmanager resolved the alert vigil still fires (silenced): %+v", found)
	}
	if found.Annotations["silenced_by"] != "mw" || !strings.Contains(found.Annotations["summary"], "down in 1 region") {
		t.Fatalf("annotations: %v", found.Annotations)
	}
}

// TestMaintenanceAlertmanagerAddedInWindow: an Alertmanager added by a
// reload during a maintenance window does not hold the alert that was
// firing when the window began, so it is not sent that alert inside the
// window (to it, the alert starts firing inside the window), nor its
// resolve if it resolves there; the Alertmanager that held it is sent both.
// Once the window is over, the new one is sent the alert like any other.
func TestMaintenanceAlertmanagerAddedInWindow(t *testing.T) {
	for _, tc := range []struct {
		name string
		// after are origin-a's states at the evaluations from 10:06:45
		// on; the window ends at 10:07:00.
		after   []reporting.State
		wantAM  []string // the last two posts to am (summarised by amSummary)
		wantAM2 []string // every post to am2
	}{
		{"resolved inside the window", []reporting.State{H, H},
			[]string{"origin-a:mw:active", "origin-a::resolved"}, nil},
		{"firing after the window", []reporting.State{U, U, H},
			[]string{"origin-a::active", "origin-a::resolved"}, []string{"origin-a::active", "origin-a::resolved"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			am, am2 := newRecorder(t), newRecorder(t)
			cfg := Config{Down: DownRule{For: time.Second},
				Maintenance: []Maintenance{{Name: "mw", Cron: "2 10 * * *", Duration: 5 * time.Minute, Checks: []string{"asset"}}},
				Receivers:   []Receiver{{Name: "am", Alertmanager: &AlertmanagerConfig{URL: am.srv.URL}}}}
			h := newHarness(t, t0, cfg, nil)
			step := func(s reporting.State) {
				t.Helper()
				now := h.clock.Add(h.interval)
				h.store.add(verdict("asset", "origin-a", "eu", now.Add(-time.Second), s, h.interval))
				h.eval()
			}
			for h.clock.Now().Before(t0.Add(3 * time.Minute)) {
				step(U) // fires at 10:00:30; the window begins at 10:02
			}
			cfg.Retry.Backoff = 5 * time.Millisecond
			cfg.Receivers = []Receiver{{Name: "ops", Webhook: &WebhookConfig{URL: Secret(h.hook.srv.URL + "/hook")}},
				{Name: "am", Alertmanager: &AlertmanagerConfig{URL: am.srv.URL}},
				{Name: "am2", Alertmanager: &AlertmanagerConfig{URL: am2.srv.URL}}}
			if err := h.a.Reload(cfg, nil); err != nil {
				t.Fatal(err)
			}
			for h.clock.Now().Before(t0.Add(7*time.Minute - 2*h.interval)) {
				step(U)
			}
			if n := len(am2.all()); n != 0 {
				t.Fatalf("inside the window: %d posts to the Alertmanager added then, want none: %v", n, amSummary(t, am2, h.clock.Now()))
			}
			if got := amSummary(t, am, h.clock.Now()); got[len(got)-1] != "origin-a:mw:active" {
				t.Fatalf("inside the window: last post to am %s, want origin-a:mw:active", got[len(got)-1])
			}
			for _, s := range tc.after {
				step(s)
			}
			if got := amSummary(t, am, h.clock.Now()); fmt.Sprint(got[len(got)-2:]) != fmt.Sprint(tc.wantAM) {
				t.Fatalf("am's last posts: %v, want %v", got[len(got)-2:], tc.wantAM)
			}
			if got := amSummary(t, am2, h.clock.Now()); fmt.Sprint(got) != fmt.Sprint(tc.wantAM2) {
				t.Fatalf("am2's posts: %v, want %v", got, tc.wantAM2)
			}
		})
	}
}

// amSummary sums up each post to an Alertmanager recorder as
// target:silenced_by:state of its one alert, state "resolved" if its
// endsAt is not after now (an active one's is resolve_timeout, 5m, after
// its send), else "active".
func amSummary(t *testing.T, r *recorder, now time.Time) []string {
	t.Helper()
	var out []string
	for i, p := range amPosts(t, r) {
		if len(p) != 1 {
			t.Fatalf("post %d: %d alerts, want 1: %+v", i, len(p), p)
		}
		state := "active"
		if !p[0].EndsAt.After(now) {
			state = "resolved"
		}
		out = append(out, fmt.Sprintf("%s:%s:%s", p[0].Labels["target"], p[0].Annotations["silenced_by"], state))
	}
	return out
}
