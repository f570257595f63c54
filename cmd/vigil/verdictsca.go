package main

import (
	"crypto/tls"
	"net/http"
	"sync/atomic"

	"github.com/vigil-synthetics/vigil/reporting/tlsclient"
)

// caTransport carries the proxy's reads of --verdicts-from canaries,
// trusting the CAs of the --verdicts-from-ca file. The file is read at
// start and again at every config reload, so a rotated private CA needs
// no restart.
type caTransport struct {
	path string
	cur  atomic.Pointer[http.Transport]
}

func newCATransport(path string) (*caTransport, error) {
	t := &caTransport{path: path}
	tr, err := t.load()
	if err != nil {
		return nil, err
	}
	t.cur.Store(tr)
	return t, nil
}

// load reads the file into a new transport; the running one is kept until
// swap.
func (t *caTransport) load() (*http.Transport, error) {
	pool, err := tlsclient.LoadCAFile(t.path)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return tr, nil
}

// swap puts tr in place and closes the previous transport's idle
// connections (made under the old trust).
func (t *caTransport) swap(tr *http.Transport) {
	if old := t.cur.Swap(tr); old != nil {
		old.CloseIdleConnections()
	}
}

func (t *caTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return t.cur.Load().RoundTrip(r)
}
