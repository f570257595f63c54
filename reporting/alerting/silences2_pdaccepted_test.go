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

	"github.com/vigil-synthetics/vigil/reporting"
)

// TestSilenceInQueueKeepsPagerDutyAccepted: a group notification queued to
// PagerDuty behind a slow delivery, from which a silence POSTed since
// takes an alert out, still sends triggers only for the alerts PagerDuty
// has not accepted as firing: multi/o1, triggered and accepted before, is
// not triggered again when multi/o2 joins the group.
func TestSilenceInQueueKeepsPagerDutyAccepted(t *testing.T) {
	var mu sync.Mutex
	var events []string
	gate := make(chan struct{})
	arrived := make(chan struct{}, 10)
	var hold bool
	pd := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		var e struct {
			Action string `json:"event_action"`
			Key    string `json:"dedup_key"`
		}
		_ = json.Unmarshal(b, &e)
		mu.Lock()
		events = append(events, e.Action+" "+e.Key)
		wait := hold
		hold = false
		mu.Unlock()
		arrived <- struct{}{}
		if wait {
			select {
			case <-gate:
			case <-time.After(10 * time.Second):
			}
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(pd.Close)
	got := func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(events, ", ")
	}
	r := newSilenceRig(t, func(r *silenceRig) {
		r.cfg.Receivers = []Receiver{{Name: "pd", PagerDuty: &PagerDutyConfig{RoutingKey: "k0123456789abcdef", URL: pd.URL}}}
	})
	r.eval("multi", "o1")
	if g := got(); !strings.Contains(g, "trigger ") || strings.Count(g, "trigger") != 1 {
		t.Fatalf("multi/o1 fired: pagerduty got %q, want one trigger", g)
	}
	o1Key := strings.TrimPrefix(got(), "trigger ")
	mu.Lock()
	before := len(events)
	mu.Unlock()

	// asset's trigger is held in flight; multi's next notification (o1
	// accepted, o2 and o3 new) queues behind it.
	mu.Lock()
	hold = true
	mu.Unlock()
	now := r.clock.Add(15 * time.Second)
	r.st.add(verdict("asset", "origin-a", "eu", now, reporting.StateUnhealthy, 15*time.Second))
	r.st.add(verdict("multi", "o1", "eu", now, reporting.StateUnhealthy, 15*time.Second))
	if err := r.a.Evaluate(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("nothing reached pagerduty")
	}
	now = r.clock.Add(15 * time.Second)
	for _, ct := range []string{"asset/origin-a", "multi/o1", "multi/o2", "multi/o3"} {
		check, target, _ := strings.Cut(ct, "/")
		r.st.add(verdict(check, target, "eu", now, reporting.StateUnhealthy, 15*time.Second))
	}
	if err := r.a.Evaluate(context.Background()); err != nil {
		t.Fatal(err)
	}
	if code, out := r.call("POST", "/api/v1/silences", `{"check":"multi","target":"o3","for":"1h","by":"alice","why":"rebuilding o3"}`); code != http.StatusCreated {
		t.Fatalf("POST silence: %d %s", code, out)
	}
	close(gate)
	r.flush()
	mu.Lock()
	after := append([]string(nil), events[before:]...)
	mu.Unlock()
	var multi []string
	for _, e := range after {
		if strings.Contains(e, "/multi/") {
			multi = append(multi, e)
		}
	}
	if len(multi) != 1 || !strings.Contains(multi[0], "/multi/o2/") {
		t.Fatalf("the queued notification of multi, o3 silenced since: pagerduty got %q, want only o2's trigger (o1 %s was accepted before)", after, o1Key)
	}
}
