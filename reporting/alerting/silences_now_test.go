package alerting

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// TestSilenceTakesEffectAtOnce: a silence added with POST /api/v1/silences
// shows on the firing alerts (GET /api/v1/alerts serves Active) before
// the answer, without waiting for an evaluation, and its history says
// so; ending it with DELETE unsilences them at once too, and an alert
// that started firing inside the silence is notified within moments, by
// an evaluation Run makes at once, not evaluation_interval (here 1h)
// later.
func TestSilenceTakesEffectAtOnce(t *testing.T) {
	r := newSilenceRig(t)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-ran
	})
	hist := httptest.NewServer(r.a.HistoryHandler())
	defer hist.Close()
	waitNotified := func(want string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for r.notified() != want {
			if time.Now().After(deadline) {
				t.Fatalf("notified %q, want %q within 5s", r.notified(), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	silenced := func() map[string]string {
		m := map[string]string{}
		for _, al := range r.a.Active() {
			m[al.Target] = al.Silenced
		}
		return m
	}

	r.st.add(verdict("asset", "origin-a", "eu", t0, reporting.StateUnhealthy, 15*time.Second))
	go func() { r.a.Run(ctx); close(ran) }()
	waitNotified("firing origin-a")

	code, body := r.call("POST", "/api/v1/silences", `{"check":"asset","for":"1h","by":"alice","why":"deploy"}`)
	var s Silence
	if code != http.StatusCreated || json.Unmarshal([]byte(body), &s) != nil {
		t.Fatalf("POST: %d %s", code, body)
	}
	// No evaluation since: the alert shows silenced already.
	if got := silenced()["origin-a"]; got != s.name() {
		t.Fatalf("right after POST: origin-a silenced %q, want %q", got, s.name())
	}
	// origin-b fires inside the silence: nothing is notified.
	r.eval("asset", "origin-a", "origin-b")
	if got := r.notified(); got != "firing origin-a" {
		t.Fatalf("inside the silence: notified %q", got)
	}
	if code, _ := r.call("DELETE", "/api/v1/silences/"+s.ID, ""); code != http.StatusNoContent {
		t.Fatalf("DELETE: %d", code)
	}
	if got := silenced(); got["origin-a"] != "" || got["origin-b"] != "" || len(got) != 2 {
		t.Fatalf("right after DELETE: %v, want origin-a and origin-b firing unsilenced", got)
	}
	// Run evaluates at once: origin-b, which fired inside the silence, is
	// notified (with origin-a, its group's other firing alert).
	waitNotified("firing origin-a,firing origin-a,firing origin-b")

	resp, err := http.Get(hist.URL + "/api/v1/alerts/history?check=asset")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h []HistoryEntry
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range h {
		got = append(got, e.Event+" "+e.Target+" "+e.Silenced)
	}
	want := []string{
		"unsilenced origin-b " + s.name(),
		"unsilenced origin-a " + s.name(),
		"firing origin-b " + s.name(),
		"silenced origin-a " + s.name(),
		"firing origin-a ",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("history:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
