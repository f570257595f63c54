package scripts

import (
	"strings"
	"testing"
)

// TestBrowserEnvErrorHidesValue: agent.browser.env takes variable names; a
// NAME=value entry is an error that names the entry and its name but never
// shows the value, which is likely a secret and would otherwise reach
// validate's output, the reload log and the unauthenticated /healthz.
func TestBrowserEnvErrorHidesValue(t *testing.T) {
	for _, tc := range []struct {
		name, entry, want, secret string
	}{
		{"name=value", "API_KEY=literalBROWSERsecret", `env[0]: "API_KEY=…": want a variable name such as HTTPS_PROXY, not NAME=value`, "literalBROWSERsecret"},
		{"no name", "=literalBROWSERsecret", `env[0]: "=…": want a variable name`, "literalBROWSERsecret"},
		{"NUL", "API_KEY\x00literalBROWSERsecret", `env[0]: "API_KEY\x00…": want a variable name`, "literalBROWSERsecret"},
		{"empty", "", `env[0]: "": want a variable name such as HTTPS_PROXY`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := (&BrowserConfig{Env: []string{tc.entry}}).ValidateAndSetDefaults()
			if err == nil {
				t.Fatalf("env [%q]: no error", tc.entry)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
			if tc.secret != "" && strings.Contains(err.Error(), tc.secret) {
				t.Errorf("error %q shows the value %q", err, tc.secret)
			}
		})
	}
	if err := (&BrowserConfig{Env: []string{"HTTPS_PROXY", "NO_PROXY"}}).ValidateAndSetDefaults(); err != nil {
		t.Errorf("env [HTTPS_PROXY NO_PROXY]: %v, want no error", err)
	}
}
