package reporting

import (
	"sync"
	"time"
)

// Failing remembers since when a repeated operation (writes to a store,
// reads of a verdict source) has been failing, for /healthz. The zero value
// is ready: nothing failing. Safe for concurrent use.
type Failing struct {
	mu    sync.Mutex
	since time.Time // when the current run of failures began
	last  error     // nil: the last attempt succeeded
}

// Record notes an attempt's outcome: the first failure after a success
// starts the clock, later ones replace the error, a success clears both.
func (f *Failing) Record(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		f.since, f.last = time.Time{}, nil
		return
	}
	if f.last == nil {
		f.since = time.Now()
	}
	f.last = err
}

// State returns since when attempts fail and the last error; a nil error
// when the last attempt succeeded (or none was made).
func (f *Failing) State() (since time.Time, last error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.since, f.last
}
