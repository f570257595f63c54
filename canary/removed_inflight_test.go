package canary

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// TestReloadDropsVerdictOfRemovedRunInFlight: a run in flight when a
// reload removes its check finishes, but its verdict is neither published
// to the sink (the store) nor kept as a latest verdict. Before, it was
// written to the store 7.6 s after the removal, where a standalone
// alerter or Grafana saw a fresh verdict of a check that no longer exists.
func TestReloadDropsVerdictOfRemovedRunInFlight(t *testing.T) {
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			arrived <- struct{}{}
			<-release
		}
	}))
	defer origin.Close()
	keep := CheckConfig{Name: "keep", Targets: []string{"o1"}, Interval: time.Hour, Rise: 1, HTTP: &checks.HTTPSpec{}}
	gone := CheckConfig{Name: "gone", Targets: []string{"o1"}, Interval: time.Hour, Rise: 1, HTTP: &checks.HTTPSpec{Path: "/slow"}}
	targets := map[string]string{"o1": origin.URL}
	cfg := testConfig(t, targets, keep, gone)
	sink := &memSink{}
	c := start(t, cfg, compile(t, cfg), Options{Sink: sink, PublishEvery: 10 * time.Millisecond})

	done := make(chan error, 1)
	go func() { _, err := c.Trigger("gone", "o1"); done <- err }()
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the run of gone did not reach the origin")
	}
	cfg2 := testConfig(t, targets, keep)
	c.Reload(cfg2, compile(t, cfg2))
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := c.Trigger("keep", "o1"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "keep's verdict published", func() bool { return len(sink.of("keep", "o1")) > 0 })
	time.Sleep(50 * time.Millisecond) // past a publish cycle after gone's run ended
	if vs := sink.of("gone", "o1"); len(vs) != 0 {
		t.Fatalf("the removed check's run in flight published %d verdict(s): %+v", len(vs), vs[0])
	}
	if v, ok := latestOf(c, "gone", "o1"); ok {
		t.Fatalf("the removed check has a latest verdict: %s at %s", v.State, v.At)
	}
}
