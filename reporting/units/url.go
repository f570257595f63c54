package units

import (
	"net"
	"net/url"
	"regexp"
	"sort"
	"strings"
)

// RedactURL returns a URL fit to show in errors, logs, verdicts and pages:
// the userinfo is dropped and every query value becomes "…", since either
// may carry a secret.
//
// Text that is not a URL with a host (a typo in the scheme: "http//u:pw@h",
// "http:/u:pw@h", "htp:u:pw@h"; a bad escape) keeps its shape, so that the
// user can see what is wrong, but its userinfo is hidden all the same:
// everything between the scheme-like start and the last "@" becomes
// "user:…" ("…" alone when there is no ":" — the whole may be a token —
// or the user part holds a "/"), as in "http//u:…@h". Such text is cut
// before its query ("?…") when it does not parse, and has its query values
// hidden when it does. A path ("/users/@me?k=v") keeps its "@".
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err == nil && u.Host != "" {
		RedactQuery(u)
		u.User, u.Fragment = nil, ""
		return u.String()
	}
	s, query := raw, ""
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s = s[:i]
		if err != nil {
			query = "…"
		} else if u.RawQuery != "" {
			RedactQuery(u)
			query = "?" + u.RawQuery
		}
	}
	return hideUserinfo(s) + query
}

// schemeLike matches the start of a URL, written right or not: a scheme
// followed by ":" or "/" and up to three slashes ("http://", "http//",
// "http:/", "https:"), or "//".
var schemeLike = regexp.MustCompile(`^(?:[A-Za-z][A-Za-z0-9+.-]*[:/]/{0,3}|//)`)

// hideUserinfo hides what stands for userinfo in s: the text between its
// scheme-like start and its last "@" (url.Parse too takes the last "@" as
// the end of the userinfo), keeping a user part before ":" that holds no
// "/". A path (s starts with a single "/") is left as it is.
func hideUserinfo(s string) string {
	at := strings.LastIndexByte(s, '@')
	if at < 0 || (strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "//")) {
		return s // no "@", or a path ("/users/@me")
	}
	start := len(schemeLike.FindString(s))
	if start > at {
		start = 0
	}
	info := s[start:at]
	shown := "…"
	if user, _, ok := strings.Cut(info, ":"); ok && user != "" && !strings.Contains(user, "/") {
		shown = user + ":…"
	}
	return s[:start] + shown + s[at:]
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

// LoopbackHost reports whether host, a URL's host without its port
// (url.URL.Hostname), is localhost or a loopback address: where a secret
// sent over plain http does not leave the machine.
func LoopbackHost(host string) bool {
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
