package units

import (
	"errors"
	"os"
	"strconv"
	"syscall"
)

// LocalDialError reports whether a dial failed for want of a resource of
// this host — the process's open-file limit (EMFILE), the system's
// (ENFILE), a free local port (EADDRNOTAVAIL), kernel buffers or memory
// (ENOBUFS, ENOMEM), or socket() failing otherwise — before any packet was
// sent: the peer is not to blame.
func LocalDialError(err error) bool {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.EADDRNOTAVAIL} {
		if errors.Is(err, e) {
			return true
		}
	}
	var se *os.SyscallError
	return errors.As(err, &se) && se.Syscall == "socket"
}

// LocalLimit names the limit a LocalDialError ran into and what to raise
// ("too many open files (this process's limit is 256: raise it, …)"), ""
// for an error it does not know.
func LocalLimit(err error) string {
	switch {
	case errors.Is(err, syscall.EMFILE):
		if n, ok := openFileLimit(); ok {
			return "too many open files (this process's limit is " + strconv.FormatUint(n, 10) + ": raise it, e.g. ulimit -n or LimitNOFILE=)"
		}
		return "too many open files (this process's open-file limit: raise it)"
	case errors.Is(err, syscall.ENFILE):
		return "too many open files in the system (the system-wide limit, fs.file-max: raise it)"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return "no local port free (ephemeral ports exhausted: widen net.ipv4.ip_local_port_range or keep connections alive longer)"
	case errors.Is(err, syscall.ENOBUFS), errors.Is(err, syscall.ENOMEM):
		return "the kernel is out of buffers or memory"
	}
	return ""
}
