package alerting

import (
	"net/url"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/reporting"
)

// TestDestinationChangeSendsFiringAnew: c01 and c02 fire and every
// receiver accepts them. A reload, or a restart, that keeps a receiver's
// name but changes where it sends (PagerDuty's routing_key or url, a
// webhook's or Slack's url) sends that receiver, at the next evaluation,
// every firing alert (PagerDuty: a trigger per alert, with the new key),
// and nothing to the other receivers; the new destination then gets the
// resolves. A change of what does not name the destination (a webhook's
// headers, a filter) sends nothing. The state file keeps a hash of the
// destination, never the key or url, and one log line names the
// receiver.
func TestDestinationChangeSendsFiringAnew(t *testing.T) {
	type change struct {
		name     string
		receiver string // the receiver changed; "" for none
		set      func(r *gbRig, c *Config)
	}
	changes := []change{
		{"pagerduty routing_key", "pd", func(_ *gbRig, c *Config) { c.Receivers[2].PagerDuty.RoutingKey = "rk-new-service" }},
		{"pagerduty url", "pd", func(r *gbRig, c *Config) { c.Receivers[2].PagerDuty.URL = r.pd.srv.URL + "/v2/other" }},
		{"webhook url", "ops", func(r *gbRig, c *Config) { c.Receivers[0].Webhook.URL = Secret(r.hook.srv.URL + "/hook-new") }},
		{"slack url", "chat", func(r *gbRig, c *Config) { c.Receivers[1].Slack.URL = Secret(r.slack.srv.URL + "/slack-new") }},
		{"slack channel", "chat", func(_ *gbRig, c *Config) { c.Receivers[1].Slack.Channel = "#other" }},
		{"webhook headers", "", func(_ *gbRig, c *Config) {
			c.Receivers[0].Webhook.Headers = map[string]Secret{"Authorization": "Bearer rotated"}
		}},
		{"filters", "", func(_ *gbRig, c *Config) { c.Receivers[2].Severities = []string{SeverityPage} }},
	}
	for _, how := range []string{"reload", "restart"} {
		for _, ch := range changes {
			t.Run(how+"/"+ch.name, func(t *testing.T) {
				r := newGBRig(t)
				a := r.start(nil)
				st := map[string]reporting.State{"c01": U, "c02": U}
				r.step(a, st)
				r.step(a, st) // c01 and c02 fire: every receiver accepts both
				counts := func() map[string]int {
					return map[string]int{"ops": len(r.hook.all()), "chat": len(r.slack.all()), "pd": len(r.pd.all())}
				}
				before := counts()
				if before["ops"] != 2 || before["chat"] != 2 || before["pd"] != 2 {
					t.Fatalf("c01 and c02 fired: %v, want 2 notifications each", before)
				}
				cfg := r.configWith(nil, func(c *Config) { ch.set(r, c) })
				if how == "reload" {
					if err := a.Reload(cfg, nil); err != nil {
						t.Fatal(err)
					}
				} else {
					a = r.startWith(nil, func(c *Config) { ch.set(r, c) })
				}
				r.step(a, st)
				r.step(a, st)
				after := counts()
				for name, n := range after {
					want := before[name]
					if name == ch.receiver {
						want += 2 // one notification per group: c01's and c02's
					}
					if n != want {
						t.Errorf("after the %s changed the %s: %s got %d notifications, want %d (%v before, %v after)",
							how, ch.name, name, n-before[name], want-before[name], before, after)
					}
				}
				switch ch.receiver {
				case "pd":
					acts := r.pdActions(before["pd"])
					sort.Strings(acts) // two groups: either may go first
					got := strings.Join(acts, ", ")
					want := "trigger vigil/down/c01/origin-a/page, trigger vigil/down/c02/origin-a/page"
					if got != want {
						t.Errorf("pagerduty after the change: %q, want %q", got, want)
					}
					evs := r.pdEvents()
					if key := evs[len(evs)-1].RoutingKey; key != string(cfg.Receivers[2].PagerDuty.RoutingKey) {
						t.Errorf("routing_key %q, want the new one", key)
					}
					if last := r.pd.all()[len(r.pd.all())-1].Path; last != urlPath(t, cfg.Receivers[2].PagerDuty.URL) {
						t.Errorf("posted to %s", last)
					}
				case "ops":
					hooks := r.hook.webhooks(t)
					for _, p := range hooks[before["ops"]:] {
						if p.Status != StatusFiring || len(p.Alerts) != 1 {
							t.Errorf("webhook after the change: %s with %d alerts, want firing with 1", p.Status, len(p.Alerts))
						}
					}
				}
				if ch.receiver != "" {
					if n := strings.Count(r.logs.String(), "receiver's destination changed"); n != 1 {
						t.Errorf("%d lines say the destination changed, want 1:\n%s", n, r.logs.String())
					}
					if !strings.Contains(r.logs.String(), "receiver="+ch.receiver+" groups=2") {
						t.Errorf("the line does not name the receiver and its 2 groups:\n%s", r.logs.String())
					}
				} else if strings.Contains(r.logs.String(), "destination changed") {
					t.Errorf("a change of the %s logged a destination change:\n%s", ch.name, r.logs.String())
				}

				// c01 recovering: its resolve goes to every receiver (the
				// new destination was sent c01 as firing).
				mid := counts()
				st["c01"] = H
				r.step(a, st)
				for name, n := range counts() {
					if n != mid[name]+1 {
						t.Errorf("c01's resolve: %s got %d notifications, want 1", name, n-mid[name])
					}
				}

				b, err := os.ReadFile(r.path)
				if err != nil {
					t.Fatal(err)
				}
				for _, secret := range []string{"rk-new-service", `"rk"`, "/hook", "/slack", "/v2/"} {
					if strings.Contains(string(b), secret) {
						t.Errorf("alerts.json holds %q", secret)
					}
				}
				if !strings.Contains(string(b), `"destinations"`) || !strings.Contains(string(b), `"pd": "sha256:`) {
					t.Errorf("alerts.json keeps no destination hashes:\n%s", b)
				}
			})
		}
	}
}

// TestDestinationChangeNoStrayResolves: a PagerDuty receiver moved to a
// new routing_key by a reload while c01 fires, with c01 resolving before
// the next evaluation, sends the new service nothing (it never had
// c01's incident) and the old one nothing more.
func TestDestinationChangeNoStrayResolves(t *testing.T) {
	r := newGBRig(t)
	r.noSlack = true
	a := r.start(nil)
	st := map[string]reporting.State{"c01": U}
	r.step(a, st)
	r.step(a, st)
	if got := r.pdActions(0); len(got) != 1 {
		t.Fatalf("c01 fired: pagerduty got %q", got)
	}
	if err := a.Reload(r.configWith(nil, func(c *Config) { c.Receivers[1].PagerDuty.RoutingKey = "rk2" }), nil); err != nil {
		t.Fatal(err)
	}
	st["c01"] = H
	r.step(a, st)
	r.step(a, st)
	if got := r.pdActions(1); len(got) != 0 {
		t.Errorf("c01 resolved after the routing_key changed: pagerduty got %q, want nothing", got)
	}
	if hooks := r.hook.webhooks(t); len(hooks) != 2 || hooks[1].Status != StatusResolved {
		t.Errorf("webhook: %d notifications, want the firing one and the resolve", len(hooks))
	}
}

// urlPath is the path of URL s.
func urlPath(t *testing.T, s string) string {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u.Path
}

// TestDestinationChangeAlertmanager: an Alertmanager receiver moved to
// another url by a reload while c01 fires, with c01 resolving before the
// next evaluation, posts nothing to the new Alertmanager (it never held
// c01) and nothing more to the old one; one line names the receiver.
func TestDestinationChangeAlertmanager(t *testing.T) {
	r := newGBRig(t)
	r.noSlack, r.noPagerD = true, true
	am := newRecorder(t)
	r.extra = []Receiver{{Name: "am", Alertmanager: &AlertmanagerConfig{URL: am.srv.URL + "/old"}}}
	a := r.start(nil)
	st := map[string]reporting.State{"c01": U}
	r.step(a, st)
	r.step(a, st)
	paths := func() map[string]int {
		m := map[string]int{}
		for _, rec := range am.all() {
			m[rec.Path]++
		}
		return m
	}
	if p := paths(); p["/old/api/v2/alerts"] != 1 || len(p) != 1 {
		t.Fatalf("c01 fired: alertmanager got %v", p)
	}
	cfg := r.config(nil)
	cfg.Receivers[1].Alertmanager = &AlertmanagerConfig{URL: am.srv.URL + "/new"}
	if err := a.Reload(cfg, nil); err != nil {
		t.Fatal(err)
	}
	st["c01"] = H
	r.step(a, st)
	r.step(a, st)
	if p := paths(); p["/old/api/v2/alerts"] != 1 || p["/new/api/v2/alerts"] != 0 {
		t.Errorf("c01 resolved after the url changed: alertmanager got %v, want nothing more "+
			"(the new one never held c01, the old one is no longer a receiver)", p)
	}
	if !strings.Contains(r.logs.String(), "receiver=am groups=0 stream_alerts=1") {
		t.Errorf("no line names am and the alert it held:\n%s", r.logs.String())
	}
}
