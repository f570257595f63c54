package proxy

import (
	"errors"
	"log/slog"
	"os"
	"sync/atomic"
	"syscall"
	"time"
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

// localDialError reports whether a dial failed for want of a local
// resource, before any packet was sent to the origin.
func localDialError(err error) bool {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.EADDRNOTAVAIL} {
		if errors.Is(err, e) {
			return true
		}
	}
	var se *os.SyscallError
	return errors.As(err, &se) && se.Syscall == "socket"
}

// localLimit names the limit a local dial error ran into, for the log.
func localLimit(err error) string {
	switch {
	case errors.Is(err, syscall.EMFILE):
		if n, ok := openFileLimit(); ok {
			return "too many open files (this process's limit is " + itoa(n) + ": raise it, e.g. ulimit -n or LimitNOFILE=)"
		}
		return "too many open files (this process's open-file limit: raise it)"
	case errors.Is(err, syscall.ENFILE):
		return "too many open files in the system (the system-wide limit, fs.file-max: raise it)"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return "no local port free (ephemeral ports exhausted: widen net.ipv4.ip_local_port_range or keep connections alive longer)"
	case errors.Is(err, syscall.ENOBUFS), errors.Is(err, syscall.ENOMEM):
		return "the kernel is out of buffers or memory"
	}
	return err.Error()
}

func itoa(n uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

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
	log.Error("proxy: cannot open a connection to an origin: "+localLimit(err), "pool", pool,
		"err", err.Error(), "suppressed", localLog.suppressed.Swap(0))
}
