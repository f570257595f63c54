package proxy

import (
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/vigil-synthetics/vigil/reporting/units"
)

// Causes of a try that failed before anything was sent, beyond those in
// retryCauses.
const (
	// CauseConnect: the connection failed for another reason than a
	// refusal or a timeout (a host or network unreachable, …). Charged to
	// the origin like connect_refused.
	CauseConnect = "connect"
	// CauseLocal: the proxy itself could not open a connection — its own
	// open-file limit (EMFILE), the system's (ENFILE), no local port left
	// (EADDRNOTAVAIL), no kernel buffers or memory (ENOBUFS, ENOMEM), or
	// socket() failed otherwise. No packet left the host, so the try is
	// never charged to the origin: no passive failure, no ejection, not in
	// its signal.
	CauseLocal = "local"
)

// localLog rate-limits the error line of local dial failures to one every
// localLogEvery per process (the limit is the process's), with the count of
// those left out.
var localLog struct {
	next       atomic.Int64
	suppressed atomic.Int64
}

const localLogEvery = 10 * time.Second

func logLocalDial(log *slog.Logger, pool string, err error) {
	now := time.Now().UnixNano()
	next := localLog.next.Load()
	if now < next || !localLog.next.CompareAndSwap(next, now+int64(localLogEvery)) {
		localLog.suppressed.Add(1)
		return
	}
	limit := units.LocalLimit(err)
	if limit == "" {
		limit = err.Error()
	}
	log.Error("proxy: cannot open a connection to an origin: "+limit, "pool", pool,
		"err", err.Error(), "suppressed", localLog.suppressed.Swap(0))
}
