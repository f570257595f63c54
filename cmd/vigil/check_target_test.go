package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// TestCheckTargetFlag: vigil check --target NAME runs only the pairs of
// that target (repeatable, or a comma list; with --check, both apply), so
// one origin is re-checked without touching the others: an origin left
// out gets no request. An unknown name is a usage error (exit 2) with the
// nearest name, and a selection with nothing to run says why.
func TestCheckTargetFlag(t *testing.T) {
	var hits [3]atomic.Int64
	var srv [3]*httptest.Server
	for i := range srv {
		srv[i] = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits[i].Add(1)
			fmt.Fprintln(w, "ok")
		}))
		defer srv[i].Close()
	}
	cfg := writeConfig(t, fmt.Sprintf(`
targets:
  - {name: origin-a, url: %s}
  - {name: origin-b, url: %s}
  - {name: origin-c, url: %s}
checks:
  - {name: healthz, targets: [origin-a, origin-b], http: {path: /healthz}}
  - {name: asset, targets: [origin-a, origin-b], http: {path: /asset.bin}}
  - {name: old, targets: [origin-c], disabled: true, http: {path: /}}
`, srv[0].URL, srv[1].URL, srv[2].URL))

	pairsOf := func(out string) []string {
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if !strings.HasPrefix(line, "{") {
				continue
			}
			var m struct{ Check, Target string }
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("bad JSON line %q: %v", line, err)
			}
			got = append(got, m.Check+"×"+m.Target)
		}
		slices.Sort(got)
		return got
	}
	reset := func() {
		for i := range hits {
			hits[i].Store(0)
		}
	}

	for _, c := range []struct {
		name  string
		args  []string
		pairs []string
		hits  [3]int64
	}{
		{"one target", []string{"--target", "origin-b"}, []string{"asset×origin-b", "healthz×origin-b"}, [3]int64{0, 2, 0}},
		{"repeated", []string{"--target", "origin-b", "--target", "origin-a"},
			[]string{"asset×origin-a", "asset×origin-b", "healthz×origin-a", "healthz×origin-b"}, [3]int64{2, 2, 0}},
		{"comma list", []string{"--target", "origin-a,origin-b"},
			[]string{"asset×origin-a", "asset×origin-b", "healthz×origin-a", "healthz×origin-b"}, [3]int64{2, 2, 0}},
		{"with --check", []string{"--target", "origin-b", "--check", "asset"}, []string{"asset×origin-b"}, [3]int64{0, 1, 0}},
		{"a disabled check named", []string{"--target", "origin-c", "old"}, []string{"old×origin-c"}, [3]int64{0, 0, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			reset()
			out, code := runCLI(t, append([]string{"check", "-c", cfg, "--json"}, c.args...)...)
			if code != 0 {
				t.Fatalf("exit %d, want 0\n%s", code, out)
			}
			if got := pairsOf(out); !slices.Equal(got, c.pairs) {
				t.Fatalf("ran %v, want %v\n%s", got, c.pairs, out)
			}
			for i := range hits {
				if n := hits[i].Load(); n != c.hits[i] {
					t.Errorf("origin %d got %d requests, want %d", i, n, c.hits[i])
				}
			}
		})
	}

	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"misspelt", []string{"--target", "orign-b"}, `no checks to run: no target named "orign-b" (did you mean origin-b?)`},
		{"two unknown", []string{"--target", "x1,origin-a,y2"}, `no targets named "x1", "y2" (the file's targets: origin-a, origin-b, origin-c)`},
		{"only disabled checks", []string{"--target", "origin-c"}, `no check to run targets "origin-c": only disabled checks run on it (old): name one with --check`},
		{"--check elsewhere", []string{"--target", "origin-c", "--check", "asset"}, `no check to run targets "origin-c": --check asset runs elsewhere (checks that run on it: old)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			reset()
			out, code := runCLI(t, append([]string{"check", "-c", cfg}, c.args...)...)
			if code != 2 || !strings.Contains(out, c.want) {
				t.Fatalf("exit %d, want 2 with %q\n%s", code, c.want, out)
			}
			for i := range hits {
				if n := hits[i].Load(); n != 0 {
					t.Errorf("origin %d got %d requests on a usage error", i, n)
				}
			}
		})
	}
}
