// Command vigil is a synthetic monitoring agent, canary runner and
// health-aware reverse proxy in one binary. See `vigil --help`.
package main

import (
	"errors"
	"fmt"
	"os"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// exitError carries a process exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func main() {
	err := newRootCmd().Execute()
	if err == nil {
		return
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(os.Stderr, ee.err)
		}
		os.Exit(ee.code)
	}
	fmt.Fprintln(os.Stderr, "vigil:", err)
	os.Exit(2)
}
