package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateVariableInScriptExpect: a ${name} of the script's variables in
// an http step's expect (which is not expanded) makes `vigil validate` exit
// 2 naming the file, the check, the step and the key, and pointing to an
// expr step; a "${" that names no variable (a check for unrendered
// templates) is accepted.
func TestValidateVariableInScriptExpect(t *testing.T) {
	bad := writeConfig(t, `
targets: [{name: o, url: "http://127.0.0.1:1"}]
checks:
  - name: api
    targets: [o]
    script:
      - http: {path: /login}
        extract: {token: {json: token}}
      - name: me
        http: {path: /me}
        expect: {body: {not_contains: ["${token}"]}}
`)
	out, code := runCLI(t, "validate", "-c", bad)
	want := bad + `:11:40: checks[0].script[1].expect.body.not_contains[0]: variables are not expanded in expect (step "me"): ` +
		`${token} would be matched as literal text; compare the variable in an expr step instead, e.g. expr: 'last.body contains vars.token'`
	if code != 2 || strings.TrimSpace(out) != want {
		t.Errorf("exit %d:\n%s\nwant exit 2:\n%s", code, out, want)
	}

	ok := writeConfig(t, `
targets: [{name: o, url: "http://127.0.0.1:1"}]
checks:
  - name: page
    targets: [o]
    script:
      - http: {path: /login}
        extract: {token: {json: token}}
      - http: {path: /}
        expect: {body: {not_contains: ["${", "${user.name}", "${tokens}"]}}
`)
	if out, code := runCLI(t, "validate", "-c", ok); code != 0 || strings.TrimSpace(out) != "ok" {
		t.Errorf("literal ${ in expect: exit %d: %s", code, out)
	}
}

// TestValidateBrowserExecPath: an agent.browser.exec_path that is no
// executable file on the machine running `vigil validate` is an error
// (exit 2) that says so; an executable, or a name found on PATH, is ok.
func TestValidateBrowserExecPath(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "chromium-not-executable")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "chromium")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	const where = " on this machine (checked where vigil validate runs; the agent needs it where the agent runs)"
	for _, tc := range []struct{ path, err string }{
		{"/nonexistent/chromium", "/nonexistent/chromium: no such file" + where},
		{plain, plain + ": not executable (mode 0644)" + where},
		{dir, dir + ": is a directory, not a program," + where},
		{"no-such-browser", "no-such-browser: not found in PATH" + where},
		{prog, ""},
		{"chromium", ""},
	} {
		cfg := writeConfig(t, `
agent: {browser: {exec_path: "`+tc.path+`"}}
targets: [{name: o, url: "http://127.0.0.1:1"}]
checks: [{name: a, targets: [o], http: {path: /}}]
`)
		out, code := runCLI(t, "validate", "-c", cfg)
		if tc.err == "" {
			if code != 0 || strings.TrimSpace(out) != "ok" {
				t.Errorf("exec_path %s: exit %d: %s", tc.path, code, out)
			}
			continue
		}
		// A warning (validate often runs where the agent's browser is not
		// installed): exit 0, "ok", and the warning naming the key.
		if want := "ok\nwarning: " + cfg + ":2:19: agent.browser.exec_path: " + tc.err; code != 0 || strings.TrimSpace(out) != want {
			t.Errorf("exec_path %s: exit %d:\n%s\nwant exit 0:\n%s", tc.path, code, out, want)
		}
	}
}
