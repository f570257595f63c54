package alerting

import (
	"log/slog"
	"time"
)

// evalFailureLogEvery is the least time between two log lines about one
// run of failed evaluations (the first is logged at once). A variable so
// tests can shorten it.
var evalFailureLogEvery = time.Minute

// evalFailureLog logs Run's failed evaluations (the store unreadable)
// without a line per evaluation (failureRun), as the canaries' and the
// proxy's store logs do. The zero value is ready; not safe for concurrent
// use.
type evalFailureLog struct{ run failureRun }

// record notes one evaluation at now: err nil when it worked.
func (l *evalFailureLog) record(log *slog.Logger, now time.Time, err error) {
	switch line, r := l.run.note(now, err != nil, evalFailureLogEvery); line {
	case lineAgain:
		log.Info("alerting: evaluation works again", "failures", r.failures, "failed_for", r.failedFor(now))
	case lineFirst:
		log.Warn("alerting: evaluation failed; no alert fires or resolves until it works again", "err", err)
	case lineStill:
		log.Warn("alerting: evaluation still failing", "err", err, "failures", r.failures,
			"not_logged", r.suppressed, "failing_for", r.failedFor(now))
	}
}
