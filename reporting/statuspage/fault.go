package statuspage

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// serveFault handles POST /fault (form fields origin, mode, token, back). It
// runs behind http.CrossOriginProtection (cross-origin browser POSTs get 403)
// and, unless Faults.Open, needs the admin token (401 without or with a wrong
// one). On success it redirects (303) back to the page the form was on.
func (p *Page) serveFault(w http.ResponseWriter, r *http.Request) {
	f := p.o.Faults
	if f == nil {
		http.NotFound(w, r)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "fault: bad form", http.StatusBadRequest)
		return
	}
	if !f.Open && !p.tokenOK(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="vigil"`)
		http.Error(w, "fault: admin token required", http.StatusUnauthorized)
		return
	}
	origin, mode := r.PostFormValue("origin"), r.PostFormValue("mode")
	if !slices.Contains(f.Origins, origin) {
		http.Error(w, "fault: unknown origin", http.StatusBadRequest)
		return
	}
	if !slices.Contains(f.Modes, mode) {
		http.Error(w, "fault: unknown mode", http.StatusBadRequest)
		return
	}
	if err := f.Set(origin, mode); err != nil {
		p.log.Warn("statuspage: fault switch", "origin", origin, "mode", mode, "err", err)
		http.Error(w, "fault: "+err.Error(), http.StatusBadGateway)
		return
	}
	p.log.Info("statuspage: fault switched", "origin", origin, "mode", mode)
	http.Redirect(w, r, localPath(r.PostFormValue("back")), http.StatusSeeOther)
}

// localPath returns back if it is a path on this site, else "/". back must
// start with a single "/" (not "//" or "/\", which browsers read as another
// host), hold no whitespace, control character or backslash anywhere (browsers
// drop tabs and newlines from URLs, so "/\t/evil.example" becomes
// "//evil.example"), be valid UTF-8 and parse as a URL without scheme, host or
// user info. Percent-encoded bytes stay part of the path and are allowed.
func localPath(back string) string {
	if len(back) == 0 || back[0] != '/' || len(back) > 1 && (back[1] == '/' || back[1] == '\\') {
		return "/"
	}
	if !utf8.ValidString(back) || strings.ContainsFunc(back, func(r rune) bool {
		return r == '\\' || unicode.IsSpace(r) || unicode.IsControl(r)
	}) {
		return "/"
	}
	u, err := url.Parse(back)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return "/"
	}
	return back
}
