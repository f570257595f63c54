package proxy

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// Request loops. Each request sent to an origin carries this proxy's name
// in Via (RFC 9110 §7.6.3: "Via: 1.1 NAME", appended to the chain the
// client's request had); a request that arrives with the name already in
// its Via went through this proxy before (vigil → nginx → vigil, an origin
// URL that points back at the listener through a name) and is answered
// 508 Loop Detected (RFC 5842) without being forwarded. Unchecked, such a
// loop multiplies each request until a timeout or a header limit ends it.
// 508 rather than 502: it says what is wrong, is not retried, and keeps
// the loop apart from origin failures in the proxy's own answers.

// viaNames is a generation's Via values, by the protocol the request came
// in (the received-protocol of RFC 9110 §7.6.3).
type viaNames struct {
	name          string
	v10, v11, v20 []string
}

func newViaNames(name string) *viaNames {
	if name == "" || name == ViaOff {
		return nil
	}
	return &viaNames{name: name, v10: []string{"1.0 " + name}, v11: []string{"1.1 " + name}, v20: []string{"2 " + name}}
}

// element is this hop's Via element for r.
func (v *viaNames) element(r *http.Request) string {
	switch {
	case r.ProtoMajor == 2:
		return v.v20[0]
	case r.ProtoMajor == 1 && r.ProtoMinor == 0:
		return v.v10[0]
	}
	return v.v11[0]
}

// field is the Via field sent to the origin: the request's chain (unless
// the client named Via in Connection, which makes it hop-by-hop) with
// this hop's element appended.
func (v *viaNames) field(r *http.Request) []string {
	prior := r.Header["Via"]
	if len(prior) == 0 || namedIn(r.Header["Connection"], "Via") {
		switch {
		case r.ProtoMajor == 2:
			return v.v20
		case r.ProtoMajor == 1 && r.ProtoMinor == 0:
			return v.v10
		}
		return v.v11
	}
	return []string{strings.Join(prior, ", ") + ", " + v.element(r)}
}

// seen reports whether a Via chain holds name as a received-by.
func (v *viaNames) seen(vals []string) bool {
	for _, line := range vals {
		for line != "" {
			var el string
			el, line, _ = strings.Cut(line, ",")
			el = strings.TrimSpace(el)
			// received-protocol RWS received-by [ RWS comment ]
			_, by, ok := strings.Cut(el, " ")
			if !ok {
				continue
			}
			by = strings.TrimLeft(by, " \t")
			if i := strings.IndexAny(by, " \t"); i >= 0 {
				by = by[:i]
			}
			if strings.EqualFold(by, v.name) {
				return true
			}
		}
	}
	return false
}

// defaultVia is a proxy's Via name when the config sets none: the host's
// name (its first label) and a random suffix, so that two proxies of one
// chain differ also on one host.
func defaultVia() string {
	h, _ := os.Hostname()
	if i := strings.IndexByte(h, '.'); i >= 0 {
		h = h[:i]
	}
	h = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return -1
	}, h)
	if h == "" {
		h = "vigil"
	}
	var b [4]byte
	rand.Read(b[:])
	return h + "-" + hex.EncodeToString(b[:])
}

// loopLog limits the request-loop warning to one a second.
type loopLog struct{ last atomic.Int64 }

func (l *loopLog) allow(now time.Time) bool {
	n := now.UnixNano()
	prev := l.last.Load()
	return n-prev >= int64(time.Second) && l.last.CompareAndSwap(prev, n)
}
