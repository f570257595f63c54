package alerting

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting/units"
)

// minSecret is the shortest config value treated as a secret in delivery
// errors: hiding every "on" or "1" would blank the status code (the same
// floor as the ${NAME} values of the config loader).
const minSecret = 3

// endpoint is where a receiver posts, compiled when its dispatcher is
// built: the request URL and headers, the URL as errors show it, and the
// receiver's secrets, which no error it returns contains.
type endpoint struct {
	url     string            // the request URL
	shown   string            // url as errors show it
	headers map[string]Secret // added to every request
	red     *checks.Redactor  // hides the receiver's secrets
}

// newEndpoint compiles a receiver's endpoint. A secretURL (webhook,
// Slack: the token may be the path) shows as scheme://host/…; any other
// shows as units.RedactURL does (no userinfo, query values "…"). Either
// way every error the receiver returns, the answer's body included (a
// receiver may echo what it got), has these hidden as "***", as written
// and base64-, percent- or JSON-encoded (see checks.Redactor): the
// URL's password and user:password, its query values, the path and every
// path segment of 8 bytes or more of a secretURL,
// each header value and the token after its scheme ("Bearer T"), and
// extra (a routing key). Values under minSecret bytes are not hidden.
func newEndpoint(rawURL string, secretURL bool, headers map[string]Secret, extra ...string) endpoint {
	e := endpoint{url: rawURL, headers: headers, red: &checks.Redactor{}}
	add := func(s string) {
		if len(s) >= minSecret {
			e.red.Add(s)
		}
	}
	for _, s := range extra {
		add(s)
	}
	for _, v := range headers {
		add(string(v))
		if f := strings.Fields(string(v)); len(f) > 1 {
			for _, x := range f[1:] {
				add(x)
			}
		}
	}
	if secretURL {
		e.shown = redactURL(rawURL)
	} else {
		e.shown = units.RedactURL(rawURL)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		add(rawURL)
		return e
	}
	if secretURL {
		add(u.EscapedPath())
		add(u.Path)
		for _, seg := range strings.Split(u.Path, "/") {
			if len(seg) >= checks.MinEncodedSecret {
				add(seg)
			}
		}
	}
	if u.User != nil {
		if p, ok := u.User.Password(); ok {
			add(p)
			add(u.User.Username() + ":" + p)
		} else {
			add(u.User.Username()) // https://TOKEN@host
		}
	}
	for _, vs := range u.Query() {
		for _, v := range vs {
			add(v)
		}
	}
	return e
}

// errorf formats a delivery error about e with e's secrets hidden.
func (e endpoint) errorf(cause error, format string, args ...any) error {
	return &deliveryError{msg: e.red.Redact(fmt.Sprintf(format, args...)), cause: cause}
}

// deliveryError is a failed delivery as every consumer shows it (the log,
// DeliveryFailures, the status page, /healthz): its text has the
// receiver's secrets hidden. It unwraps to the transport error, if any,
// which never holds the URL.
type deliveryError struct {
	msg   string
	cause error
}

// Error returns the redacted message.
func (e *deliveryError) Error() string { return e.msg }

// Unwrap returns the transport error, nil for an answer that was not 2xx.
func (e *deliveryError) Unwrap() error { return e.cause }

// joinURL appends path to base's path, keeping base's query: the
// Alertmanager URL http://h:9093/?apikey=K posts to
// http://h:9093/api/v2/alerts?apikey=K, not to /?apikey=K/api/v2/alerts.
// A base that does not parse is returned with path appended, for the
// request to fail on it.
func joinURL(base, path string) string {
	u, err := url.Parse(base)
	if err != nil {
		return base + path
	}
	return u.JoinPath(path).String()
}
