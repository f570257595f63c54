package alerting

import (
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/reporting"
)

// TestGroupTitleCountsFiringChecks: the title of a group spanning checks
// counts and names the checks of its firing alerts, as its [FIRING:N]
// does: a check that just resolved is in the text's "resolved" line, not
// in "on N checks"; an all-resolved notification names the resolved ones.
func TestGroupTitleCountsFiringChecks(t *testing.T) {
	r := newGBRig(t)
	r.noPagerD = true
	a := r.start([]string{"severity"})
	st := map[string]reporting.State{"c01": U, "c02": U, "c03": U}
	r.step(a, st)
	r.step(a, st)
	st["c01"] = H
	r.step(a, st)
	hooks := r.hook.webhooks(t)
	if len(hooks) != 2 {
		t.Fatalf("%d webhook notifications, want 2", len(hooks))
	}
	p := hooks[1]
	first, _, _ := strings.Cut(p.Text, "\n")
	if want := "[FIRING:2] VigilCheckDown on 2 checks: c02, c03 (page)"; p.Title != want ||
		!strings.HasSuffix(first, "; 1 resolved: down on c01/origin-a") {
		t.Fatalf("c01 resolved: title %q, want %q; first line %q", p.Title, want, first)
	}
	if titles, _ := r.slackTexts(); len(titles) != 2 || titles[1] != p.Title {
		t.Fatalf("slack titles %q", titles)
	}

	// One check left firing: the title names it alone.
	st["c02"] = H
	r.step(a, st)
	hooks = r.hook.webhooks(t)
	if p = hooks[len(hooks)-1]; len(hooks) != 3 || p.Title != "[FIRING:1] VigilCheckDown c03 (page)" {
		t.Fatalf("c02 resolved: %d notifications, title %q", len(hooks), p.Title)
	}
	// Nothing fires: the resolved ones.
	st["c03"] = H
	r.step(a, st)
	hooks = r.hook.webhooks(t)
	if p = hooks[len(hooks)-1]; len(hooks) != 4 || p.Title != "[RESOLVED] VigilCheckDown c03 (page)" {
		t.Fatalf("all resolved: %d notifications, title %q", len(hooks), p.Title)
	}
}
