package scripts

import (
	"net/http"
	"net/url"
	"strings"
)

// secretJar is a run's cookie jar. Every cookie value it receives (from an
// http step's response, a redirect on the way, or the browser) of at least
// minJarSecret bytes is one of the run's secrets: a session cookie is
// the monitoring account's live credential, whether or not the script
// extracts it, so it is hidden in every message and screenshot as an
// ${env:…} value is.
type secretJar struct {
	http.CookieJar
	vars *runVars
}

var _ http.CookieJar = secretJar{}

// SetCookies records the cookies' values as secrets and stores them.
func (j secretJar) SetCookies(u *url.URL, cookies []*http.Cookie) {
	for _, c := range cookies {
		if c != nil {
			j.vars.addCookieSecret(c.Value)
		}
	}
	j.CookieJar.SetCookies(u, cookies)
}

// minJarSecret is the shortest cookie value the jar makes a secret on its
// own: session ids and tokens are longer, while short values such as
// "true", "dark" or "en-US" (consent, theme, locale cookies) would mask
// those words in every message of the run.
const minJarSecret = 8

// addCookieSecret makes a cookie's value a secret of the run when it is
// at least minJarSecret bytes long.
func (rv *runVars) addCookieSecret(v string) {
	if len(v) >= minJarSecret {
		rv.addSecret(v)
	}
}

// addHeaderCookies makes the cookie values inside an extracted Set-Cookie
// ("sid=V; Path=/") or Cookie ("a=V; b=W") header value secrets of the
// run, besides the whole value: an origin echoes the cookie as the next
// request sends it, not as the header that set it.
func (rv *runVars) addHeaderCookies(header, v string) {
	switch {
	case strings.EqualFold(header, "Set-Cookie"):
		if c, err := http.ParseSetCookie(v); err == nil {
			rv.addCookieSecret(c.Value)
		}
	case strings.EqualFold(header, "Cookie"):
		if cs, err := http.ParseCookie(v); err == nil {
			for _, c := range cs {
				rv.addCookieSecret(c.Value)
			}
		}
	}
}
