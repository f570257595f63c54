package checks

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// utf8BOM is the byte-order mark some servers (.NET, Windows tools) put
// before a UTF-8 JSON document. RFC 8259 §8.1 lets a parser ignore it,
// and a browser's Response.json() does.
var utf8BOM = []byte("\xef\xbb\xbf")

// jsonBody is the body the json assertions read: without a leading UTF-8
// byte-order mark.
func jsonBody(body []byte) []byte { return bytes.TrimPrefix(body, utf8BOM) }

// matchBody reports whether a body.regex matches the body. A whole body
// (not cut at body_limit) that ends in one line break ("\n" or "\r\n") is
// also tried without it: Go's $ (without (?m)) matches only at the very
// end of the text, while PCRE and Python also match it before a final
// newline, so `^ok$` matches the body "ok\n" as their users expect.
func matchBody(re *regexp.Regexp, body []byte, whole bool) bool {
	if re.Match(body) {
		return true
	}
	if !whole {
		return false
	}
	trimmed, ok := bytes.CutSuffix(body, []byte("\n"))
	if !ok {
		return false
	}
	trimmed, _ = bytes.CutSuffix(trimmed, []byte("\r"))
	return re.Match(trimmed)
}

// excerptLen is how many bytes of a body a failed body assertion shows.
const excerptLen = 80

// bodyExcerpt is the start of a body for a failed assertion's got: its
// first excerptLen bytes (cut at a rune boundary), Go-quoted, with "…" and
// the body's size when cut, e.g. `"okay\n"` or `"<html>…" (5120 bytes)`.
// A JSON body that has values under sensitive keys (see sensitiveName)
// is shown re-written compactly with those values masked, as json
// assertions show them. Secrets from the config are hidden later, where
// every got is (the canary's and vigil check's redactors), as for any
// other got.
func bodyExcerpt(body []byte) string {
	if len(body) == 0 {
		return "(empty body)"
	}
	shown := body
	if jb := jsonBody(body); gjson.ValidBytes(jb) {
		if r := gjson.ParseBytes(jb); r.IsObject() || r.IsArray() {
			if m, masked := maskNested(r); masked {
				shown = []byte(m)
			}
		}
	}
	if len(shown) <= excerptLen {
		return strconv.Quote(string(shown))
	}
	n := excerptLen
	for n > 0 && !utf8.RuneStart(shown[n]) {
		n--
	}
	return fmt.Sprintf("%s (%d bytes)", strconv.Quote(string(shown[:n])+"…"), len(body))
}

// matchExcerpt is the text a body.not_regex matched (loc from FindIndex),
// Go-quoted and cut at excerptLen bytes on a rune boundary, with its byte
// offset: `"error: db down" at byte 12`. A JSON body whose sensitive
// values are masked (see bodyExcerpt) is not quoted from: the match could
// be one of them, so only its offset and length are given.
func matchExcerpt(body []byte, loc []int) string {
	if loc == nil {
		return ""
	}
	if jb := jsonBody(body); gjson.ValidBytes(jb) {
		if r := gjson.ParseBytes(jb); r.IsObject() || r.IsArray() {
			if _, masked := maskNested(r); masked {
				return fmt.Sprintf("%d bytes at byte %d (not shown: the JSON body has sensitive keys)", loc[1]-loc[0], loc[0])
			}
		}
	}
	m := body[loc[0]:loc[1]]
	if len(m) <= excerptLen {
		return fmt.Sprintf("%s at byte %d", strconv.Quote(string(m)), loc[0])
	}
	n := excerptLen
	for n > 0 && !utf8.RuneStart(m[n]) {
		n--
	}
	return fmt.Sprintf("%s at byte %d", strconv.Quote(string(m[:n])+"…"), loc[0])
}
