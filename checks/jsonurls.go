package checks

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/vigil-synthetics/vigil/reporting/units"
)

// wholeURL matches a text that is an absolute URL: a scheme, "://" and
// what follows up to a space, a quote or an angle bracket.
var wholeURL = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://[^\s<>"']+$`)

// IsWholeURL reports whether s is an absolute URL and nothing else.
func IsWholeURL(s string) bool { return wholeURL.MatchString(s) }

// HideJSONURLs returns v, decoded JSON, with every string in it that is an
// absolute URL shown as units.RedactURL shows it (no userinfo, query values
// as …, no fragment: a presigned download link, a callback with its code),
// and whether it changed any.
func HideJSONURLs(v any) (any, bool) {
	switch x := v.(type) {
	case string:
		if wholeURL.MatchString(x) {
			if r := units.RedactURL(x); r != x {
				return r, true
			}
		}
	case map[string]any:
		var out map[string]any
		for k, e := range x {
			if w, ok := HideJSONURLs(e); ok {
				if out == nil {
					out = maps.Clone(x)
				}
				out[k] = w
			}
		}
		if out != nil {
			return out, true
		}
	case []any:
		var out []any
		for i, e := range x {
			if w, ok := HideJSONURLs(e); ok {
				if out == nil {
					out = slices.Clone(x)
				}
				out[i] = w
			}
		}
		if out != nil {
			return out, true
		}
	}
	return v, false
}

// HideJSONTextURLs is HideJSONURLs for the text of a JSON value (a body,
// or the value a path selected; a leading byte-order mark is skipped),
// written back compactly; ok is false when s is not JSON or holds no URL to
// hide. URLs written with escaped slashes (https:\/\/, as PHP writes them)
// are found too.
func HideJSONTextURLs(s string) (string, bool) {
	t := strings.TrimSpace(strings.TrimPrefix(s, string(utf8BOM)))
	if t == "" || !strings.Contains(t, "://") && !strings.Contains(t, `:\/\/`) {
		return s, false
	}
	dec := json.NewDecoder(strings.NewReader(t))
	dec.UseNumber() // numbers as written
	var v any
	if dec.Decode(&v) != nil || dec.More() {
		return s, false
	}
	w, ok := HideJSONURLs(v)
	if !ok {
		return s, false
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(w) != nil {
		return s, false
	}
	return strings.TrimSuffix(b.String(), "\n"), true
}
