package alerting

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-synthetics/vigil/reporting"
)

// restartRig runs successive Alerters (one per "process") over the same
// store, clock, receivers and state file, as a restart would.
type restartRig struct {
	t            *testing.T
	clock        *fakeClock
	store        *memStore
	hook, pd, am *recorder
	path         string // Options.StatePath
	logs         *strings.Builder
	retry        RetryConfig          // default: 5ms backoff
	reg          *prometheus.Registry // the last started Alerter's
}

func newRestartRig(t *testing.T, path string) *restartRig {
	r := &restartRig{t: t, clock: &fakeClock{t: t0}, hook: newRecorder(t), pd: newRecorder(t), am: newRecorder(t),
		path: path, logs: &strings.Builder{}}
	r.pd.okStatus = http.StatusAccepted
	r.store = &memStore{clock: r.clock.Now}
	r.retry = RetryConfig{Backoff: 5 * time.Millisecond}
	return r
}

// start is one process start: a new Alerter with a fresh registry. The
// previous Alerter is not closed first (as after kill -9); it simply
// evaluates no more.
func (r *restartRig) start() *Alerter {
	r.t.Helper()
	cfg := Config{
		// for: 30s spans two evaluations, so an alert restored as pending
		// instead of firing would be visible.
		Down:           DownRule{For: 30 * time.Second},
		RepeatInterval: time.Hour,
		Retry:          r.retry,
		Receivers: []Receiver{
			{Name: "ops", Webhook: &WebhookConfig{URL: Secret(r.hook.srv.URL + "/hook")}},
			{Name: "pd", PagerDuty: &PagerDutyConfig{RoutingKey: "rk", URL: r.pd.srv.URL + "/v2/enqueue"}},
			{Name: "am", Alertmanager: &AlertmanagerConfig{URL: r.am.srv.URL}},
		},
	}
	r.reg = prometheus.NewRegistry()
	a, err := New(cfg, nil, r.store, Options{Now: r.clock.Now, Registry: r.reg, StatePath: r.path,
		Log: slog.New(slog.NewTextHandler(lockedWriter{r.logs}, nil))})
	if err != nil {
		r.t.Fatalf("New: %v", err)
	}
	r.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Close(ctx)
	})
	return a
}

// step advances the clock 15s, publishes one eu verdict for asset ×
// origin-a, evaluates with a and waits for the deliveries.
func (r *restartRig) step(a *Alerter, st reporting.State) {
	r.t.Helper()
	r.evaluate(a, st)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Flush(ctx); err != nil {
		r.t.Fatalf("Flush: %v", err)
	}
}

// evaluate is step without waiting for the deliveries.
func (r *restartRig) evaluate(a *Alerter, st reporting.State) {
	r.t.Helper()
	now := r.clock.Add(15 * time.Second)
	r.store.add(verdict("asset", "origin-a", "eu", now.Add(-time.Second), st, 15*time.Second))
	if err := a.Evaluate(context.Background()); err != nil {
		r.t.Fatalf("Evaluate: %v", err)
	}
}

// fire runs a from healthy to a firing, notified down alert and returns
// when it started firing.
func (r *restartRig) fire(a *Alerter) time.Time {
	r.t.Helper()
	r.step(a, H)
	r.step(a, U) // pending
	r.step(a, U) // 15s of 30s
	r.step(a, U) // fires
	if len(a.Active()) != 1 || len(r.hook.all()) != 1 || len(r.pd.all()) != 1 {
		r.t.Fatalf("before the restart: active %d, webhook %d, pagerduty %d; want 1, 1, 1",
			len(a.Active()), len(r.hook.all()), len(r.pd.all()))
	}
	return r.clock.Now()
}

// editState rewrites the state file as edit changes its JSON (decoded as
// maps and slices), as an older version or a hand would have written it.
func (r *restartRig) editState(edit func(f map[string]any)) {
	r.t.Helper()
	b, err := os.ReadFile(r.path)
	if err != nil {
		r.t.Fatal(err)
	}
	var f map[string]any
	if err := json.Unmarshal(b, &f); err != nil {
		r.t.Fatal(err)
	}
	edit(f)
	if b, err = json.Marshal(f); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(r.path, b, 0o600); err != nil {
		r.t.Fatal(err)
	}
}

// pdEvents decodes the PagerDuty recorder's requests.
func (r *restartRig) pdEvents() []pdEvent {
	r.t.Helper()
	var out []pdEvent
	for _, rec := range r.pd.all() {
		var ev pdEvent
		if err := json.Unmarshal(rec.Body, &ev); err != nil {
			r.t.Fatalf("pagerduty body: %v: %s", err, rec.Body)
		}
		out = append(out, ev)
	}
	return out
}

// TestRestartKeepsFiringAlert: an alert firing before a restart whose
// condition still holds stays firing (same StartsAt, no new for: wait) and
// is not notified again until repeat_interval after its last notification.
func TestRestartKeepsFiringAlert(t *testing.T) {
	r := newRestartRig(t, filepath.Join(t.TempDir(), "alerts.json"))
	firedAt := r.fire(r.start())

	a := r.start()
	if act := a.Active(); len(act) != 1 || !act[0].StartsAt.Equal(firedAt) {
		t.Fatalf("restored before any evaluation: %+v, want one alert firing since %s", act, firedAt)
	}
	r.step(a, U)
	if act := a.Active(); len(act) != 1 || !act[0].StartsAt.Equal(firedAt) {
		t.Fatalf("first evaluation after the restart: %+v, want still firing since %s", act, firedAt)
	}
	if n, p := len(r.hook.all()), len(r.pd.all()); n != 1 || p != 1 {
		t.Fatalf("after the restart: webhook %d, pagerduty %d notifications; want 1 each (no duplicate)", n, p)
	}

	// repeat_interval (1h) counts from the notification before the restart.
	r.clock.Set(firedAt.Add(time.Hour - 30*time.Second))
	r.step(a, U)
	if n := len(r.hook.all()); n != 1 {
		t.Fatalf("15s before repeat_interval: %d webhook notifications, want 1", n)
	}
	r.step(a, U)
	hooks := r.hook.webhooks(t)
	if len(hooks) != 2 || hooks[1].Status != StatusFiring || !hooks[1].Alerts[0].StartsAt.Equal(firedAt) {
		t.Fatalf("at repeat_interval: %+v, want a second firing notification", hooks)
	}
	evs := r.pdEvents()
	if len(evs) != 2 || evs[1].EventAction != "trigger" || evs[1].DedupKey != evs[0].DedupKey {
		t.Fatalf("pagerduty at repeat_interval: %+v", evs)
	}
}

// TestRestartResolvesAlertClearedWhileDown: an alert that fired before a
// restart and whose condition cleared while the alerter was down gets
// exactly one resolved notification, with the same identity as the firing
// one, on the first evaluation after the restart.
func TestRestartResolvesAlertClearedWhileDown(t *testing.T) {
	r := newRestartRig(t, filepath.Join(t.TempDir(), "alerts.json"))
	firedAt := r.fire(r.start())
	firing := r.hook.webhooks(t)[0].Alerts[0]

	r.clock.Add(10 * time.Minute) // down for a while; the check recovered
	a := r.start()
	r.step(a, H)
	resolvedAt := r.clock.Now()
	r.step(a, H)

	if len(a.Active()) != 0 {
		t.Fatalf("still active: %+v", a.Active())
	}
	hooks := r.hook.webhooks(t)
	if len(hooks) != 2 {
		t.Fatalf("%d webhook notifications, want firing + one resolved", len(hooks))
	}
	res := hooks[1]
	if res.Status != StatusResolved || res.GroupKey != "down/asset/page" || len(res.Alerts) != 1 {
		t.Fatalf("resolved notification: %+v", res)
	}
	got := res.Alerts[0]
	if got.Status != StatusResolved || got.Fingerprint != firing.Fingerprint || got.Labels["target"] != "origin-a" ||
		!got.StartsAt.Equal(firedAt) || got.EndsAt == nil || !got.EndsAt.Equal(resolvedAt) {
		t.Fatalf("resolved alert: %+v, firing one was %+v", got, firing)
	}

	evs := r.pdEvents()
	if len(evs) != 2 || evs[0].EventAction != "trigger" || evs[1].EventAction != "resolve" ||
		evs[1].DedupKey != evs[0].DedupKey || evs[1].DedupKey != "vigil/down/asset/origin-a/page" {
		t.Fatalf("pagerduty events: %+v", evs)
	}

	// Alertmanager: the last post carries the alert with endsAt = the
	// resolve time and the labels it was posted with while firing.
	var ended []amAlert
	for _, rec := range r.am.all() {
		var as []amAlert
		if err := json.Unmarshal(rec.Body, &as); err != nil {
			t.Fatalf("alertmanager body: %v", err)
		}
		for _, x := range as {
			if x.EndsAt.Equal(resolvedAt) {
				ended = append(ended, x)
			}
		}
	}
	if len(ended) != 1 || ended[0].Labels["alertname"] != "VigilCheckDown" || ended[0].Labels["target"] != "origin-a" {
		t.Fatalf("alertmanager resolved alerts: %+v", ended)
	}

	// The resolve was saved: another restart sends nothing more.
	a = r.start()
	r.step(a, H)
	if n, p := len(r.hook.all()), len(r.pd.all()); n != 2 || p != 2 {
		t.Fatalf("after a second restart: webhook %d, pagerduty %d; want 2, 2", n, p)
	}
}

// TestStateSavedOnChangeOnly: the state file is rewritten when what fires
// or what was notified changes, not on every evaluation.
func TestStateSavedOnChangeOnly(t *testing.T) {
	r := newRestartRig(t, filepath.Join(t.TempDir(), "alerts.json"))
	a := r.start()
	r.step(a, H)
	if _, err := os.Stat(r.path); err == nil {
		t.Fatal("state file written while nothing ever fired")
	}
	r.fire(a)
	before, err := os.ReadFile(r.path)
	if err != nil {
		t.Fatalf("state file after firing: %v", err)
	}
	r.step(a, U)
	r.step(a, U)
	if after, _ := os.ReadFile(r.path); !bytes.Equal(before, after) {
		t.Fatal("state file rewritten although nothing changed")
	}
	r.step(a, H)
	f, err := readState(r.path)
	if err != nil {
		t.Fatalf("state file after the resolve: %v", err)
	}
	if len(f.Alerts) != 0 || len(f.Groups) != 0 || f.Version != stateVersion {
		t.Fatalf("state after the resolve: %+v", f)
	}
	matches, _ := filepath.Glob(r.path + ".*")
	if len(matches) != 0 {
		t.Fatalf("left-over temporary files: %v", matches)
	}
}

// TestCorruptStateFile: a state file that cannot be used is logged with
// its path and the reason, moved to alerts.json.bad unchanged, and the
// alerter starts fresh and saves a new state.
func TestCorruptStateFile(t *testing.T) {
	for _, tc := range []struct {
		name, body, reason string
	}{
		{"truncated", `{"version": 1, "alerts": [{"alert": {"Rule": "do`, "unexpected end of JSON input"},
		{"other version", `{"version": 99}`, "version 99, want 1 to 2"},
		{"undelivered without receiver", `{"version": 2, "groups": [{"key": "down/asset/page", "undelivered": [{"firing": true}]}]}`,
			"groups[0] (down/asset/page) undelivered[0] has no receiver"},
		{"alert without fingerprint", `{"version": 1, "alerts": [{"alert": {"Rule": "down"}, "firing": true}]}`,
			"alerts[0] has no fingerprint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRestartRig(t, filepath.Join(t.TempDir(), "alerts.json"))
			if err := os.WriteFile(r.path, []byte(tc.body), 0o600); err != nil {
				t.Fatal(err)
			}
			a := r.start()
			logs := r.logs.String()
			if !strings.Contains(logs, "level=ERROR") || !strings.Contains(logs, r.path) ||
				!strings.Contains(logs, tc.reason) || !strings.Contains(logs, r.path+".bad") {
				t.Fatalf("log lacks the path, the reason %q or where the file went:\n%s", tc.reason, logs)
			}
			if b, err := os.ReadFile(r.path + ".bad"); err != nil || string(b) != tc.body {
				t.Fatalf("moved-aside file: %q, %v; want the original bytes", b, err)
			}
			if len(a.Active()) != 0 {
				t.Fatalf("active after a bad state file: %+v", a.Active())
			}
			r.fire(a) // fresh start: fires and notifies as usual
			if _, err := readState(r.path); err != nil {
				t.Fatalf("new state file: %v", err)
			}
			if b, _ := os.ReadFile(r.path + ".bad"); string(b) != tc.body {
				t.Fatal("moved-aside file changed")
			}
		})
	}
}

// TestNoStatePath: without Options.StatePath nothing is written and a new
// Alerter knows nothing of the previous one's alerts (the in-memory
// behaviour): the alert goes through for: again and is notified again.
func TestNoStatePath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	r := newRestartRig(t, "")
	r.fire(r.start())
	a := r.start()
	r.step(a, U)
	if len(a.Active()) != 0 {
		t.Fatalf("active on the first evaluation without state: %+v", a.Active())
	}
	r.step(a, U)
	r.step(a, U)
	if n := len(r.hook.all()); n != 2 {
		t.Fatalf("%d webhook notifications, want the firing one again after for:", n)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("files written without a StatePath: %v", ents)
	}
}

// TestRestartResolvesFromGroupAlone: the notified alerts kept with their
// group are enough to send the resolve, even when the file lists no alert
// states (written by hand, or cut short by an editor).
func TestRestartResolvesFromGroupAlone(t *testing.T) {
	r := newRestartRig(t, filepath.Join(t.TempDir(), "alerts.json"))
	r.fire(r.start())
	f, err := readState(r.path)
	if err != nil {
		t.Fatal(err)
	}
	f.Alerts = nil
	b, _ := json.Marshal(f)
	if err := os.WriteFile(r.path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	firing := r.hook.webhooks(t)[0].Alerts[0]

	a := r.start()
	r.step(a, H)
	hooks := r.hook.webhooks(t)
	if len(hooks) != 2 || hooks[1].Status != StatusResolved || hooks[1].Alerts[0].Fingerprint != firing.Fingerprint {
		t.Fatalf("webhook notifications: %+v", hooks)
	}
	if evs := r.pdEvents(); len(evs) != 2 || evs[1].EventAction != "resolve" || evs[1].DedupKey != evs[0].DedupKey {
		t.Fatalf("pagerduty events: %+v", evs)
	}
}

// TestRestartFromFileWithoutTold: a state file written before groups kept
// the receivers told of them (no "told") still gets the resolve to every
// receiver, as before; one with "told" gets it to those named only.
func TestRestartFromFileWithoutTold(t *testing.T) {
	for _, tc := range []struct {
		name     string
		told     any // written in place of the group's told; nil: key removed
		wantHook int
	}{
		{"no told key", nil, 2},
		{"told pd only", []string{"pd"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRestartRig(t, filepath.Join(t.TempDir(), "alerts.json"))
			r.fire(r.start())
			r.editState(func(f map[string]any) {
				for _, g := range f["groups"].([]any) {
					gm := g.(map[string]any)
					if got := fmt.Sprint(gm["told"]); got != "[ops pd]" {
						t.Fatalf("told saved as %s, want [ops pd]", got)
					}
					if tc.told == nil {
						delete(gm, "told")
					} else {
						gm["told"] = tc.told
					}
				}
			})
			a := r.start()
			r.step(a, H)
			hooks := r.hook.webhooks(t)
			if len(hooks) != tc.wantHook || (tc.wantHook == 2 && hooks[1].Status != StatusResolved) {
				t.Fatalf("webhook: %+v, want %d notifications", hooks, tc.wantHook)
			}
			evs := r.pdEvents()
			if len(evs) != 2 || evs[1].EventAction != "resolve" {
				t.Fatalf("pagerduty: %+v, want trigger then resolve", evs)
			}
		})
	}
}

// TestRestartFromFileWithoutToldSavedBeforeNotify: a group restored from a
// file without "told" and saved again before any notification (here: an
// evaluation after Close, the alert resolved) keeps told absent, so after
// the next restart every receiver still counts as told and is sent the
// resolve (saved as [], no receiver would be).
func TestRestartFromFileWithoutToldSavedBeforeNotify(t *testing.T) {
	r := newRestartRig(t, filepath.Join(t.TempDir(), "alerts.json"))
	r.fire(r.start())
	r.editState(func(f map[string]any) {
		for _, g := range f["groups"].([]any) {
			delete(g.(map[string]any), "told")
		}
	})
	a := r.start()
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.evaluate(a, H) // resolved, saved, nothing sent
	if n, p := len(r.hook.all()), len(r.pd.all()); n != 1 || p != 1 {
		t.Fatalf("after Close: webhook %d, pagerduty %d; want 1, 1 (nothing sent)", n, p)
	}
	a = r.start()
	r.step(a, H)
	if hooks := r.hook.webhooks(t); len(hooks) != 2 || hooks[1].Status != StatusResolved {
		t.Fatalf("webhook: %+v, want firing then resolved", hooks)
	}
	if evs := r.pdEvents(); len(evs) != 2 || evs[1].EventAction != "resolve" {
		t.Fatalf("pagerduty: %+v, want trigger then resolve", evs)
	}
}

// TestRestartStreamedTo: the state file names the Alertmanagers that hold
// a firing alert (streamed_to); after a restart only those are sent its
// resolve. A file without streamed_to (older) but with streamed: true
// counts every Alertmanager as holding it, as before.
func TestRestartStreamedTo(t *testing.T) {
	for _, tc := range []struct {
		name       string
		streamedTo any // written in place of streamed_to; nil: key removed
		wantAM     bool
	}{
		{"as saved", []string{"am"}, true},
		{"no streamed_to key", nil, true},
		{"held by a receiver gone since", []string{"am-old"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRestartRig(t, filepath.Join(t.TempDir(), "alerts.json"))
			r.fire(r.start())
			r.editState(func(f map[string]any) {
				for _, s := range f["alerts"].([]any) {
					sm := s.(map[string]any)
					if got := fmt.Sprint(sm["streamed"], sm["streamed_to"]); got != "true [am]" {
						t.Fatalf("streamed, streamed_to saved as %s, want true [am]", got)
					}
					if tc.streamedTo == nil {
						delete(sm, "streamed_to")
					} else {
						sm["streamed_to"] = tc.streamedTo
					}
				}
			})
			before := len(r.am.all())
			a := r.start()
			r.step(a, H)
			posts := amPosts(t, r.am)[before:]
			got := len(posts) == 1 && len(posts[0]) == 1 && posts[0][0].EndsAt.Equal(r.clock.Now())
			if got != tc.wantAM || (!tc.wantAM && len(posts) != 0) {
				t.Fatalf("posts to am after the restart: %+v; want the resolve: %t", posts, tc.wantAM)
			}
		})
	}
}
