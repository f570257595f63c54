package units

import (
	"fmt"
	"net"
	"strconv"
)

// CheckListen validates a listen address "host:port": the port is a number
// from 0 to 65535 or a service name the system knows ("http-alt"), as
// net.Listen accepts. example, when set, is shown in the host:port error.
func CheckListen(addr, example string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		if example != "" {
			return fmt.Errorf("%q: want host:port, e.g. %s", addr, example)
		}
		return fmt.Errorf("%q: want host:port", addr)
	}
	if n, err := strconv.ParseUint(port, 10, 64); err == nil {
		if n > 65535 {
			return fmt.Errorf("%q: port %q: want a number from 0 to 65535", addr, port)
		}
		return nil
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("%q: port %q: want a number from 0 to 65535 or a known service name", addr, port)
	}
	return nil
}
