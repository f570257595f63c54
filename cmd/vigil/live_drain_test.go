package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting/alerting"
)

// drainRig is vigil run with the proxy and the alerter in one process
// (embedded store between them), a pool web of two origins shop-a (always
// fine) and shop-b (whose answers the test sets), and a webhook receiver.
type drainRig struct {
	a           *app
	stop        func()
	base, proxy string
	token       string
	bMode       atomic.Value // "ok", "500" or "hold" (wait on release, then answer 500)
	held        atomic.Int64 // requests shop-b holds now
	release     chan struct{}
	hookMu      sync.Mutex
	hook        []alerting.WebhookPayload
	releaseOnce sync.Once
}

func newDrainRig(t *testing.T) *drainRig {
	t.Helper()
	r := &drainRig{token: "admin-token-0123456789abcdef", release: make(chan struct{})}
	r.bMode.Store("ok")
	a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "a") }))
	t.Cleanup(a.Close)
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch r.bMode.Load().(string) {
		case "ok":
			io.WriteString(w, "b")
		case "hold":
			if req.URL.Path == "/slow" {
				r.held.Add(1)
				select {
				case <-r.release:
				case <-time.After(20 * time.Second):
				}
			}
			http.Error(w, "maintenance", http.StatusInternalServerError)
		default:
			http.Error(w, "broken", http.StatusInternalServerError)
		}
	}))
	t.Cleanup(func() { r.releaseOnce.Do(func() { close(r.release) }); b.Close() })
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var p alerting.WebhookPayload
		if err := json.NewDecoder(req.Body).Decode(&p); err == nil {
			r.hookMu.Lock()
			r.hook = append(r.hook, p)
			r.hookMu.Unlock()
		}
	}))
	t.Cleanup(hook.Close)
	// The passive detector ejects shop-b after 3 failed tries, for 200ms
	// at first, and lets it back only when its return probe passes.
	// live_errors judges 3s of 200ms signals and fires at once; its ratio
	// needs more requests than the test sends, so only the ejected share
	// can make it hold.
	path := writeConfig(t, fmt.Sprintf(`
agent: {region: eu, data_dir: %s, admin_token: %s}
targets: [{name: shop-a, url: %q}, {name: shop-b, url: %q}]
proxy:
  listen: 127.0.0.1:0
  signal_window: 200ms
  pools:
    - name: web
      hosts: ["*"]
      origins: [{target: shop-a}, {target: shop-b}]
      passive: {consecutive_5xx: 3, ejection: 200ms, return_probe: /, return_probe_interval: 200ms}
      retry: {tries: 2}
alerting:
  evaluation_interval: 1s
  group_wait: 0s
  group_interval: 1s
  dead_man: {disabled: true}
  quorum_lost: {disabled: true}
  live_errors: {window: 3s, for: 0s, min_requests: 100000}
  receivers: [{name: hook, webhook: {url: %q}}]
`, t.TempDir(), r.token, a.URL, b.URL, hook.URL))
	r.a, r.stop = startApp(t, path, roles{proxy: true, alerter: true})
	t.Cleanup(r.stop)
	r.base = "http://" + r.a.Addr()
	waitFor(t, 5*time.Second, "the proxy listening", func() bool { return len(r.a.prx.Addrs()) > 0 })
	r.proxy = "http://" + r.a.prx.Addrs()[0].String()
	return r
}

// get sends one request through the proxy.
func (r *drainRig) get(t *testing.T, path string) int {
	t.Helper()
	c := &http.Client{Timeout: 25 * time.Second}
	resp, err := c.Get(r.proxy + path)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// admin drains or undrains shop-b through the proxy's admin API.
func (r *drainRig) admin(t *testing.T, verb string) {
	t.Helper()
	if code, body := do(t, "POST", r.base+"/api/v1/origins/shop-b/"+verb+"?by=alice&why=rebuilding", "Bearer "+r.token, nil); code != http.StatusOK {
		t.Fatalf("%s shop-b: %d %s", verb, code, body)
	}
}

// liveAlerts are the live_errors alerts GET /api/v1/alerts lists.
func (r *drainRig) liveAlerts(t *testing.T) []alerting.WebhookAlert {
	t.Helper()
	code, body := do(t, "GET", r.base+"/api/v1/alerts", "", nil)
	if code != http.StatusOK {
		t.Fatalf("GET /api/v1/alerts: %d %s", code, body)
	}
	var all, out []alerting.WebhookAlert
	if err := json.Unmarshal([]byte(body), &all); err != nil {
		t.Fatalf("GET /api/v1/alerts: %v: %s", err, body)
	}
	for _, al := range all {
		if al.Rule == alerting.RuleLiveErrors {
			out = append(out, al)
		}
	}
	return out
}

// hooked returns the webhook's live_errors alerts of status for shop-b.
func (r *drainRig) hooked(status string) []alerting.WebhookAlert {
	r.hookMu.Lock()
	defer r.hookMu.Unlock()
	var out []alerting.WebhookAlert
	for _, p := range r.hook {
		for _, al := range p.Alerts {
			if al.Rule == alerting.RuleLiveErrors && al.Target == "shop-b" && al.Status == status {
				out = append(out, al)
			}
		}
	}
	return out
}

// origin is shop-b's state on the proxy's /api/v1/origins.
func (r *drainRig) originB() (drained, ejected bool) {
	for _, o := range r.a.prx.Origins() {
		if o.Name == "shop-b" {
			return o.Drained, o.PassiveEjected
		}
	}
	return false, false
}

// TestLiveErrorsDrainDoesNotPage: an operator drains shop-b for
// maintenance while requests are in flight to it, and takes it down: the
// requests in flight fail, the passive detector ejects the drained origin
// and keeps it out (its return probes fail while it is down). That is
// planned work: no live_errors alert fires for it, while the proxy's
// signals say it is ejected, as long as it is drained. Was: its ejected
// share reached 100% and live_errors paged for the drain.
func TestLiveErrorsDrainDoesNotPage(t *testing.T) {
	r := newDrainRig(t)
	for range 10 {
		if code := r.get(t, "/"); code != http.StatusOK {
			t.Fatalf("GET through the proxy before the drain: %d", code)
		}
	}
	// Three slow requests held at shop-b (those going to shop-a return
	// at once), then the drain, then shop-b fails them.
	r.bMode.Store("hold")
	var wg sync.WaitGroup
	deadline := time.Now().Add(10 * time.Second)
	for r.held.Load() < 3 && time.Now().Before(deadline) {
		wg.Add(1)
		go func() { defer wg.Done(); r.get(t, "/slow") }()
		time.Sleep(20 * time.Millisecond)
	}
	if r.held.Load() < 3 {
		t.Fatalf("shop-b holds %d requests, want 3", r.held.Load())
	}
	r.admin(t, "drain")
	r.bMode.Store("500")
	r.releaseOnce.Do(func() { close(r.release) })
	wg.Wait()
	waitFor(t, 10*time.Second, "shop-b drained and passively ejected", func() bool {
		d, e := r.originB()
		return d && e
	})
	// Five evaluations over signals that say shop-b is drained and
	// ejected: none fires for it.
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		if got := r.liveAlerts(t); len(got) > 0 {
			t.Fatalf("live_errors fired for a drained origin: %s", got[0].Summary)
		}
		if d, e := r.originB(); !d || !e {
			t.Fatalf("shop-b drained %v, passively ejected %v: want both for the whole test", d, e)
		}
	}
	if got := r.hooked(alerting.StatusFiring); len(got) > 0 {
		t.Fatalf("the webhook was sent a live_errors alert for the drained origin: %s", got[0].Summary)
	}
}

// TestLiveErrorsDrainResolvesFiringAlert: shop-b fails its live traffic,
// the passive detector ejects it and keeps it out, live_errors fires; the
// on-call then drains it to work on it. The alert resolves at the next
// evaluation (as the generated Prometheus rule does: a drained origin is
// not judged), and its resolve says why: drained, not recovered.
func TestLiveErrorsDrainResolvesFiringAlert(t *testing.T) {
	r := newDrainRig(t)
	r.bMode.Store("500")
	waitFor(t, 20*time.Second, "a live_errors alert for web × shop-b", func() bool {
		for range 10 {
			r.get(t, "/")
		}
		for _, al := range r.liveAlerts(t) {
			if al.Check == "web" && al.Target == "shop-b" {
				return true
			}
		}
		return false
	})
	waitFor(t, 10*time.Second, "the webhook's firing live_errors alert", func() bool { return len(r.hooked(alerting.StatusFiring)) > 0 })
	r.admin(t, "drain")
	waitFor(t, 10*time.Second, "the live_errors alert resolved after the drain", func() bool { return len(r.liveAlerts(t)) == 0 })
	waitFor(t, 10*time.Second, "the webhook's resolved live_errors alert", func() bool { return len(r.hooked(alerting.StatusResolved)) > 0 })
	res := r.hooked(alerting.StatusResolved)[0]
	if want := "pool web origin shop-b: drained on eu/"; !strings.HasPrefix(res.Summary, want) || !strings.Contains(res.Summary, "not judged by live_errors while drained") {
		t.Errorf("resolved summary %q: want it to start %q and say it is not judged while drained", res.Summary, want)
	}
	if d, e := r.originB(); !d || !e {
		t.Errorf("shop-b drained %v, passively ejected %v: want both (its probes fail)", d, e)
	}
}
