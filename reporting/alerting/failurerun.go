package alerting

import "time"

// failureRun follows a run of failed attempts (evaluations, saves of the
// state file) so that it is logged without a line per attempt: the first
// failure at once, then at most one line per interval with how many failed
// in a row and how many were not logged, and one line when an attempt
// works again. The zero value is ready; not safe for concurrent use.
type failureRun struct {
	failures   int       // in a row
	suppressed int       // failures not logged since the last line
	since      time.Time // of the first failure in a row
	latest     time.Time // of the latest failure
	last       time.Time // of the last line
}

// runLine is the line an attempt calls for.
type runLine int

const (
	lineNone  runLine = iota // nothing to log
	lineFirst                // the first failure of a run
	lineStill                // the run goes on, every apart since the last line
	lineAgain                // an attempt worked after a run of failures
)

// note records one attempt at now (failed or not) and says which line to
// log; run is the state the line reports (for lineAgain, the run that
// ended: the state itself is reset).
func (r *failureRun) note(now time.Time, failed bool, every time.Duration) (line runLine, run failureRun) {
	switch {
	case !failed && r.failures > 0:
		run = *r
		*r = failureRun{}
		return lineAgain, run
	case !failed:
		return lineNone, *r
	case r.failures == 0:
		r.failures, r.since, r.latest, r.last = 1, now, now, now
		return lineFirst, *r
	}
	r.failures++
	r.latest = now
	if now.Sub(r.last) < every {
		r.suppressed++
		return lineNone, *r
	}
	run = *r
	r.suppressed, r.last = 0, now
	return lineStill, run
}

// failedFor is how long the run has lasted at now.
func (r failureRun) failedFor(now time.Time) string {
	return now.Sub(r.since).Round(time.Second).String()
}
