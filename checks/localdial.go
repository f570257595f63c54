package checks

import "github.com/vigil-synthetics/vigil/reporting/units"

// localDialMsg is Result.Err of a run whose dial failed for want of a
// resource of the agent's own host (units.LocalDialError), naming the
// limit it ran into.
func localDialMsg(err error) string {
	const pre = "agent: cannot open a connection to the target: "
	if limit := units.LocalLimit(err); limit != "" {
		return pre + limit
	}
	return pre + rootMsg(err)
}
