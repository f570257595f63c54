package units

import (
	"net/url"
	"sort"
	"strings"
)

// RedactURL returns a URL fit to show in errors, logs, verdicts and pages:
// the userinfo is dropped and every query value becomes "…", since either
// may carry a secret. Input that does not parse as a URL is
// cut before its first "@" or "?".
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if i := strings.IndexAny(raw, "@?"); i >= 0 {
			return raw[:i] + "…"
		}
		return raw
	}
	RedactQuery(u)
	u.User, u.Fragment = nil, ""
	return u.String()
}

// RedactQuery replaces every query value of u with "…" (written as is, not
// percent-encoded), keeping the names, sorted.
func RedactQuery(u *url.URL) {
	if u.RawQuery == "" {
		return
	}
	q := u.Query()
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(k))
		b.WriteString("=…")
	}
	u.RawQuery = b.String()
}
