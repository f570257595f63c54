package checks

import (
	"errors"
	"os"
	"strconv"
	"syscall"
)

// localDialError reports whether a dial failed for want of a resource of
// the agent's own host — its open-file limit (EMFILE), the system's
// (ENFILE), a free local port (EADDRNOTAVAIL), kernel buffers or memory
// (ENOBUFS, ENOMEM), or socket() failing otherwise — before any packet was
// sent to the target: the agent could not run the check, the target is not
// to blame.
func localDialError(err error) bool {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.EADDRNOTAVAIL} {
		if errors.Is(err, e) {
			return true
		}
	}
	var se *os.SyscallError
	return errors.As(err, &se) && se.Syscall == "socket"
}

// localDialMsg is Result.Err of a run whose dial failed with a local error,
// naming the limit it ran into.
func localDialMsg(err error) string {
	const pre = "agent: cannot open a connection to the target: "
	switch {
	case errors.Is(err, syscall.EMFILE):
		if n, ok := openFileLimit(); ok {
			return pre + "too many open files (this process's limit is " + strconv.FormatUint(n, 10) + ": raise it, e.g. ulimit -n or LimitNOFILE=)"
		}
		return pre + "too many open files (this process's open-file limit: raise it)"
	case errors.Is(err, syscall.ENFILE):
		return pre + "too many open files in the system (the system-wide limit, fs.file-max: raise it)"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return pre + "no local port free (ephemeral ports exhausted: widen net.ipv4.ip_local_port_range)"
	case errors.Is(err, syscall.ENOBUFS), errors.Is(err, syscall.ENOMEM):
		return pre + "the kernel is out of buffers or memory (" + rootMsg(err) + ")"
	}
	return pre + rootMsg(err)
}
