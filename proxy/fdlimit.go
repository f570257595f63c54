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
	need := 2*uint64(maxConns) + fdHeadroom
	if limit == 0 || limit >= need {
		return ""
	}
	fit := "lower max_client_conns"
	if limit > fdHeadroom+2 {
		fit = fmt.Sprintf("lower max_client_conns to %d", (limit-fdHeadroom)/2)
	}
	return fmt.Sprintf("max_client_conns: %d: the client connections and the origin connections they use need about %d open files "+
		"(2 × %d + %d), but this process's open-file limit is %d: past it, requests get 503 for want of a file to reach an origin "+
		"and new clients wait unserved. Raise the limit to at least %d where vigil is started (the hard limit: vigil raises its soft limit to it; "+
		"ulimit -n in its shell, LimitNOFILE= in a systemd unit, --ulimit nofile= with Docker), or %s",
		maxConns, need, maxConns, fdHeadroom, limit, need, fit)
}
