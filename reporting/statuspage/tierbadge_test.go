package statuspage

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vigil-synthetics/vigil/reporting"
)

// TestTierBadgeStaysInItsColumn: in real Chromium, at 1280 and 700 px, a
// check's tier badge stays inside the check's column. It ran into the
// target column ("SYNTHETIC" over "origin-a"): the column was sized for a
// check name that may wrap, and the badge, kept on the name's line, stuck
// out of it.
func TestTierBadgeStaysInItsColumn(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no Chromium")
	}
	bin := chromium(t)
	src := &memSource{now: time.Now}
	now := time.Now()
	for _, c := range []struct{ check, tier string }{{"healthz", "shallow"}, {"asset", "deep"}, {"login-flow", "synthetic"}} {
		for _, target := range []string{"origin-a", "origin-b"} {
			src.add(reporting.Verdict{Check: c.check, Tier: c.tier, Target: target, Region: "eu-west", Vantage: "c1",
				State: reporting.StateHealthy, OK: true, TTFB: 12 * time.Millisecond, At: now, Expires: now.Add(time.Hour)})
		}
	}
	p, err := New(Options{Verdicts: src, Refresh: -1})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	for _, width := range []int{1280, 700} {
		ctx := chromeContext(t, bin, chromedp.WindowSize(width, 900))
		if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`th.check .tier`))); err != nil {
			t.Fatalf("open page: %v", err)
		}
		// How far each badge reaches past its cell's right edge, and past
		// the left edge of the target cell beside it; the worst of all.
		over, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`Math.max(...[...document.querySelectorAll('th.check')].map(th => {
			const tier = th.querySelector('.tier').getBoundingClientRect();
			const target = th.parentElement.querySelector('td.target').getBoundingClientRect();
			return Math.max(tier.right - th.getBoundingClientRect().right, tier.right - target.left);
		}))`))
		if err != nil {
			t.Fatal(err)
		}
		if over > 0.5 {
			t.Errorf("at %d px a tier badge reaches %.0f px into the target column", width, over)
		}
	}
}
