package main

import (
	"fmt"
	"strings"
	"testing"
)

// A script extractor's JSON path is checked at load like expect.json[].path:
// a typo is a config error naming the extractor's key, the path and the
// offset, and the JSONPath form after "$" extracts the same value as gjson.
func TestScriptExtractJSONPath(t *testing.T) {
	origin := servicesOrigin(t)
	typo := writeConfig(t, fmt.Sprintf(`
targets: [{name: a, url: %q}]
checks:
  - name: typo
    targets: [a]
    script:
      - http: {path: /h.json}
      - http: {path: /h.json}
        extract: {token: {json: 'a.#(b=='}, name: {json: 'services.0.name'}}
`, origin))
	want := typo + `:9:27: checks[0].script[1].extract.token.json: "a.#(b==": unclosed "(" at 3`
	for _, cmd := range []string{"validate", "check"} {
		out, code := runCLI(t, cmd, "-c", typo)
		if code != 2 || strings.TrimSpace(out) != want {
			t.Errorf("%s: exit %d, output:\n%s\nwant exit 2 and:\n%s", cmd, code, out, want)
		}
	}

	good := writeConfig(t, fmt.Sprintf(`
targets: [{name: a, url: %q}]
checks:
  - name: jsonpath
    targets: [a]
    script:
      - http: {path: /h.json}
        extract: {second: {json: '$.a.b[1]'}, svc: {json: "$['services'][1].name"}, plain: {json: 'services.#(status=="down").name'}}
      - expr: 'vars.second == "2" && vars.svc == "web" && vars.plain == "db"'
`, origin))
	out, code := runCLI(t, "check", "-c", good)
	if code != 0 {
		t.Errorf("check: exit %d, want 0 ($.a.b[1] is 2, $['services'][1].name is web):\n%s", code, out)
	}
}
