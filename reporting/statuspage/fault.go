package statuspage

import (
	"net/http"
	"slices"
	"strings"
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

// localPath returns back if it is a path on this site, else "/". It refuses
// scheme-relative ("//host") and backslash forms that browsers treat as
// another host, so the redirect cannot leave the site.
func localPath(back string) string {
	if !strings.HasPrefix(back, "/") || strings.HasPrefix(back, "//") || strings.ContainsAny(back, "\\\r\n") {
		return "/"
	}
	return back
}
