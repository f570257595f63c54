package scripts

import (
	"io"
	"net/http"
	"net/url"
	"sync"
	"testing"
)

// formSink serves a test page and records the last form posted back to it,
// for browser tests that assert on what the server received.
type formSink struct {
	mu   sync.Mutex
	form url.Values
}

// route adds to mux "GET page", answering html, and "POST submit", which
// records the form and answers the HTML answer(form) gives.
func (f *formSink) route(mux *http.ServeMux, page, html, submit string, answer func(url.Values) string) {
	mux.HandleFunc("GET "+page, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, html)
	})
	mux.HandleFunc("POST "+submit, func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err == nil {
			f.mu.Lock()
			f.form = r.PostForm
			f.mu.Unlock()
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, answer(r.PostForm))
	})
}

// posted is the last form posted (nil: none yet).
func (f *formSink) posted() url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.form
}

// checkPosted fails t for each field of want the last form posted does not
// hold as want says.
func (f *formSink) checkPosted(t testing.TB, want map[string]string) {
	t.Helper()
	got := f.posted()
	for field, w := range want {
		if g := got.Get(field); g != w {
			t.Errorf("server received %s=%q, want %q", field, g, w)
		}
	}
}
