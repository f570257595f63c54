package alerting

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// gatedHook is a webhook receiver whose first request waits until
// release is called (so notifications queue behind it, or a silence is
// POSTed while it is in flight) and is answered firstStatus; the others
// are answered 200. It keeps every payload it received.
type gatedHook struct {
	srv         *httptest.Server
	firstStatus int
	arrived     chan struct{} // closed when the first request arrives
	gate        chan struct{}
	once        sync.Once
	mu          sync.Mutex
	raw         [][]byte
}

func newGatedHook(t *testing.T, firstStatus int) *gatedHook {
	g := &gatedHook{firstStatus: firstStatus, arrived: make(chan struct{}), gate: make(chan struct{})}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		g.mu.Lock()
		g.raw = append(g.raw, b)
		first := len(g.raw) == 1
		g.mu.Unlock()
		if first {
			close(g.arrived)
			select {
			case <-g.gate:
			case <-time.After(10 * time.Second):
			}
			w.WriteHeader(g.firstStatus)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(func() { g.release(); g.srv.Close() })
	return g
}

func (g *gatedHook) release() { g.once.Do(func() { close(g.gate) }) }

// waitFirst waits (up to 10 s) for the first request.
func (g *gatedHook) waitFirst(t *testing.T) {
	t.Helper()
	select {
	case <-g.arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("no notification reached the receiver within 10s")
	}
}

// sent lists each webhook notification received as its alerts, "firing
// multi/o1+resolved asset/origin-a".
func (g *gatedHook) sent() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, b := range g.raw {
		var p WebhookPayload
		_ = json.Unmarshal(b, &p)
		var as []string
		for _, al := range p.Alerts {
			as = append(as, al.Status+" "+al.Check+"/"+al.Target)
		}
		sort.Strings(as)
		out = append(out, strings.Join(as, "+"))
	}
	return out
}

// amSent lists each Alertmanager post received as its alerts, "asset/
// origin-a silenced_by=silence 1a2b… by alice…+api/origin-a".
func (g *gatedHook) amSent() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, b := range g.raw {
		var p []amAlert
		_ = json.Unmarshal(b, &p)
		var as []string
		for _, al := range p {
			x := al.Labels["check"] + "/" + al.Labels["target"]
			if by := al.Annotations["silenced_by"]; by != "" {
				x += " silenced_by=" + by
			}
			as = append(as, x)
		}
		sort.Strings(as)
		out = append(out, strings.Join(as, "+"))
	}
	return out
}

// withHook points the rig's receiver "ops" at url.
func withHook(url string) func(*silenceRig) {
	return func(r *silenceRig) { r.cfg.Receivers[0].Webhook.URL = Secret(url + "/hook") }
}

// TestSilenceHoldsQueuedNotification: notifications already queued to a
// receiver (behind a slow delivery) when a silence is POSTed are checked
// again when they are about to be sent: a group's silenced alert is left
// out of it, and a notification with nothing left is not sent at all. The
// history says the alerts were silenced; the silenced alert that no
// receiver was sent is notified as a new one when its silence ends while
// it fires, and one that was never sent is not sent a resolve. An alert
// that was notified before its silence still has its resolve sent.
func TestSilenceHoldsQueuedNotification(t *testing.T) {
	hook := newGatedHook(t, http.StatusOK)
	r := newSilenceRig(t, withHook(hook.srv.URL))
	ctx := context.Background()
	add := func(check string, targets ...string) {
		for _, target := range targets {
			r.st.add(verdict(check, target, "eu", r.clock.Now(), reporting.StateUnhealthy, 15*time.Second))
		}
	}
	add("asset", "origin-a")
	if err := r.a.Evaluate(ctx); err != nil {
		t.Fatal(err)
	}
	hook.waitFirst(t) // asset's notification is in flight, held
	r.clock.Add(15 * time.Second)
	add("asset", "origin-a")
	add("multi", "o1", "o2")
	add("api", "origin-a")
	// multi's and api's notifications queue behind it.
	if err := r.a.Evaluate(ctx); err != nil {
		t.Fatal(err)
	}
	var apiSilence Silence
	for _, body := range []string{
		`{"check":"multi","target":"o2","for":"1h","by":"alice","why":"rebuilding o2"}`,
		`{"check":"api","for":"1h","by":"alice","why":"deploy"}`,
	} {
		code, out := r.call("POST", "/api/v1/silences", body)
		if code != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", body, code, out)
		}
		_ = json.Unmarshal([]byte(out), &apiSilence)
	}
	hook.release()
	r.flush()
	want := []string{"firing asset/origin-a", "firing multi/o1"}
	if got := hook.sent(); strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("after the silences were answered 201: sent %q, want %q (multi without o2, nothing of api)", got, want)
	}
	hist := map[string]bool{}
	for _, e := range r.a.History("", 0) {
		hist[e.Event+" "+e.Check+"/"+e.Target] = true
	}
	for _, k := range []string{"silenced multi/o2", "silenced api/origin-a"} {
		if !hist[k] {
			t.Errorf("history has no %q: %v", k, hist)
		}
	}

	// api's silence ends while it fires: no receiver was sent it, so it is
	// notified now as a new alert (not at repeat_interval, 4h on).
	if code, out := r.call("DELETE", "/api/v1/silences/"+apiSilence.ID, ""); code != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", code, out)
	}
	tick := func(healthy map[string]bool) {
		t.Helper()
		now := r.clock.Add(15 * time.Second)
		for _, ct := range []string{"asset/origin-a", "multi/o1", "multi/o2", "api/origin-a"} {
			st := reporting.StateUnhealthy
			if healthy[ct] {
				st = reporting.StateHealthy
			}
			check, target, _ := strings.Cut(ct, "/")
			r.st.add(verdict(check, target, "eu", now, st, 15*time.Second))
		}
		r.evaluate()
	}
	tick(nil)
	want = append(want, "firing api/origin-a")
	if got := hook.sent(); strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("after api's silence ended: sent %q, want %q", got, want)
	}

	// asset, notified before, is silenced and resolves: its resolve goes
	// out. multi/o2, silenced and never sent, resolves: nothing of it.
	if code, out := r.call("POST", "/api/v1/silences", `{"check":"asset","for":"1h","by":"alice","why":"x"}`); code != http.StatusCreated {
		t.Fatalf("POST asset: %d %s", code, out)
	}
	tick(map[string]bool{"asset/origin-a": true, "multi/o2": true})
	want = append(want, "resolved asset/origin-a")
	if got := hook.sent(); strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("after asset and multi/o2 resolved: sent %q, want %q", got, want)
	}
	r.a.mu.Lock()
	owes := r.a.owes("ops")
	r.a.mu.Unlock()
	if owes {
		t.Errorf("ops is still owed something after it accepted every notification")
	}
}

// TestSilenceStopsRetry: a notification whose first attempt failed and
// waits for its retry when a silence of its only alert is POSTed is not
// sent again.
func TestSilenceStopsRetry(t *testing.T) {
	hook := newGatedHook(t, http.StatusServiceUnavailable)
	r := newSilenceRig(t, withHook(hook.srv.URL))
	r.st.add(verdict("asset", "origin-a", "eu", r.clock.Now(), reporting.StateUnhealthy, 15*time.Second))
	if err := r.a.Evaluate(context.Background()); err != nil {
		t.Fatal(err)
	}
	hook.waitFirst(t)
	if code, out := r.call("POST", "/api/v1/silences", `{"check":"asset","for":"1h","by":"alice","why":"deploy"}`); code != http.StatusCreated {
		t.Fatalf("POST: %d %s", code, out)
	}
	hook.release() // the first attempt fails now: its retry comes after the POST
	r.flush()
	if got := hook.sent(); len(got) != 1 {
		t.Fatalf("sent %q: want only the attempt made before the silence", got)
	}
	if f := r.a.DeliveryFailures()["ops"]; f != "" {
		t.Errorf("ops reported failing (%s): its retry was not needed", f)
	}
}

// TestSilenceHoldsQueuedAlertmanagerNotification: an Alertmanager post
// queued before a silence was POSTed leaves out the silenced alerts it
// would have been the first to send (as an alert first firing inside a
// silence is never sent there), and sends those Alertmanager already holds
// annotated silenced_by, as every later evaluation does.
func TestSilenceHoldsQueuedAlertmanagerNotification(t *testing.T) {
	hook := newGatedHook(t, http.StatusOK)
	r := newSilenceRig(t, func(r *silenceRig) {
		r.cfg.Receivers = []Receiver{{Name: "am", Alertmanager: &AlertmanagerConfig{URL: hook.srv.URL}}}
	})
	ctx := context.Background()
	down := func(checks ...string) {
		for _, c := range checks {
			r.st.add(verdict(c, "origin-a", "eu", r.clock.Now(), reporting.StateUnhealthy, 15*time.Second))
		}
	}
	down("asset")
	if err := r.a.Evaluate(ctx); err != nil {
		t.Fatal(err)
	}
	hook.waitFirst(t) // asset is being sent, held
	r.clock.Add(15 * time.Second)
	down("asset", "api")
	if err := r.a.Evaluate(ctx); err != nil { // asset and api, queued behind
		t.Fatal(err)
	}
	var names []string
	for _, check := range []string{"asset", "api"} {
		code, out := r.call("POST", "/api/v1/silences", `{"check":"`+check+`","for":"1h","by":"alice","why":"deploy"}`)
		var s Silence
		if code != http.StatusCreated || json.Unmarshal([]byte(out), &s) != nil {
			t.Fatalf("POST %s: %d %s", check, code, out)
		}
		names = append(names, s.name())
	}
	hook.release()
	r.flush()
	r.clock.Add(15 * time.Second)
	down("asset", "api")
	r.evaluate()
	held := "asset/origin-a silenced_by=" + names[0]
	want := []string{"asset/origin-a", held, held}
	if got := hook.amSent(); strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("alertmanager was sent %q, want %q (api, first firing as it was silenced, never)", got, want)
	}
}
