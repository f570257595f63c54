package proxy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"
)

// clientTLSPollEvery is how often, while tls_listen serves, client_ca_file
// and client_crl_file are looked at for a rewrite in place. A CA republishes
// its CRL every few hours or days from cron; without a look between reloads
// the proxy would keep the old one until someone sends SIGHUP. It is a fixed
// period, as certReloadEvery is for cert_file: a stat of two files every 30s
// costs nothing, and a knob to turn it off would only let a CRL go stale.
// Tests shorten it before New.
var clientTLSPollEvery = 30 * time.Second

// clientTLSWatch is the state of the client_ca_file / client_crl_file
// watch (watchClientTLS).
type clientTLSWatch struct {
	every time.Duration // clientTLSPollEvery when the proxy was made

	// Only the watch goroutine touches these.
	stamp string        // sizes and mtimes of the files at the last look
	st    *runtimeState // the configuration generation of the last look

	mu    sync.Mutex
	err   error     // the rewrite that does not load, nil when none
	since time.Time // when err was first seen
}

// watchClientTLS looks at client_ca_file and client_crl_file every
// clientTLSPollEvery and takes a rewritten one (checkClientTLS).
func (p *Proxy) watchClientTLS(ctx context.Context) {
	t := time.NewTicker(p.ctw.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p.checkClientTLS()
	}
}

// clientTLSStamp describes the files' sizes and modification times (or why
// one cannot be read).
func clientTLSStamp(files ...string) string {
	var b strings.Builder
	for _, f := range files {
		if f == "" {
			continue
		}
		st, err := statStamp(f)
		if err != nil {
			fmt.Fprintf(&b, "%s;", err)
			continue
		}
		b.WriteString(st)
	}
	return b.String()
}

// checkClientTLS loads client_ca_file and client_crl_file again when their
// size or modification time changed since the last look (or a reload came
// in between), exactly as a reload does (Config.clientCertsAndHSTS), and
// applies them as a reload does when their content differs from those in
// force: new handshakes, and the next request of every kept-alive
// connection, are checked against them. A file that does not load keeps the
// ones in force; it is logged at ERROR once per change and reported by
// ClientTLSHealth until a look or a reload loads the files again.
func (p *Proxy) checkClientTLS() {
	w := &p.ctw
	st := p.state.Load()
	if st.cfg.ClientCAFile == "" {
		w.stamp, w.st = "", st
		w.setErr(nil)
		return
	}
	stamp := clientTLSStamp(st.cfg.ClientCAFile, st.cfg.ClientCRLFile)
	if stamp == w.stamp && st == w.st {
		return
	}
	w.stamp, w.st = stamp, st
	cfg := st.cfg // a copy: clientCertsAndHSTS sets only its own fields
	if errs := cfg.clientCertsAndHSTS(); len(errs) > 0 {
		for _, err := range errs {
			key, file := "client_ca_file", st.cfg.ClientCAFile
			if strings.HasPrefix(err.Error(), "client_crl_file") {
				key, file = "client_crl_file", st.cfg.ClientCRLFile
			}
			p.log.Error("proxy: tls: "+key+" changed on disk but does not load; the one in force is kept (fix the file: it is read again within "+w.every.String()+")",
				"key", key, "file", file, "err", err)
		}
		w.setErr(errors.Join(errs...))
		return
	}
	caNew := !maps.Equal(cfg.clientRoots, st.cfg.clientRoots)
	crlNew := (cfg.clientCRL == nil) != (st.cfg.clientCRL == nil) ||
		(cfg.clientCRL != nil && cfg.clientCRL.sum != st.cfg.clientCRL.sum)
	if !caNew && !crlNew {
		w.setErr(nil) // touched, or rewritten back to what is in force
		return
	}
	p.mu.Lock() // as Reload: one generation replaces another at a time
	if p.state.Load() != st {
		p.mu.Unlock()
		return // a reload came in between: the next look compares with it
	}
	next := *st
	next.cfg = cfg
	p.state.Store(&next)
	p.mu.Unlock()
	w.st = &next
	w.setErr(nil)
	if caNew {
		p.log.Info("proxy: tls: client_ca_file rewritten: new handshakes, and the next request of kept-alive connections, are checked against it",
			"client_ca_file", cfg.ClientCAFile, "certificates", len(cfg.clientRoots))
	}
	if crlNew {
		p.log.Info("proxy: tls: client_crl_file rewritten: new handshakes, and the next request of kept-alive connections, are checked against it",
			"client_crl_file", cfg.ClientCRLFile, "crls", len(cfg.clientCRL.lists))
	}
	cfg.clientCRL.warnStale(p.log, time.Now())
	cfg.clientCRL.setMetric(p.m, cfg.ClientCRLFile)
}

func (w *clientTLSWatch) setErr(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case err == nil:
		w.err = nil
	case w.err == nil:
		w.err, w.since = err, time.Now()
	default:
		w.err = err
	}
}

// ClientTLSHealth is nil unless client_ca_file or client_crl_file was
// rewritten in place into something that does not load (the previous CAs and
// CRLs stay in force): then it says since when and why, one line per error,
// for /healthz. A later look that loads the files, or a reload, clears it.
func (p *Proxy) ClientTLSHealth() error {
	w := &p.ctw
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		return nil
	}
	var errs []error
	for _, line := range strings.Split(w.err.Error(), "\n") {
		errs = append(errs, fmt.Errorf("tls: rewritten file does not load since %s, the previous one stays in force: %s",
			w.since.UTC().Format(time.RFC3339), line))
	}
	return errors.Join(errs...)
}
