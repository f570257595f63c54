package statuspage

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vigil-synthetics/vigil/reporting"
)

// TestLongNamesKeepColumnsOnScreen: in real Chromium at 1280 px, a
// 180-character check name and a long target name wrap in their column
// instead of pushing the state cells off-screen (they did: every state was
// to the right of the window).
func TestLongNamesKeepColumnsOnScreen(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no Chromium")
	}
	bin := chromium(t)
	src := &memSource{now: time.Now}
	now := time.Now()
	long := strings.Repeat("checkout-", 20) // 180 characters, one word
	target := strings.Repeat("origin-", 10) + "a"
	for _, region := range []string{"ap-south", "eu-west", "us-east"} {
		src.add(reporting.Verdict{Check: long, Target: target, Region: region, Vantage: "c1", State: reporting.StateHealthy,
			OK: true, TTFB: 12 * time.Millisecond, At: now, Expires: now.Add(time.Hour)})
	}
	p, err := New(Options{Verdicts: src, Refresh: -1})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	ctx := chromeContext(t, bin, chromedp.WindowSize(1280, 900))
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`td.cell[data-region="us-east"]`))); err != nil {
		t.Fatalf("open page: %v", err)
	}
	right, err := chromedp.Run(ctx, chromedp.Evaluate[float64](
		`Math.max(...[...document.querySelectorAll('td.cell')].map(c => c.getBoundingClientRect().right)) - window.innerWidth`))
	if err != nil {
		t.Fatal(err)
	}
	if right > 0 {
		t.Errorf("the last state column ends %.0f px right of the 1280 px window", right)
	}
}
