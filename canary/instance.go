package canary

import (
	"runtime"
	"sync"
	"weak"

	"github.com/vigil-synthetics/vigil/reporting"
)

// A canary signs every verdict it publishes with its instance
// (reporting.NewInstance: hostname and a random id drawn when the Canary is
// made), so that the readers of a shared store can tell two canaries with
// the same agent.region and agent.vantage apart (reporting.DuplicateWatch).
// The instance is kept beside the Canary, by a weak pointer, and forgotten
// with it.
var instances sync.Map // weak.Pointer[Canary] → string

// Instance returns the canary's instance, drawn at its first use (the
// first verdict published, in practice at start) and kept for the
// Canary's life; a restarted process is a new instance.
func (c *Canary) Instance() string {
	k := weak.Make(c)
	if v, ok := instances.Load(k); ok {
		return v.(string)
	}
	v, loaded := instances.LoadOrStore(k, reporting.NewInstance())
	if !loaded {
		runtime.AddCleanup(c, func(k weak.Pointer[Canary]) { instances.Delete(k) }, k)
	}
	return v.(string)
}
