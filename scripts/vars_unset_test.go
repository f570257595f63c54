package scripts

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
)

// A variable whose re-extraction failed is not set any more, and a
// variable that is not set fails the step that reads it, also in expr
// (where it read as "" and let the step pass).
func TestVariableOfFailedExtractionIsUnset(t *testing.T) {
	var mu sync.Mutex
	var deleted []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			mu.Lock()
			deleted = append(deleted, r.URL.Path)
			mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/api/items/1" {
			w.Write([]byte(`{"id": "1"}`))
			return
		}
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	cases := []struct {
		name, script string
		failStep     int    // the always step that must fail
		want         string // its error says this
		noDelete     bool
	}{
		{"stale value in an always http step", `
- name: create
  http: {path: /api/items/1}
  extract: {id: {json: id}}
- name: reread
  http: {path: /api/other}
  extract: {id: {json: id}}
- name: cleanup
  always: true
  http: {method: DELETE, path: "/api/items/${id}"}
`, 2, "variable id is not set", true},
		{"stale value in an always expr", `
- name: create
  http: {path: /api/items/1}
  extract: {id: {json: id}}
- name: reread
  http: {path: /api/other}
  extract: {id: {json: id}}
- name: check
  always: true
  expr: 'vars.id == "1"'
`, 2, "variable id is not set (the step that extracts it did not run or failed)", false},
		{"never set, literal name", `
- name: fail
  http: {path: /api/other}
  expect: {status: 500}
  extract: {id: {json: id}}
- name: check
  always: true
  expr: 'vars.id != "1"'
`, 1, "expr vars.id != \"1\": variable id is not set", false},
		{"never set, computed name", `
- name: fail
  http: {path: /api/other}
  expect: {status: 500}
  extract: {nothere: {json: id}}
- name: check
  always: true
  expr: 'vars["noth"+"ere"] == ""'
`, 1, "variable nothere is not set", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			deleted = nil
			mu.Unlock()
			res := apiScript(t, tc.script).Run(context.Background(), checks.Target{Name: "t", URL: srv.URL})
			if res.OK {
				t.Fatalf("run passed: %+v", res.Steps)
			}
			s := res.Steps[tc.failStep]
			if s.OK || s.Skipped || !strings.Contains(s.Err, tc.want) {
				t.Errorf("step %d: ok=%v skipped=%v err %q, want it to fail with %q", tc.failStep, s.OK, s.Skipped, s.Err, tc.want)
			}
			mu.Lock()
			defer mu.Unlock()
			if tc.noDelete && len(deleted) > 0 {
				t.Errorf("cleanup sent DELETE %v with a stale id", deleted)
			}
		})
	}
}
