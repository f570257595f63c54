package canary

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// TestAbortCancelsRunsInFlight: Abort (a second shutdown signal) cancels a
// run in flight against an origin that never answers, long before its
// 20 s timeout, and its result is dropped as a kill would drop it: no
// verdict is published or kept.
func TestAbortCancelsRunsInFlight(t *testing.T) {
	arrived := make(chan struct{}, 1)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-r.Context().Done()
	}))
	defer origin.Close()
	cfg := testConfig(t, map[string]string{"o1": origin.URL},
		CheckConfig{Name: "hang", Targets: []string{"o1"}, Interval: time.Hour, Timeout: 20 * time.Second, HTTP: &checks.HTTPSpec{}})
	sink := &memSink{}
	c := start(t, cfg, compile(t, cfg), Options{Sink: sink, PublishEvery: 10 * time.Millisecond})
	done := make(chan error, 1)
	go func() { _, err := c.Trigger("hang", "o1"); done <- err }()
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the run did not reach the origin")
	}
	aborted := time.Now()
	c.Abort()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the run was still going 5 s after Abort (timeout 20 s)")
	}
	t.Logf("run ended %s after Abort", time.Since(aborted).Round(time.Millisecond))
	time.Sleep(50 * time.Millisecond) // past a publish cycle
	if vs := sink.of("hang", "o1"); len(vs) != 0 {
		t.Fatalf("the cancelled run published a verdict: %s %s %q", vs[0].State, vs[0].Cause, vs[0].Err)
	}
	if v, ok := latestOf(c, "hang", "o1"); ok {
		t.Fatalf("the cancelled run was kept as the latest verdict: %s %s", v.State, v.Cause)
	}
}
