package alerting

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSilenceEndSendsWhatOneReceiverMissed: asset/origin-a fires; the
// webhook accepts it, PagerDuty's delivery fails while a silence is
// POSTed, so its retry leaves the alert out and PagerDuty is sent
// nothing. When the silence ends while the alert still fires, PagerDuty
// is sent its trigger at the next evaluation, not at repeat_interval
// (an hour), and the webhook, which accepted it, nothing again.
func TestSilenceEndSendsWhatOneReceiverMissed(t *testing.T) {
	for _, how := range []string{"in flight", "failed"} {
		t.Run(how, func(t *testing.T) {
			var mu sync.Mutex
			var events []string
			failing := true
			gate := make(chan struct{})
			arrived := make(chan struct{}, 100)
			pd := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				b, _ := io.ReadAll(req.Body)
				var e struct {
					Action string `json:"event_action"`
					Key    string `json:"dedup_key"`
				}
				_ = json.Unmarshal(b, &e)
				mu.Lock()
				events = append(events, e.Action+" "+e.Key)
				fail := failing
				mu.Unlock()
				arrived <- struct{}{}
				if fail && how == "in flight" {
					// Held until the silence is in; then it fails and
					// is retried.
					select {
					case <-gate:
					case <-time.After(10 * time.Second):
					}
				}
				if fail {
					w.WriteHeader(http.StatusServiceUnavailable)
					return
				}
				w.WriteHeader(http.StatusAccepted)
			}))
			t.Cleanup(pd.Close)
			got := func() []string {
				mu.Lock()
				defer mu.Unlock()
				return append([]string(nil), events...)
			}
			r := newSilenceRig(t, func(r *silenceRig) {
				r.cfg.RepeatInterval = time.Hour
				r.cfg.Receivers = append(r.cfg.Receivers,
					Receiver{Name: "pd", PagerDuty: &PagerDutyConfig{RoutingKey: "k0123456789abcdef", URL: pd.URL}})
			})

			if how == "in flight" {
				now := r.clock.Add(15 * time.Second)
				r.st.add(verdict("asset", "origin-a", "eu", now, U, 15*time.Second))
				if err := r.a.Evaluate(context.Background()); err != nil {
					t.Fatal(err)
				}
				select {
				case <-arrived:
				case <-time.After(10 * time.Second):
					t.Fatal("nothing reached pagerduty")
				}
				for i := 0; len(r.hook.all()) == 0; i++ {
					if i == 1000 {
						t.Fatal("the webhook got nothing")
					}
					time.Sleep(10 * time.Millisecond)
				}
			} else {
				r.eval("asset", "origin-a") // every attempt fails
			}
			code, body := r.call("POST", "/api/v1/silences", `{"check":"asset","for":"1h","by":"alice","why":"deploy"}`)
			var s Silence
			if code != http.StatusCreated || json.Unmarshal([]byte(body), &s) != nil {
				t.Fatalf("POST: %d %s", code, body)
			}
			close(gate)
			r.flush()
			if how == "failed" {
				r.eval("asset", "origin-a") // silenced: the redelivery has nothing to say
			}
			mu.Lock()
			failing = false
			mu.Unlock()
			tried := len(got())
			if r.notified() != "firing origin-a" || tried == 0 {
				t.Fatalf("before the silence: webhook %q, pagerduty %q", r.notified(), got())
			}
			for _, e := range got() {
				if !strings.HasPrefix(e, "trigger ") {
					t.Fatalf("pagerduty got %q", got())
				}
			}

			r.eval("asset", "origin-a")
			if n := len(got()); n != tried {
				t.Fatalf("inside the silence: pagerduty got %q", got()[tried:])
			}
			if code, _ := r.call("DELETE", "/api/v1/silences/"+s.ID, ""); code != http.StatusNoContent {
				t.Fatalf("DELETE: %d", code)
			}
			r.eval("asset", "origin-a")
			if after := got()[tried:]; len(after) != 1 || after[0] != "trigger vigil/down/asset/origin-a/page" {
				t.Fatalf("first evaluation after the silence ended: pagerduty got %q, want the trigger of asset/origin-a "+
					"(its only delivery was left out by the silence)", after)
			}
			if got := r.notified(); got != "firing origin-a" {
				t.Fatalf("webhook after the silence: %q, want nothing more (it accepted the alert)", got)
			}
			r.eval("asset", "origin-a")
			if after := got()[tried:]; len(after) != 1 {
				t.Fatalf("then: pagerduty got %q, want nothing more", after)
			}
		})
	}
}
