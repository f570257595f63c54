package canary

import (
	"slices"
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/scripts"
)

// TestConfigSecrets: Secrets lists every credential the config writes as
// it is, and leaves out a script step's value that is expanded at run
// time.
func TestConfigSecrets(t *testing.T) {
	nav := "https://nu:NavPassword-1@example.com/"
	c := Config{
		Agent:   AgentConfig{AdminToken: "AdminTok-31337"},
		Targets: []TargetConfig{{Name: "t", URL: "http://tu:TargetPw-1@example.com"}},
		Checks: []CheckConfig{
			{Name: "c", URL: "http://TokenAsUser-12345@example.com", HTTP: &checks.HTTPSpec{
				ProxyURL:  "http://pu:ProxyPw-1@proxy.example:3128",
				BasicAuth: &checks.BasicAuth{Username: "bob", Password: "BasicPw-1"},
				Headers: map[string]string{"Authorization": "Bearer HdrTok-1", "Cookie": "lang=en; sid=CookieSid-1",
					"X-Api-Key": "ApiKey-1", "Accept": "text/plain", "Proxy-Authorization": "Basic cHg6UHhIZHJQdy0x"},
			}},
			{Name: "s", Script: scripts.Script{
				{HTTP: &checks.HTTPSpec{URL: "http://su:StepUrlPw-1@example.com/x", ProxyURL: "socks5://sp:StepProxyPw-1@proxy.example",
					BasicAuth: &checks.BasicAuth{Username: "sam", Password: "StepPw-1"},
					Headers:   map[string]string{"Proxy-Authorization": "Basic StepPxHdr-1"}}},
				{HTTP: &checks.HTTPSpec{BasicAuth: &checks.BasicAuth{Username: "sam", Password: "${env:LATER}"},
					Headers: map[string]string{"Authorization": "Bearer ${token}"}}},
				{Browser: &scripts.BrowserStep{Navigate: nav}},
				{Browser: &scripts.BrowserStep{Navigate: map[string]any{"url": "https://nu2:NavPassword-2@example.com/"}}},
			}},
		},
	}
	got := c.Secrets()
	for _, want := range []string{"AdminTok-31337", "TargetPw-1", "tu:TargetPw-1", "TokenAsUser-12345",
		"ProxyPw-1", "pu:ProxyPw-1", "BasicPw-1", "bob:BasicPw-1", "HdrTok-1", "CookieSid-1",
		"cHg6UHhIZHJQdy0x", "px:PxHdrPw-1", "PxHdrPw-1", "ApiKey-1",
		"StepUrlPw-1", "StepProxyPw-1", "sp:StepProxyPw-1", "StepPw-1", "sam:StepPw-1", "StepPxHdr-1",
		"NavPassword-1", "nu:NavPassword-1", "NavPassword-2"} {
		if !slices.Contains(got, want) {
			t.Errorf("Secrets lacks %q", want)
		}
	}
	for _, v := range got {
		if v == "text/plain" || v == "Bearer HdrTok-1" || v == "lang=en; sid=CookieSid-1" || v == "${env:LATER}" || v == "sam:${env:LATER}" || v == "Bearer ${token}" {
			t.Errorf("Secrets lists %q", v)
		}
	}
}
