package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// TestCheckPositionalNames: `vigil check -c FILE NAME...` runs the named
// checks as --check NAME does (names may be comma-separated, and mixed with
// --check), instead of failing with `unknown command "NAME"`; an unknown
// name is the --check error; a YAML file name given without -c says to
// write -c.
func TestCheckPositionalNames(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("fine")) }))
	defer ok.Close()
	// A dead port: listened on, then closed.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	cfg := writeConfig(t, fmt.Sprintf(`checks:
  - {name: api, url: "%[1]s/api"}
  - {name: web, url: "%[1]s/web"}
  - {name: down, url: "http://%[2]s/"}
  - {name: more, url: "%[1]s/more"}
`, ok.URL, dead))
	ran := func(out string) []string {
		var names []string
		for _, line := range strings.Split(out, "\n") {
			var m struct{ Check string }
			if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &m) == nil {
				names = append(names, m.Check)
			}
		}
		slices.Sort(names)
		return names
	}
	out, code := runCLI(t, "check", "-c", cfg, "--json", "web")
	if got := ran(out); code != 0 || !slices.Equal(got, []string{"web"}) {
		t.Fatalf("check web: exit %d, ran %v, want 0 and [web]:\n%s", code, got, out)
	}
	out, code = runCLI(t, "check", "-c", cfg, "--json", "api,more", "--check", "web")
	if got := ran(out); code != 0 || !slices.Equal(got, []string{"api", "more", "web"}) {
		t.Fatalf("check api,more --check web: exit %d, ran %v, want 0 and [api more web]:\n%s", code, got, out)
	}
	out, code = runCLI(t, "check", "-c", cfg, "--json", "down")
	if got := ran(out); code != 1 || !slices.Equal(got, []string{"down"}) {
		t.Fatalf("check down: exit %d, ran %v, want 1 and [down]:\n%s", code, got, out)
	}
	out, code = runCLI(t, "check", "-c", cfg, "wbe")
	if want := cfg + `: no checks to run: no check named "wbe" (did you mean web?)`; code != 2 || !strings.Contains(out, want) {
		t.Fatalf("check wbe: exit %d, want 2 and %q:\n%s", code, want, out)
	}

	// The file as the argument, as validate takes it.
	out, code = runCLI(t, "check", "site.yaml")
	if want := `"site.yaml": arguments are check names (as --check NAME); to read the config file site.yaml, write -c site.yaml`; code != 2 || !strings.Contains(out, want) {
		t.Fatalf("check site.yaml: exit %d, want 2 and %q:\n%s", code, want, out)
	}
}
