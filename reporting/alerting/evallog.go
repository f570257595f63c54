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
// without a line per evaluation: the first failure, then at most one line
// per evalFailureLogEvery with how many failed in a row and how many were
// not logged, and one line when an evaluation works again, as the
// canaries' and the proxy's store logs do. The zero value is ready; not
// safe for concurrent use.
type evalFailureLog struct {
	failures   int       // in a row
	suppressed int       // failures not logged since the last line
	since      time.Time // of the first failure in a row
	last       time.Time // of the last line
}

// record notes one evaluation at now: err nil when it worked.
func (l *evalFailureLog) record(log *slog.Logger, now time.Time, err error) {
	switch {
	case err == nil && l.failures > 0:
		log.Info("alerting: evaluation works again", "failures", l.failures,
			"failed_for", now.Sub(l.since).Round(time.Second).String())
		*l = evalFailureLog{}
	case err == nil:
	case l.failures == 0:
		l.failures, l.since, l.last = 1, now, now
		log.Warn("alerting: evaluation failed; no alert fires or resolves until it works again", "err", err)
	default:
		l.failures++
		if now.Sub(l.last) < evalFailureLogEvery {
			l.suppressed++
			return
		}
		log.Warn("alerting: evaluation still failing", "err", err, "failures", l.failures,
			"not_logged", l.suppressed, "failing_for", now.Sub(l.since).Round(time.Second).String())
		l.suppressed, l.last = 0, now
	}
}
