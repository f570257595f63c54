package proxy

import "fmt"

// fdHeadroom is the open files the proxy needs besides its client and
// origin connections: listeners, the access log, the runtime's poller, the
// store and the checks of `vigil run`, DNS lookups.
const fdHeadroom = 64

// fdLimitWarning is the warning Run logs at start for an open-file limit
// (RLIMIT_NOFILE's soft value, which Go raises to one below the hard one at
// start) below what maxConns client connections need: one file each, one more for the origin
// connection each active one uses, plus fdHeadroom. Past the limit, a
// client's request finds no file for its origin connection and gets 503
// (cause local) and new clients are accepted by the kernel but never
// served; nginx warns the same ("worker_connections exceed open file
// resource limit"). "" when the limit suffices or is unknown (limit 0).
func fdLimitWarning(maxConns int, limit uint64) string {
	return fdLimitText(maxConns, limit, fmt.Sprintf("this process's open-file limit is %d", limit))
}

// OpenFileLimit is this process's open-file limit (0: unknown or
// unlimited): in `vigil validate`, what a vigil started from the same
// shell gets (Go raises the soft limit to the hard one less 1 in both),
// not necessarily what the service gets.
func OpenFileLimit() uint64 { return openFileLimit() }

// OpenFileLimitWarning is the start warning as `vigil validate` prints it,
// for the limit OpenFileLimit read there. "" when limit suffices for
// maxClientConns or is unknown (0).
func OpenFileLimitWarning(maxClientConns int, limit uint64) string {
	return fdLimitText(maxClientConns, limit, fmt.Sprintf("the open-file limit a vigil started from this shell gets is %d "+
		"(as vigil validate reads it here; a service gets its own: LimitNOFILE= in its systemd unit)", limit))
}

// fdLimitText is the warning for maxConns under limit; has names the limit
// and says its value.
func fdLimitText(maxConns int, limit uint64, has string) string {
	need := 2*uint64(maxConns) + fdHeadroom
	if limit == 0 || limit >= need {
		return ""
	}
	fit := "lower max_client_conns"
	if limit > fdHeadroom+2 {
		fit = fmt.Sprintf("lower max_client_conns to %d", (limit-fdHeadroom)/2)
	}
	return fmt.Sprintf("max_client_conns: %d: the client connections and the origin connections they use need about %d open files "+
		"(2 × %d + %d), but %s: past it, requests get 503 for want of a file to reach an origin "+
		"and new clients wait unserved. Raise the limit to at least %d where vigil is started (the hard limit: vigil raises its soft limit to it; "+
		"ulimit -n in its shell, LimitNOFILE= in a systemd unit, --ulimit nofile= with Docker), or %s",
		maxConns, need, maxConns, fdHeadroom, has, need, fit)
}
