package checks

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// FuzzJSONGot: reading the key back from the body and re-writing objects
// never panics, and a string under a key named token inside a selected
// object or array is never shown.
func FuzzJSONGot(f *testing.F) {
	f.Add(`{"a":{"token":"SECRETVALUE","n":[1,{"x":"y"}]}}`, "a")
	f.Add(`{"data":{"refresh_token" :  "SECRETVALUE"}}`, "data.refresh_tok*")
	f.Add(`{"k\"token":"SECRETVALUE"}`, `k"token`)
	f.Add(`["SECRETVALUE"]`, "0")
	f.Fuzz(func(t *testing.T, body, path string) {
		if !gjson.Valid(body) || path == "" {
			return
		}
		r := gjson.Get(body, path)
		if !r.Exists() {
			return
		}
		got := jsonGot([]byte(body), path, r)
		if r.IsObject() || r.IsArray() {
			hidden := strings.Count(r.Raw, `"token":"SECRETVALUE"`)
			if shown := strings.Count(got, "SECRETVALUE"); hidden > 0 && shown > strings.Count(r.Raw, "SECRETVALUE")-hidden {
				t.Fatalf("jsonGot(%q, %q) = %q shows the token", body, path, got)
			}
		}
	})
}
