package scripts

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// TestCutTabOpeningLeavesNothing: tabs whose opening is cut short at any
// point (before the browser made the tab's browser context, between that
// and the tab, while attaching) leave no browser context and no tab
// behind once their closing is over. chromedp cleans up only a tab it
// attached to: one cut after the browser made the context or the tab
// kept both in the long-running browser for good.
func TestCutTabOpeningLeavesNothing(t *testing.T) {
	needChromium(t)
	b := NewBrowser(BrowserConfig{MaxConcurrent: 1})
	t.Cleanup(func() { b.Close() })
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	root, err := b.running(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	contexts := func() (int, int) {
		t.Helper()
		bc, err := chromedp.CallBrowser(root, target.GetBrowserContexts, cdp.Empty{})
		if err != nil {
			t.Fatal(err)
		}
		tg, err := chromedp.CallBrowser(root, target.GetTargets, target.GetTargetsParams{})
		if err != nil {
			t.Fatal(err)
		}
		ids := map[cdp.BrowserContextID]bool{}
		for _, id := range bc.BrowserContextIDs {
			ids[id] = true
		}
		pages := 0
		for _, ti := range tg.TargetInfos {
			if ti.Type == "page" && ids[ti.BrowserContextID] {
				pages++
			}
		}
		return len(ids), pages
	}
	ctxs0, pages0 := contexts()
	cut := 0
	const openings = 16
	for i := range openings {
		// Deadlines from 0 to 300 ms cut the opening at every stage on a
		// 2-core machine (a few may not be cut).
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i)*20*time.Millisecond)
		tab, err := b.openTab(ctx)
		cancel()
		var ce *cutError
		switch {
		case err == nil:
			tab.close()
		case errors.As(err, &ce):
			cut++
			if ce.closed != nil {
				select {
				case <-ce.closed:
				case <-time.After(20 * time.Second):
					t.Fatal("a cut tab's closing did not end within 20 s")
				}
			}
		default:
			t.Fatalf("opening %d: %v", i, err)
		}
	}
	if cut == 0 {
		t.Fatal("no opening was cut short")
	}
	var ctxs, pages int
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if ctxs, pages = contexts(); ctxs <= ctxs0 && pages <= pages0 || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("%d of %d openings cut; browser contexts %d (%d before), their tabs %d (%d before)", cut, openings, ctxs, ctxs0, pages, pages0)
	if ctxs > ctxs0 || pages > pages0 {
		t.Errorf("cut openings left %d browser contexts and %d tabs behind", ctxs-ctxs0, pages-pages0)
	}
}
