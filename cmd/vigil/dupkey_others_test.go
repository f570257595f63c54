package main

import "testing"

// TestDuplicateKeyWithOtherErrors: a key given twice is one error among
// the others of the file, in file order, not the only one shown: the file
// is validated on with the key's first value (a second http: with a bad
// method reports nothing of its own; the first one's bad method does).
func TestDuplicateKeyWithOtherErrors(t *testing.T) {
	path := writeConfig(t, `targets: [{name: a, url: "http://127.0.0.1:9"}]
checks:
  - name: c
    targets: [a]
    intervl: 5s
    http: {method: "GET BAD"}
    http: {method: "POST AGAIN"}
  - name: d
    targets: [a]
    timeout: fast
agent: {region: x}
agent: {region: y}
`)
	out, code := runCLI(t, "validate", "-c", path)
	want := path + `:5: checks[0].intervl: unknown key (did you mean interval?)
` + path + `:6:12: checks[0].http.method: "GET BAD" is not an HTTP method
` + path + `:7: checks[0].http: given twice, at lines 6 and 7 (keep one)
` + path + `:10: checks[1].timeout: "fast": not a duration (use ms, s, m, h or d)
` + path + `:12: agent: given twice, at lines 11 and 12 (keep one)
`
	if code != 2 || out != want {
		t.Fatalf("exit %d, output:\n%s\nwant exit 2 and:\n%s", code, out, want)
	}
}
