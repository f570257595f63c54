package alerting

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

const (
	H = reporting.StateHealthy
	U = reporting.StateUnhealthy
)

func TestDownQuorumRepeatResolve(t *testing.T) {
	cfg := Config{Quorum: 2, RepeatInterval: time.Hour, StatusPageURL: "http://127.0.0.1:9470",
		RunbookURL: "https://runbooks.example/{rule}/{check}"}
	h := newHarness(t, t0, cfg, nil)

	for range 10 {
		h.tick(map[string]reporting.State{"eu": H, "us": H, "ap": H})
	}
	// One region failing alone never fires, however long.
	for range 40 {
		h.tick(map[string]reporting.State{"eu": U, "us": H, "ap": H})
	}
	if n := len(h.hook.all()); n != 0 {
		t.Fatalf("one region of three failing: %d notifications, want 0", n)
	}
	if act := h.a.Active(); len(act) != 0 {
		t.Fatalf("one region failing: active %v", act)
	}

	// A second region agrees: pending for `for` (1m), then fires.
	h.tick(map[string]reporting.State{"eu": U, "us": U, "ap": H})
	agreed := h.clock.Now()
	for h.clock.Now().Before(agreed.Add(45 * time.Second)) {
		h.tick(map[string]reporting.State{"eu": U, "us": U, "ap": H})
	}
	if n := len(h.hook.all()); n != 0 {
		t.Fatalf("quorum for 45s < for(1m): %d notifications, want 0", n)
	}
	h.tick(map[string]reporting.State{"eu": U, "us": U, "ap": H})
	if !h.clock.Now().Equal(agreed.Add(time.Minute)) {
		t.Fatalf("clock %s", h.clock.Now())
	}
	got := h.hook.webhooks(t)
	if len(got) != 1 {
		t.Fatalf("after for: %d notifications, want 1", len(got))
	}
	firedAt := h.clock.Now()
	p := got[0]
	if p.Status != StatusFiring || p.Rule != RuleDown || p.Check != "asset" || p.Severity != SeverityPage || len(p.Alerts) != 1 {
		t.Fatalf("firing payload: %+v", p)
	}
	al := p.Alerts[0]
	if !reflect.DeepEqual(al.Regions, []string{"eu", "us"}) || al.Cause != "connect_refused" || al.Target != "origin-a" ||
		al.Labels["alertname"] != "VigilCheckDown" || !al.StartsAt.Equal(firedAt) {
		t.Fatalf("firing alert: %+v", al)
	}
	if al.StatusURL != "http://127.0.0.1:9470/check/asset?target=origin-a" || al.RunbookURL != "https://runbooks.example/down/asset" {
		t.Fatalf("links: status %q runbook %q", al.StatusURL, al.RunbookURL)
	}
	for _, want := range []string{"eu, us", "connect_refused", "runbook: https://runbooks.example/down/asset"} {
		if !strings.Contains(p.Text, want) {
			t.Errorf("text lacks %q:\n%s", want, p.Text)
		}
	}
	if v := counter(t, h.reg, "vigil_alerts_active", map[string]string{"rule": "down"}); v != 1 {
		t.Errorf("vigil_alerts_active{rule=down} = %v, want 1", v)
	}

	// De-duplication: nothing more until repeat_interval (1h) has passed.
	for h.clock.Now().Before(firedAt.Add(time.Hour - 15*time.Second)) {
		h.tick(map[string]reporting.State{"eu": U, "us": U, "ap": H})
	}
	if n := len(h.hook.all()); n != 1 {
		t.Fatalf("before repeat_interval: %d notifications, want 1", n)
	}
	h.tick(map[string]reporting.State{"eu": U, "us": U, "ap": H})
	got = h.hook.webhooks(t)
	if len(got) != 2 || got[1].Status != StatusFiring || !got[1].At.Equal(firedAt.Add(time.Hour)) {
		t.Fatalf("at repeat_interval: %d notifications (%+v), want a repeat at %s", len(got), got[len(got)-1], firedAt.Add(time.Hour))
	}

	// Back below quorum: resolved at once.
	h.tick(map[string]reporting.State{"eu": U, "us": H, "ap": H})
	got = h.hook.webhooks(t)
	if len(got) != 3 {
		t.Fatalf("after recovery: %d notifications, want 3", len(got))
	}
	r := got[2]
	if r.Status != StatusResolved || len(r.Alerts) != 1 || r.Alerts[0].Status != StatusResolved ||
		r.Alerts[0].EndsAt == nil || !r.Alerts[0].EndsAt.Equal(h.clock.Now()) {
		t.Fatalf("resolved payload: %+v", r)
	}
	if len(h.a.Active()) != 0 {
		t.Fatalf("active after resolve: %v", h.a.Active())
	}
	for range 20 {
		h.tick(map[string]reporting.State{"eu": U, "us": H, "ap": H})
	}
	if n := len(h.hook.all()); n != 3 {
		t.Fatalf("after resolve: %d notifications, want 3", n)
	}
	if v := counter(t, h.reg, "vigil_alert_notifications_total", map[string]string{"receiver": "ops", "result": "success"}); v != 3 {
		t.Errorf("notifications success = %v, want 3", v)
	}
	if v := counter(t, h.reg, "vigil_alerts_active", map[string]string{"rule": "down"}); v != 0 {
		t.Errorf("vigil_alerts_active{rule=down} = %v, want 0", v)
	}
}

func TestStaleVerdictsDoNotCount(t *testing.T) {
	h := newHarness(t, t0, Config{Quorum: 2, Down: DownRule{For: time.Second}}, nil)
	// us published unhealthy once, long ago: expired, so it is not fresh.
	h.store.add(verdict("asset", "origin-a", "us", t0.Add(-10*time.Minute), U, 15*time.Second))
	for range 10 {
		h.tick(map[string]reporting.State{"eu": U})
	}
	for _, a := range h.a.Active() {
		if a.Rule == RuleDown {
			t.Fatalf("stale verdict counted: %+v", a)
		}
	}
}

func TestMaintenanceSilences(t *testing.T) {
	sunday := time.Date(2026, 11, 29, 1, 50, 0, 0, time.UTC) // a Sunday
	cfg := Config{Quorum: 2, Maintenance: []Maintenance{{Name: "weekly", Cron: "0 2 * * SUN", Duration: 2 * time.Hour}}}
	h := newHarness(t, sunday, cfg, nil)
	both := func(st reporting.State, st2 reporting.State) {
		now := h.clock.Add(h.interval)
		for _, r := range []string{"eu", "us"} {
			h.store.add(verdict("asset", "origin-a", r, now.Add(-time.Second), st, h.interval))
			h.store.add(verdict("asset", "origin-b", r, now.Add(-time.Second), st2, h.interval))
		}
		h.eval()
	}
	for h.clock.Now().Before(sunday.Add(20 * time.Minute)) { // 02:10
		both(H, H)
	}
	// origin-a goes down at 02:10 and stays down past the window;
	// origin-b goes down 02:20–02:40 only.
	for h.clock.Now().Before(sunday.Add(30 * time.Minute)) {
		both(U, H)
	}
	for h.clock.Now().Before(sunday.Add(50 * time.Minute)) {
		both(U, U)
	}
	act := h.a.Active()
	if len(act) != 2 || act[0].Silenced != "weekly" {
		t.Fatalf("inside the window: active %+v, want 2 silenced", act)
	}
	for h.clock.Now().Before(time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC).Add(-h.interval)) {
		both(U, H)
	}
	if n := len(h.hook.all()); n != 0 {
		t.Fatalf("inside the maintenance window: %d notifications, want 0", n)
	}
	both(U, H) // 04:00:00, the window is over
	got := h.hook.webhooks(t)
	if len(got) != 1 || got[0].Status != StatusFiring || len(got[0].Alerts) != 1 || got[0].Alerts[0].Target != "origin-a" {
		t.Fatalf("after the window: %+v, want one firing notification for origin-a", got)
	}
	if !got[0].At.Equal(time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC)) {
		t.Fatalf("notified at %s, want 04:00", got[0].At)
	}
}

func TestMaintenanceActive(t *testing.T) {
	m := Maintenance{Name: "m", Cron: "0 2 * * SUN", Duration: 2 * time.Hour, Checks: []string{"asset"}}
	if err := m.ValidateAndSetDefaults(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		at    time.Time
		check string
		want  bool
	}{
		{time.Date(2026, 11, 29, 1, 59, 59, 0, time.UTC), "asset", false},
		{time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC), "asset", true},
		{time.Date(2026, 11, 29, 3, 59, 59, 0, time.UTC), "asset", true},
		{time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC), "asset", false},
		{time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC), "other", false},
		{time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC), "asset", false},
	} {
		if got := m.Active(tc.at, tc.check); got != tc.want {
			t.Errorf("Active(%s, %s) = %v, want %v", tc.at, tc.check, got, tc.want)
		}
	}
}

func TestDeadMan(t *testing.T) {
	h := newHarness(t, t0, Config{}, nil)
	publish := func(regions ...string) {
		for _, r := range regions {
			h.store.add(verdict("asset", "origin-a", r, h.clock.Now(), H, time.Minute))
		}
	}
	// Both regions publish every minute; us stops after 10:05.
	for i := 0; i <= 5; i++ {
		publish("eu", "us")
		for range 4 {
			h.clock.Add(15 * time.Second)
			h.eval()
		}
	}
	stop := t0.Add(5 * time.Minute)
	for h.clock.Now().Before(stop.Add(3 * time.Minute)) {
		if h.clock.Now().Second() == 0 {
			publish("eu")
		}
		h.clock.Add(15 * time.Second)
		h.eval()
	}
	// exactly 3 × 1m silent: not yet (the limit is "older than").
	if n := len(h.hook.all()); n != 0 {
		t.Fatalf("at 3 intervals: %d notifications, want 0", n)
	}
	step := func() {
		if h.clock.Now().Second() == 0 {
			publish("eu")
		}
		h.clock.Add(15 * time.Second)
		h.eval()
	}
	// Past the limit the pair is pending for dead_man.for (default 2 ×
	// the interval): silent 3m15s … 5m, nothing is sent.
	for range 8 {
		step()
		if n := len(h.hook.all()); n != 0 {
			t.Fatalf("%s silent, within dead_man.for: %d notifications, want 0", h.clock.Now().Sub(stop), n)
		}
	}
	step()
	got := h.hook.webhooks(t)
	if len(got) != 1 || got[0].Rule != RuleDeadMan || got[0].Alerts[0].Region != "us" || got[0].Alerts[0].Labels["region"] != "us" {
		t.Fatalf("dead-man: %+v", got)
	}
	publish("eu", "us")
	h.clock.Add(15 * time.Second)
	h.eval()
	got = h.hook.webhooks(t)
	if len(got) != 2 || got[1].Status != StatusResolved {
		t.Fatalf("dead-man after us resumed: %+v", got)
	}
}

// TestDeadManWaitsForStoreBacklog: the store's reads fail for 40s; the
// canaries cannot write meanwhile and deliver their backlog 25s after reads
// work again (their retry backoff). No region is reported silent for it, a
// dead-man alert firing before the outage stays firing, and once the grace
// (window + WriterMaxBackoff) has passed a canary that stops is caught at 3
// intervals as usual.
func TestDeadManWaitsForStoreBacklog(t *testing.T) {
	// dead_man.for 5s: one evaluation past the window.
	h := newHarness(t, t0, Config{DeadMan: DeadManRule{For: 5 * time.Second}}, nil)
	const every = 15 * time.Second // the canaries' interval: dead-man window 45s
	var (
		publishing = map[string]bool{"eu": true, "us": true, "ap": true}
		writesDown bool
		outbox     []reporting.Verdict
		want       []string // regions with a dead-man alert after every step; nil: unchecked
	)
	deadMan := func() []string {
		var out []string
		for _, a := range h.a.Active() {
			if a.Rule == RuleDeadMan {
				out = append(out, a.Region)
			}
		}
		return out
	}
	// step advances 5s: the publishing regions run on every 15s boundary,
	// then the alerter evaluates (failing while the store's reads fail).
	step := func() {
		t.Helper()
		now := h.clock.Add(5 * time.Second)
		if now.Sub(t0)%every == 0 {
			for r, on := range publishing {
				if !on {
					continue
				}
				v := verdict("asset", "origin-a", r, now, H, every)
				if writesDown {
					outbox = append(outbox, v)
				} else {
					h.store.add(v)
				}
			}
		}
		err := h.a.Evaluate(context.Background())
		if (err != nil) != (h.store.err != nil) {
			t.Fatalf("Evaluate at +%s: %v (store error %v)", now.Sub(t0), err, h.store.err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.a.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if got := deadMan(); want != nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("+%s: dead-man for %v, want %v", now.Sub(t0), got, want)
		}
	}
	until := func(d time.Duration) {
		t.Helper()
		for h.clock.Now().Before(t0.Add(d)) {
			step()
		}
	}
	// ap stops after +1m and is reported silent: its last verdict is 50s
	// old at +1m50s, and 5s later (dead_man.for) the alert fires.
	until(time.Minute)
	publishing["ap"] = false
	until(time.Minute + 50*time.Second)
	if got := deadMan(); len(got) != 0 {
		t.Fatalf("+1m50s: dead-man for %v, want none yet (dead_man.for)", got)
	}
	until(time.Minute + 55*time.Second)
	if got := deadMan(); !reflect.DeepEqual(got, []string{"ap"}) {
		t.Fatalf("+1m55s: dead-man for %v, want [ap]", got)
	}
	want = []string{"ap"}
	until(3 * time.Minute)

	// Outage: reads fail from +3m (evaluations +3m05s … +3m40s), writes
	// fail until +4m05s, when the outbox is delivered.
	h.store.err = errors.New("influxdb: 503 Service Unavailable")
	writesDown = true
	until(3*time.Minute + 40*time.Second)
	h.store.err = nil
	until(4*time.Minute + 5*time.Second)
	h.store.add(outbox...)
	writesDown = false
	until(6 * time.Minute)
	got := h.hook.webhooks(t)
	if len(got) != 1 || got[0].Rule != RuleDeadMan || got[0].Status != StatusFiring || got[0].Alerts[0].Region != "ap" {
		t.Fatalf("notifications through the outage: %+v", got)
	}

	// Long after the outage, us stops after +6m: caught when its last
	// verdict is more than 3 intervals old, at +6m50s, firing 5s later.
	publishing["us"] = false
	until(6*time.Minute + 50*time.Second) // pending from +6m50s
	want = nil
	step()
	if got := deadMan(); !reflect.DeepEqual(got, []string{"ap", "us"}) {
		t.Fatalf("+6m55s: dead-man for %v, want [ap us]", got)
	}
}

func TestTTFBQuorum(t *testing.T) {
	slo := SLO{Name: "asset-ttfb", Check: "asset", TTFBP95: 600 * time.Millisecond, Window: 5 * time.Minute}
	h := newHarness(t, t0, Config{Quorum: 2}, []SLO{slo})
	ttfb := map[string]time.Duration{"eu": 200 * time.Millisecond, "us": 200 * time.Millisecond, "ap": 200 * time.Millisecond}
	step := func() {
		now := h.clock.Add(15 * time.Second)
		for r, d := range ttfb {
			v := verdict("asset", "origin-a", r, now.Add(-time.Second), H, 15*time.Second)
			v.TTFB = d
			h.store.add(v)
		}
		h.eval()
	}
	for range 40 {
		step()
	}
	ttfb["eu"] = 900 * time.Millisecond
	for range 40 {
		step()
	}
	if n := len(h.hook.all()); n != 0 {
		t.Fatalf("one slow region: %d notifications", n)
	}
	ttfb["us"] = 800 * time.Millisecond
	// 20 runs per 5m: the nearest-rank p95 is the 19th, so the 2nd slow run breaches.
	step()
	if n := len(h.hook.all()); n != 0 {
		t.Fatalf("one slow run in us: %d notifications", n)
	}
	step()
	got := h.hook.webhooks(t)
	if len(got) != 1 || got[0].Rule != RuleTTFB || got[0].Alerts[0].SLO != "asset-ttfb" ||
		!reflect.DeepEqual(got[0].Alerts[0].Regions, []string{"eu", "us"}) || got[0].Alerts[0].TTFBMs != 900 {
		t.Fatalf("ttfb: %+v", got)
	}
	ttfb["us"] = 200 * time.Millisecond
	// The breach ends once fewer than 2 slow us runs are in the window: the
	// first slow run leaves it 20 runs (5m) after it was published. The
	// alert keeps firing for ttfb.keep_firing_for (default: the window,
	// 5m) after that, so a p95 that crosses the objective as single slow
	// runs enter and leave the window does not fire and resolve each time.
	for range 19 {
		step()
	}
	if n := len(h.hook.all()); n != 1 || len(h.a.Active()) != 1 {
		t.Fatalf("breach just ended: %d notifications, active %d", n, len(h.a.Active()))
	}
	// Two slow us runs 3m into the hold: the breach is back, and it is
	// the same alert. It ends again 20 runs later, and the alert resolves
	// 5m (20 runs) after that.
	for range 10 {
		step()
	}
	ttfb["us"] = 800 * time.Millisecond
	step()
	step()
	ttfb["us"] = 200 * time.Millisecond
	for range 38 {
		step()
	}
	if n := len(h.hook.all()); n != 1 || len(h.a.Active()) != 1 {
		t.Fatalf("breach came back within 5m: %d notifications, active %d", n, len(h.a.Active()))
	}
	step()
	got = h.hook.webhooks(t)
	if len(got) != 2 || got[1].Status != StatusResolved {
		t.Fatalf("ttfb resolve 5m after the breach ended: %+v", got)
	}
}

func TestStoreErrorKeepsState(t *testing.T) {
	h := newHarness(t, t0, Config{Down: DownRule{For: time.Second}}, nil)
	h.tick(map[string]reporting.State{"eu": U})
	h.tick(map[string]reporting.State{"eu": U})
	if len(h.a.Active()) != 1 {
		t.Fatalf("active: %v", h.a.Active())
	}
	h.store.err = errors.New("database is locked")
	h.clock.Add(time.Minute)
	if err := h.a.Evaluate(context.Background()); err == nil {
		t.Fatal("Evaluate with a failing store: nil error")
	}
	if len(h.a.Active()) != 1 || len(h.hook.all()) != 1 {
		t.Fatalf("store error changed state: active %v, %d notifications", h.a.Active(), len(h.hook.all()))
	}
	if v := counter(t, h.reg, "vigil_alert_evaluation_errors_total", nil); v != 1 {
		t.Fatalf("evaluation errors = %v", v)
	}
}

// burnEvent is a change of a burn-rate alert's firing windows.
type burnEvent struct {
	At       time.Duration // after the first failed run
	Severity string
	Windows  string // "" once resolved
}

func (e burnEvent) String() string { return fmt.Sprintf("+%s %s [%s]", e.At, e.Severity, e.Windows) }

// TestBurnRatePairs feeds three days of one run per minute per region, then
// failures in failing regions for 10 minutes, and records every moment the
// page and ticket alerts change their firing windows. Objective 99.9%: the
// thresholds are 1.44% (1h/5m), 0.6% (6h/30m), 0.3% (1d/2h), 0.1% (3d/6h).
func TestBurnRatePairs(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 6 hours minute by minute")
	}
	for _, tc := range []struct {
		name    string
		failing []string
		want    []burnEvent
	}{
		{"one region of three", []string{"eu"}, nil},
		{"two regions of three", []string{"eu", "us"}, []burnEvent{
			// 1 failed run: 1/5 over 5m, 1/60 over 1h.
			{0, SeverityPage, "1h/5m"},
			// 3 failed runs: 3/360 = 0.83% over 6h.
			{2 * time.Minute, SeverityPage, "1h/5m,6h/30m"},
			// 5 failed runs: 5/1440 = 0.35% over 1d, 5/4320 = 0.12% over 3d.
			{4 * time.Minute, SeverityTicket, "1d/2h,3d/6h"},
			// The last failure (minute 9) leaves the 5m window at minute 14 …
			{14 * time.Minute, SeverityPage, "6h/30m"},
			// … the 30m window at minute 39, the 2h at 129, the 6h at 369.
			{39 * time.Minute, SeverityPage, ""},
			{129 * time.Minute, SeverityTicket, "3d/6h"},
			{369 * time.Minute, SeverityTicket, ""},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slo := SLO{Name: "asset-availability", Check: "asset", Objective: 99.9}
			start := t0.Add(-72 * time.Hour)
			// keep_firing_for: 0s, to see when each pair stops holding.
			cfg := Config{Quorum: 2, RepeatInterval: 24 * time.Hour}
			cfg.SetKeys([]string{"burn_rate.keep_firing_for"})
			h := newHarness(t, start, cfg, []SLO{slo})
			fail := t0 // the first failed run is at t0+10s
			failing := map[string]bool{}
			for _, r := range tc.failing {
				failing[r] = true
			}
			var vs []reporting.Verdict
			for m := start; m.Before(t0.Add(7 * time.Hour)); m = m.Add(time.Minute) {
				for _, r := range []string{"eu", "us", "ap"} {
					st := H
					if failing[r] && !m.Before(fail) && m.Before(fail.Add(10*time.Minute)) {
						st = U
					}
					v := verdict("asset", "origin-a", r, m.Add(10*time.Second), st, time.Minute)
					v.Expires = v.At.Add(24 * time.Hour) // keep down/dead-man quiet
					vs = append(vs, v)
				}
			}
			h.store.add(vs...)
			h.a.cfg.Down.Disabled = true

			var events []burnEvent
			last := map[string]string{}
			for m := fail.Add(-10 * time.Minute); m.Before(fail.Add(380 * time.Minute)); m = m.Add(time.Minute) {
				h.clock.Set(m.Add(30 * time.Second))
				if err := h.a.Evaluate(context.Background()); err != nil {
					t.Fatal(err)
				}
				cur := map[string]string{}
				for _, a := range h.a.Active() {
					if a.Rule == RuleBurnRate {
						cur[a.Severity] = strings.Join(a.Windows, ",")
					}
				}
				for _, sev := range []string{SeverityPage, SeverityTicket} {
					if cur[sev] != last[sev] {
						events = append(events, burnEvent{m.Sub(fail), sev, cur[sev]})
					}
				}
				last = cur
			}
			if fmt.Sprint(events) != fmt.Sprint(tc.want) {
				t.Fatalf("burn-rate events:\n got %v\nwant %v", events, tc.want)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = h.a.Flush(ctx)
			if len(tc.want) == 0 {
				if n := len(h.hook.all()); n != 0 {
					t.Fatalf("%d notifications, want 0", n)
				}
				return
			}
			// A change of windows is not a new alert: fire and resolve only.
			var statuses []string
			for _, p := range h.hook.webhooks(t) {
				statuses = append(statuses, p.Severity+":"+p.Status)
			}
			want := "page:firing ticket:firing page:resolved ticket:resolved"
			if strings.Join(statuses, " ") != want {
				t.Fatalf("notifications %v, want %s", statuses, want)
			}
		})
	}
}

// TestBurnRateMinRuns: with the ratios of the runs made alone (interval
// unknown), a new check's first failed run is 1 of 5 runs in the last
// hour (a 200× burn of 99.9%) and must not page; the page pairs fire once
// the region has burn_rate.min_runs (10) runs in the long window. With the
// interval known (15s: 240 runs expected over 1h), 1 failed of 10 is 4.2×
// and pages nobody, while a check failing every run pages at its 10th.
func TestBurnRateMinRuns(t *testing.T) {
	slo := SLO{Name: "asset-availability", Check: "asset", Objective: 99.9}
	h := newHarness(t, t0, Config{Down: DownRule{Disabled: true}, BurnRate: BurnRateRule{NoTicket: true}}, []SLO{slo})
	h.unknownInterval = true
	for range 4 {
		h.tick(map[string]reporting.State{"eu": H})
	}
	h.tick(map[string]reporting.State{"eu": U})
	if got := h.hook.webhooks(t); len(got) != 0 {
		t.Fatalf("5 runs, 1 failed: %+v", got)
	}
	for range 4 { // 9 runs
		h.tick(map[string]reporting.State{"eu": H})
	}
	if got := h.hook.webhooks(t); len(got) != 0 {
		t.Fatalf("9 runs, 1 failed: %+v", got)
	}
	h.tick(map[string]reporting.State{"eu": H}) // 10 runs: 10% failed, 100× the budget
	got := h.hook.webhooks(t)
	if len(got) != 1 || got[0].Rule != RuleBurnRate || got[0].Severity != SeverityPage ||
		!strings.Contains(got[0].Alerts[0].Summary, "burning 100.0× over 1h/5m, 6h/30m in 1 region (eu)") {
		t.Fatalf("10 runs, 1 failed: %+v", got)
	}
	for range 10 { // 20 runs: still burning
		h.tick(map[string]reporting.State{"eu": H})
	}
	if got := h.hook.webhooks(t); len(got) != 1 || len(h.a.Active()) != 1 {
		t.Fatalf("20 runs, 1 failed: %d notifications, active %v", len(got), h.a.Active())
	}

	t.Run("interval known", func(t *testing.T) {
		h := newHarness(t, t0, Config{Down: DownRule{Disabled: true}, BurnRate: BurnRateRule{NoTicket: true}}, []SLO{slo})
		h.tick(map[string]reporting.State{"eu": U})
		for range 9 {
			h.tick(map[string]reporting.State{"eu": H})
		}
		if got := h.hook.webhooks(t); len(got) != 0 {
			t.Fatalf("10 runs, the first failed: %+v", got)
		}
		h = newHarness(t, t0, Config{Down: DownRule{Disabled: true}, BurnRate: BurnRateRule{NoTicket: true}}, []SLO{slo})
		for range 9 {
			h.tick(map[string]reporting.State{"eu": U})
		}
		if got := h.hook.webhooks(t); len(got) != 0 {
			t.Fatalf("9 runs, all failed: %+v", got)
		}
		h.tick(map[string]reporting.State{"eu": U}) // 10 of 240: 41.7×
		got := h.hook.webhooks(t)
		if len(got) != 1 || got[0].Rule != RuleBurnRate || got[0].Severity != SeverityPage ||
			!strings.Contains(got[0].Alerts[0].Summary, "burning 41.7× over 1h/5m, 6h/30m in 1 region (eu)") {
			t.Fatalf("10 runs, all failed: %+v", got)
		}
	})
}

// TestTTFBLongWindowFromRollups: a window above RawTTFBWindow is judged on
// the per-minute rollups (runs-weighted p95 of the minutes' p95s).
func TestTTFBLongWindowFromRollups(t *testing.T) {
	slo := SLO{Name: "asset-ttfb-day", Check: "asset", TTFBP95: 600 * time.Millisecond, Window: 24 * time.Hour}
	h := newHarness(t, t0, Config{Quorum: 2, DeadMan: DeadManRule{Disabled: true}}, []SLO{slo})
	var vs []reporting.Verdict
	for m := t0.Add(-24 * time.Hour); m.Before(t0); m = m.Add(time.Minute) {
		for r, d := range map[string]time.Duration{"eu": 900 * time.Millisecond, "us": 200 * time.Millisecond, "ap": 200 * time.Millisecond} {
			v := verdict("asset", "origin-a", r, m.Add(10*time.Second), H, time.Minute)
			v.TTFB = d
			// us is slow for 10% of its minutes: above the 5% a p95 tolerates.
			if r == "us" && m.Minute()%10 == 0 {
				v.TTFB = 700 * time.Millisecond
			}
			vs = append(vs, v)
		}
	}
	h.store.add(vs...)
	h.eval()
	got := h.hook.webhooks(t)
	if len(got) != 1 || got[0].Rule != RuleTTFB || !reflect.DeepEqual(got[0].Alerts[0].Regions, []string{"eu", "us"}) ||
		got[0].Alerts[0].TTFBMs != 900 {
		t.Fatalf("long-window TTFB: %+v", got)
	}
	st, err := h.a.SLOStatus(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 1 || st[0].Met || st[0].TTFBP95 != 900*time.Millisecond || st[0].Regions[0].Region != "ap" ||
		st[0].Regions[0].TTFBP95 != 200*time.Millisecond || st[0].Regions[2].TTFBP95 != 700*time.Millisecond {
		t.Fatalf("SLOStatus: %+v", st)
	}
}

// TestCertExpiryDays: a certificate expiring within cert_expiry_days in a
// quorum of regions fires the certificate rule with the days left (whole
// days in the summary, as the check counts them; exact in value); one that
// expires later, or a soon one seen by a single region, does not.
func TestCertExpiryDays(t *testing.T) {
	cfg := Config{Quorum: 2, CertExpiryDays: 14, Down: DownRule{Disabled: true}}
	h := newHarness(t, t0, cfg, nil)
	certAt := func(days float64) func(region string) time.Time {
		return func(string) time.Time { return h.clock.Now().Add(time.Duration(days * float64(24*time.Hour))) }
	}
	tick := func(expiry func(region string) time.Time, regions ...string) {
		now := h.clock.Add(h.interval)
		for _, r := range regions {
			v := verdict("asset", "origin-a", r, now.Add(-time.Second), H, h.interval)
			v.CertExpiry = expiry(r)
			h.store.add(v)
		}
		h.eval()
	}
	tick(certAt(30), "eu", "us", "ap")
	tick(func(r string) time.Time {
		if r == "eu" {
			return h.clock.Now().Add(5 * 24 * time.Hour)
		}
		return h.clock.Now().Add(30 * 24 * time.Hour)
	}, "eu", "us", "ap")
	if act := h.a.Active(); len(act) != 0 {
		t.Fatalf("one region of three sees a soon expiry: active %+v", act)
	}
	tick(certAt(9.5), "eu", "us", "ap")
	act := h.a.Active()
	if len(act) != 1 || act[0].Rule != RuleCert || len(act[0].Regions) != 3 {
		t.Fatalf("certificate expiring in 9.5 days: active %+v", act)
	}
	if act[0].Value < 9.4 || act[0].Value > 9.6 || !strings.Contains(act[0].Summary, "expires in 9 days (") {
		t.Errorf("alert: value %.2f summary %q", act[0].Value, act[0].Summary)
	}
	tick(certAt(90), "eu", "us", "ap") // renewed
	if act := h.a.Active(); len(act) != 0 {
		t.Fatalf("after renewal: active %+v", act)
	}
}

// TestBurnRateValueIsQuorumth: with two of three regions burning at
// different rates and quorum 2, the alert's value (and the summary's
// "burning N×") is the second highest region's burn: the rate at least
// quorum regions agree on, not the worst region's.
func TestBurnRateValueIsQuorumth(t *testing.T) {
	slo := SLO{Name: "asset-availability", Check: "asset", Objective: 99.9}
	h := newHarness(t, t0, Config{Quorum: 2, Down: DownRule{Disabled: true}, BurnRate: BurnRateRule{NoTicket: true}}, []SLO{slo})
	h.unknownInterval = true // the ratios of the 24 runs alone (no expected-runs floor)
	for range 20 {
		h.tick(map[string]reporting.State{"eu": H, "us": H, "ap": H})
	}
	// 4 more runs: eu fails all 4, us 2, ap none. Of 24 runs in the long
	// windows eu failed 4 (166.7× the 0.1% budget), us 2 (83.3×).
	for i := range 4 {
		us := H
		if i < 2 {
			us = U
		}
		h.tick(map[string]reporting.State{"eu": U, "us": us, "ap": H})
	}
	var burn *Alert
	for _, a := range h.a.Active() {
		if a.Rule == RuleBurnRate {
			burn = &a
		}
	}
	if burn == nil {
		t.Fatalf("no burn-rate alert: %+v", h.a.Active())
	}
	want := 2.0 / 24 / 0.001
	if burn.Value < want-0.01 || burn.Value > want+0.01 || fmt.Sprint(burn.Regions) != "[eu us]" ||
		!strings.Contains(burn.Summary, "burning 83.3× over 1h/5m, 6h/30m in 2 regions (eu, us)") {
		t.Fatalf("value %.2f, want %.2f (us, the 2nd highest); regions %v; summary %q", burn.Value, want, burn.Regions, burn.Summary)
	}
}

// TestBurnRateValueIsFastestPair: when 1h/5m and 6h/30m both hold and an
// earlier outage inside the 6h window makes its burn the higher one, the
// alert's value and summary give the fastest pair's burn (the burn now),
// as the README says, not the 6h one.
func TestBurnRateValueIsFastestPair(t *testing.T) {
	slo := SLO{Name: "asset-availability", Check: "asset", Objective: 99.9}
	const n = 400 // minutes of history, one run a minute
	start := t0.Add(-n * time.Minute)
	h := newHarness(t, start, Config{Down: DownRule{Disabled: true}, BurnRate: BurnRateRule{NoTicket: true}}, []SLO{slo})
	var vs []reporting.Verdict
	for k := range n {
		st := H
		// 20 failed runs 3h ago, and the last run.
		if (k >= n-200 && k < n-180) || k == n-1 {
			st = U
		}
		v := verdict("asset", "origin-a", "eu", start.Add(time.Duration(k)*time.Minute+10*time.Second), st, time.Minute)
		vs = append(vs, v)
	}
	h.store.add(vs...)
	h.clock.Set(start.Add((n-1)*time.Minute + 30*time.Second))
	h.eval()
	act := h.a.Active()
	if len(act) != 1 || act[0].Rule != RuleBurnRate {
		t.Fatalf("active: %+v", act)
	}
	// 1h: 1 failed run of 60 = 16.7× the 0.1% budget; 6h: 21 of 360 = 58.3×.
	want := 1.0 / 60 / 0.001
	if a := act[0]; a.Value < want-0.01 || a.Value > want+0.01 ||
		!strings.Contains(a.Summary, "burning 16.7× over 1h/5m, 6h/30m in 1 region (eu)") {
		t.Fatalf("value %.2f, want %.2f (1h/5m); summary %q", a.Value, want, a.Summary)
	}
	got := h.hook.webhooks(t)
	if len(got) != 1 || got[0].Alerts[0].Value < want-0.01 || got[0].Alerts[0].Value > want+0.01 {
		t.Fatalf("webhook: %+v", got)
	}
}
