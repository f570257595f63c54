package canary

import (
	"log/slog"
	"slices"
	"strings"

	"github.com/vigil-synthetics/vigil/scripts"
)

// WarnNoBrowser logs one WARN line when pairs hold browser checks and b
// finds no browser to run them in (at start and at every reload): their
// runs will fail with browser_unavailable, which is not counted against
// the targets, so without the line an agent installed without Chromium
// would only show unknown verdicts and, later, dead-man alerts.
func WarnNoBrowser(log *slog.Logger, b *scripts.Browser, pairs []Pair) {
	var names []string
	for i := range pairs {
		if usesBrowser(&pairs[i]) && !slices.Contains(names, pairs[i].Check.Name) {
			names = append(names, pairs[i].Check.Name)
		}
	}
	if len(names) == 0 {
		return
	}
	if err := b.Available(); err != nil {
		log.Warn("browser checks are configured but this agent has no browser: their runs fail with browser_unavailable, are not counted against their targets (verdicts go unknown) and the alerter's dead_man rule reports them; install Chromium or set agent.browser.exec_path",
			"checks", strings.Join(names, ","), "err", err)
	}
}
