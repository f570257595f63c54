package units

import (
	"os"
	"strings"
	"testing"
)

func TestCheckListen(t *testing.T) {
	for _, tc := range []struct{ addr, err string }{
		{"127.0.0.1:9470", ""},
		{":0", ""},
		{"[::1]:8080", ""},
		{"127.0.0.1:99999", `"127.0.0.1:99999": port "99999": want a number from 0 to 65535`},
		{"nonsense", `"nonsense": want host:port, e.g. 127.0.0.1:9470`},
		{"127.0.0.1:no-such-service-x", `"127.0.0.1:no-such-service-x": port "no-such-service-x": want a number from 0 to 65535 or a known service name`},
	} {
		err := CheckListen(tc.addr, "127.0.0.1:9470")
		if (err == nil) != (tc.err == "") || err != nil && err.Error() != tc.err {
			t.Errorf("%s: %v, want %q", tc.addr, err, tc.err)
		}
	}
	// A service name the system knows is accepted, as net.Listen does.
	if b, err := os.ReadFile("/etc/services"); err == nil && strings.Contains(string(b), "\nhttp-alt") {
		if err := CheckListen("127.0.0.1:http-alt", ""); err != nil {
			t.Errorf("named port: %v", err)
		}
	}
}
