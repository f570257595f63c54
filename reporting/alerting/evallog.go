package alerting

import (
	"log/slog"
	"sync"
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

// deliveryFailLogEvery is the least time between two log lines about one
// receiver's run of failed deliveries (the first is logged at once). A
// variable so tests can change it.
var deliveryFailLogEvery = time.Minute

// deliveryLog logs deliveries that failed for good (all retry.attempts
// spent) per receiver without a line per delivery (failureRun): an
// Alertmanager that is down fails the delivery of every evaluation. The
// first failure is logged at once, then at most one line per
// deliveryFailLogEvery with how many failed and were not logged, and one
// line when a delivery to the receiver works again. It outlives reloads
// (the Alerter owns it), so a reload does not log the run afresh. Safe for
// concurrent use.
type deliveryLog struct {
	now  func() time.Time
	mu   sync.Mutex
	runs map[string]*failureRun // by receiver
}

func newDeliveryLog(now func() time.Time) *deliveryLog {
	if now == nil {
		now = time.Now
	}
	return &deliveryLog{now: now, runs: map[string]*failureRun{}}
}

// record notes one delivery to receiver: errMsg "" when it was accepted;
// attrs describe a failed one (group, status, attempts).
func (l *deliveryLog) record(log *slog.Logger, receiver, errMsg string, attrs ...any) {
	now := l.now()
	l.mu.Lock()
	r := l.runs[receiver]
	if r == nil {
		if errMsg == "" {
			l.mu.Unlock()
			return
		}
		r = &failureRun{}
		l.runs[receiver] = r
	}
	line, run := r.note(now, errMsg != "", deliveryFailLogEvery)
	if line == lineAgain {
		delete(l.runs, receiver)
	}
	l.mu.Unlock()
	switch line {
	case lineAgain:
		log.Info("alerting: deliveries work again", "receiver", receiver, "failures", run.failures,
			"suppressed", run.suppressed, "failed_for", run.failedFor(now))
	case lineFirst:
		log.Warn("alerting: delivery failed", append(append([]any{"receiver", receiver}, attrs...), "err", errMsg)...)
	case lineStill:
		log.Warn("alerting: delivery still failing", append(append([]any{"receiver", receiver}, attrs...),
			"err", errMsg, "failures", run.failures, "suppressed", run.suppressed, "failing_for", run.failedFor(now))...)
	}
}

// end forgets receiver's run of failed deliveries, so that its next
// failure is logged at once as a new run, and returns it; false when it
// has none.
func (l *deliveryLog) end(receiver string) (failureRun, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.runs[receiver]
	if r == nil {
		return failureRun{}, false
	}
	delete(l.runs, receiver)
	return *r, true
}
