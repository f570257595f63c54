package units

import (
	"net/url"
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
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q[k] = []string{"…"}
		}
		u.RawQuery = q.Encode()
	}
	u.User, u.Fragment = nil, ""
	return u.String()
}
