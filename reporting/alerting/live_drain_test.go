package alerting

import (
	"context"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// proxySignals are n signals of pool × origin from one proxy instance, one
// every 15s ending at end, of req requests each with fail 5xx; drained(i)
// and ejected(i) say whether the i-th one's proxy had the origin drained,
// passively ejected.
func proxySignals(pool, origin, region, vantage string, end time.Time, n, req, fail int, drained, ejected func(int) bool) []reporting.Signal {
	out := make([]reporting.Signal, n)
	for i := range out {
		s := reporting.Signal{Pool: pool, Origin: origin, Region: region, Vantage: vantage,
			At: end.Add(-time.Duration(n-1-i) * 15 * time.Second), Window: 15 * time.Second, Requests: req, Status5xx: fail}
		var by []string
		if drained != nil && drained(i) {
			by = append(by, "drained")
		}
		if ejected != nil && ejected(i) {
			s.Ejected, s.Reason = true, "consecutive_5xx"
			by = append(by, "passive_ejected")
		}
		s.Out, s.OutBy = len(by) > 0, strings.Join(by, ",")
		out[i] = s
	}
	return out
}

func always(int) bool { return true }

// TestLiveFiguresLeaveOutDrained: the signals of a proxy instance that had
// the origin drained in the window are left out of the origin's figures,
// all of them (the traffic before the drain, the requests in flight when
// it came, an ejection while drained), and the instance is named in
// Drained; the other instances' signals count. Undrained, the instance
// counts again once its drained signals have left the window.
func TestLiveFiguresLeaveOutDrained(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	rule := LiveErrorsRule{}.WithDefaults()
	// eu/proxy-1 drained sg-b 2 signals before now, with 10 requests in
	// flight failing, then ejected it; us/proxy-2 sends it fine traffic.
	eu := proxySignals("web", "sg-b", "eu", "proxy-1", now, 20, 40, 0,
		func(i int) bool { return i >= 18 }, func(i int) bool { return i >= 18 })
	eu[18].Status5xx, eu[18].Requests = 10, 10
	eu[19].Requests = 0
	us := proxySignals("web", "sg-b", "us", "proxy-2", now, 20, 40, 0, nil, nil)
	figs := LiveFigures(append(eu, us...), now, rule.Window)
	want := LiveTraffic{Pool: "web", Origin: "sg-b", Regions: []string{"us"}, Requests: 800, Signals: 20, Drained: []string{"eu/proxy-1"}}
	if len(figs) != 1 || !reflect.DeepEqual(figs[0], want) {
		t.Fatalf("figures:\n got %+v\nwant %+v", figs, want)
	}
	// Drained on every instance: no signal left, nothing judged.
	figs = LiveFigures(eu, now, rule.Window)
	if len(figs) != 1 || figs[0].Signals != 0 || figs[0].Requests != 0 || figs[0].Failing(rule) || !reflect.DeepEqual(figs[0].Drained, []string{"eu/proxy-1"}) {
		t.Fatalf("drained on its only proxy: %+v", figs)
	}
	// Undrained after now: proxy-1 is still left out while a drained
	// signal is in the window, and counts once they all left it.
	undrained := proxySignals("web", "sg-b", "eu", "proxy-1", now.Add(5*time.Minute), 20, 40, 0, nil, nil)
	all := append(append([]reporting.Signal(nil), eu...), undrained...)
	if f := LiveFigures(all, now.Add(5*time.Minute-time.Second), rule.Window); len(f) != 1 || f[0].Signals != 0 {
		t.Fatalf("a window after the undrain, with a drained signal in it: %+v", f)
	}
	if f := LiveFigures(all, now.Add(5*time.Minute), rule.Window); len(f) != 1 || f[0].Signals != 20 || len(f[0].Drained) != 0 {
		t.Fatalf("once the drained signals left the window: %+v", f)
	}
}

// TestLiveErrorsDrainedOnOneProxy: pool web's sg-b is drained on
// eu/proxy-1, which ejected it too, while us/proxy-2 still sends it traffic
// and fails 20% of it: the alert fires on proxy-2's figures alone and says
// proxy-1 is left out. sg-c, drained and ejected on proxy-1 and fine on
// proxy-2, does not fire (it did: 50% of its signals ejected).
func TestLiveErrorsDrainedOnOneProxy(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := store.Open(t.TempDir(), store.Options{Now: clock.Now, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	a, err := New(Config{DeadMan: DeadManRule{Disabled: true}, LiveErrors: LiveErrorsRule{For: time.Nanosecond}}, nil, st,
		Options{Now: clock.Now, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := clock.Now()
	var sigs []reporting.Signal
	sigs = append(sigs, proxySignals("web", "sg-b", "eu", "proxy-1", now, 20, 0, 0, always, always)...)
	sigs = append(sigs, proxySignals("web", "sg-b", "us", "proxy-2", now, 20, 50, 10, nil, nil)...)
	sigs = append(sigs, proxySignals("web", "sg-c", "eu", "proxy-1", now, 20, 0, 0, always, always)...)
	sigs = append(sigs, proxySignals("web", "sg-c", "us", "proxy-2", now, 20, 50, 0, nil, nil)...)
	if err := st.PublishSignals(ctx, sigs); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := a.Evaluate(ctx); err != nil {
			t.Fatal(err)
		}
		clock.Add(time.Second)
	}
	got := liveAlerts(a)
	al, ok := got["web/sg-b"]
	if !ok || len(got) != 1 {
		t.Fatalf("want one live_errors alert, for web/sg-b, got %v", got)
	}
	want := "pool web origin sg-b: 20% of live requests failed over 5m (200 of 1000: 200 5xx); no check covers sg-b: " +
		"add one that fetches what users fetch; drained on eu/proxy-1 (left out)"
	if al.Summary != want || !reflect.DeepEqual(al.Regions, []string{"us"}) {
		t.Fatalf("summary %q regions %v\nwant %q [us]", al.Summary, al.Regions, want)
	}
}
