package proxy

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"sync"
	"time"

	"github.com/vigil-synthetics/vigil/reporting/units"
)

// clientCRL is client_crl_file loaded: the client certificates the CAs of
// client_ca_file revoked, checked in every handshake on tls_listen and on
// every request of a connection made before a reload (nginx's ssl_crl,
// HAProxy's crl-file, Envoy's crl).
//
// A certificate of a verified chain is revoked when a CRL signed by the
// next certificate of that chain (its issuer: same subject and key) lists
// its serial number. So the leaf is checked against its CA's CRL, and an
// intermediate the client sends against the CRL of the CA above it when the
// file holds one. The certificate of client_ca_file a chain ends at is a
// trust anchor and is not checked itself: to stop trusting one, take it out
// of client_ca_file. A CRL an intermediate signed loads only when that
// intermediate is in client_ca_file too. When several chains verify, a
// revoked certificate in any of them refuses the client.
// Unlike nginx, HAProxy and Envoy (OpenSSL's X509_V_FLAG_CRL_CHECK_ALL), a
// CA without a CRL in the file is not an error: its certificates are simply
// not checked for revocation.
//
// Every CRL of the file counts: a serial listed by any of them (a delta CRL
// included) is revoked, whatever its revocation date and reason, except the
// entries a delta CRL marks removeFromCRL.
//
// A CRL past its NextUpdate still applies: the certificates it lists stay
// refused and the others are served, with a warning at load and at most
// once an hour in handshakes (nginx, HAProxy and Envoy refuse every client
// certificate once the CRL expires, OpenSSL's "CRL has expired"; here a CRL
// published late costs no outage, and the revocations it lists hold).
type clientCRL struct {
	file string
	sum  [sha256.Size]byte // of the file's bytes, to tell a rewrite (clienttlswatch.go)
	// revoked holds, by the raw subject of the CA that signed the CRLs,
	// that CA's key and the serial numbers it revoked (see crlIssuer).
	revoked map[string][]*crlIssuer
	lists   []crlList
	// staleAt is the earliest NextUpdate of the CRLs (zero: none has one).
	staleAt time.Time

	stale units.Spacer // warnings about a CRL past its NextUpdate

	mu      sync.Mutex
	refused map[string]*units.Spacer // refusal log lines, per revoked serial
}

// crlList describes one CRL of the file, for its warnings.
type crlList struct {
	n          int    // its place in the file, from 1
	issuer     string // the issuer's distinguished name
	nextUpdate time.Time
}

// crlIssuer is one CA of client_ca_file that signed CRLs of the file: a CA
// is its subject and public key, so its CRLs apply to the certificates it
// signed whichever of its certificates (renewed, cross-signed) verified the
// chain.
type crlIssuer struct {
	spki    string              // RawSubjectPublicKeyInfo
	serials map[string]crlEntry // by serialKey
}

// crlEntry is one revoked certificate.
type crlEntry struct {
	at     time.Time // RevocationTime
	reason int       // RFC 5280 §5.3.1 CRLReason (0 when none was given)
	issuer string    // the issuer's distinguished name
}

// crlRemoveFromCRL is the CRLReason a delta CRL gives an entry that is no
// longer revoked (RFC 5280 §5.3.1).
const crlRemoveFromCRL = 8

// crlStaleLogEvery spaces the warnings about a CRL past its NextUpdate.
const crlStaleLogEvery = time.Hour

// crlRefusedLogEvery spaces the log lines of refusals of one revoked
// certificate (a client retrying in a loop would log one line per try).
const crlRefusedLogEvery = time.Minute

// serialKey is a serial number as a map key: its big-endian bytes, with a
// "-" before a negative one.
func serialKey(n *big.Int) string {
	if n.Sign() < 0 {
		return "-" + string(n.Bytes())
	}
	return string(n.Bytes())
}

// lookup returns the entry of serial n, without allocating for a
// non-negative serial of up to 32 bytes (RFC 5280 allows 20).
func (is *crlIssuer) lookup(n *big.Int) (crlEntry, bool) {
	if n == nil {
		return crlEntry{}, false
	}
	if n.Sign() >= 0 && n.BitLen() <= 8*32 {
		var buf [32]byte
		b := n.FillBytes(buf[:])
		e, ok := is.serials[string(b[32-(n.BitLen()+7)/8:])]
		return e, ok
	}
	e, ok := is.serials[serialKey(n)]
	return e, ok
}

// serialHex prints a serial number as `openssl x509 -noout -serial` does:
// upper-case hex of its bytes.
func serialHex(n *big.Int) string {
	if n == nil {
		return ""
	}
	b := n.Bytes()
	if len(b) == 0 {
		b = []byte{0}
	}
	s := fmt.Sprintf("%X", b)
	if n.Sign() < 0 {
		s = "-" + s
	}
	return s
}

// loadClientCRL reads client_crl_file: PEM "X509 CRL" blocks (other blocks
// are skipped), or one DER CRL. Each CRL must parse and be signed by a
// certificate of cas (client_ca_file). A CRL past its NextUpdate loads (see
// clientCRL). Errors name the key and both files.
func loadClientCRL(path, caFile string, cas []*x509.Certificate) (*clientCRL, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("client_crl_file: %w", err)
	}
	var ders [][]byte
	rest := raw
	pemSeen := false
	for {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		pemSeen = true
		if b.Type == "X509 CRL" {
			ders = append(ders, b.Bytes)
		}
	}
	switch {
	case pemSeen && len(ders) == 0:
		return nil, fmt.Errorf("client_crl_file: %s: no PEM CRL (\"-----BEGIN X509 CRL-----\") in it", path)
	case !pemSeen:
		ders = [][]byte{raw} // DER
	}
	c := &clientCRL{file: path, sum: sha256.Sum256(raw), revoked: map[string][]*crlIssuer{}, refused: map[string]*units.Spacer{}}
	for i, der := range ders {
		n := i + 1
		rl, err := x509.ParseRevocationList(der)
		if err != nil {
			if !pemSeen {
				return nil, fmt.Errorf("client_crl_file: %s: not a PEM or DER CRL: %w", path, err)
			}
			return nil, fmt.Errorf("client_crl_file: %s: CRL %d: %w", path, n, err)
		}
		var signer *x509.Certificate
		var sigErr error
		for _, ca := range cas {
			if string(ca.RawSubject) != string(rl.RawIssuer) {
				continue
			}
			if sigErr = rl.CheckSignatureFrom(ca); sigErr == nil {
				signer = ca
				break
			}
		}
		issuer := rl.Issuer.String()
		switch {
		case signer == nil && sigErr != nil:
			hint := ""
			if errors.As(sigErr, new(x509.ConstraintViolationError)) {
				hint = " (that CA certificate may not sign CRLs: it lacks the cRLSign key usage)"
			}
			return nil, fmt.Errorf("client_crl_file: %s: CRL %d (issuer %q): its signature does not verify with the CA of that name in client_ca_file %s%s: %w", path, n, issuer, caFile, hint, sigErr)
		case signer == nil:
			return nil, fmt.Errorf("client_crl_file: %s: CRL %d (issuer %q): not issued by a CA of client_ca_file %s (a CRL applies to the certificates its issuer signed; add that CA to client_ca_file, or leave its CRL out)", path, n, issuer, caFile)
		}
		var is *crlIssuer
		for _, x := range c.revoked[string(signer.RawSubject)] {
			if x.spki == string(signer.RawSubjectPublicKeyInfo) {
				is = x
			}
		}
		if is == nil {
			is = &crlIssuer{spki: string(signer.RawSubjectPublicKeyInfo), serials: map[string]crlEntry{}}
			c.revoked[string(signer.RawSubject)] = append(c.revoked[string(signer.RawSubject)], is)
		}
		for _, e := range rl.RevokedCertificateEntries {
			if e.ReasonCode == crlRemoveFromCRL {
				continue
			}
			if e.SerialNumber == nil {
				continue
			}
			is.serials[serialKey(e.SerialNumber)] = crlEntry{at: e.RevocationTime, reason: e.ReasonCode, issuer: issuer}
		}
		c.lists = append(c.lists, crlList{n: n, issuer: issuer, nextUpdate: rl.NextUpdate})
		if !rl.NextUpdate.IsZero() && (c.staleAt.IsZero() || rl.NextUpdate.Before(c.staleAt)) {
			c.staleAt = rl.NextUpdate
		}
	}
	return c, nil
}

// setMetric exports the earliest next update of the CRLs of file (c nil:
// no client_crl_file) as vigil_proxy_client_crl_next_update_timestamp_seconds.
func (c *clientCRL) setMetric(m *metrics, file string) {
	if m == nil {
		return
	}
	m.crlNextUpdate.Reset()
	if c != nil && !c.staleAt.IsZero() {
		m.crlNextUpdate.WithLabelValues(file).Set(float64(c.staleAt.Unix()))
	}
}

// staleLists describes the CRLs past their NextUpdate at now.
func (c *clientCRL) staleLists(now time.Time) []string {
	var out []string
	for _, l := range c.lists {
		if !l.nextUpdate.IsZero() && now.After(l.nextUpdate) {
			out = append(out, fmt.Sprintf("CRL %d (issuer %q) next update was %s", l.n, l.issuer, l.nextUpdate.UTC().Format(time.RFC3339)))
		}
	}
	return out
}

// warnStale logs a warning when a CRL is past its NextUpdate at now, at most
// once every crlStaleLogEvery (the first call after a load logs at once).
func (c *clientCRL) warnStale(log *slog.Logger, now time.Time) {
	if c == nil || c.staleAt.IsZero() || !now.After(c.staleAt) {
		return
	}
	if ok, _ := c.stale.Allow(now, crlStaleLogEvery); !ok {
		return
	}
	for _, s := range c.staleLists(now) {
		log.Warn("proxy: client_crl_file: a CRL is past its next update; the certificates it lists stay refused, the others are served: publish a new CRL (a file rewritten in place is read within 30s)",
			"client_crl_file", c.file, "crl", s)
	}
}

// find returns the first certificate of chains a CRL revokes, with its entry.
func (c *clientCRL) find(chains [][]*x509.Certificate) (*x509.Certificate, crlEntry, bool) {
	if c == nil {
		return nil, crlEntry{}, false
	}
	for _, ch := range chains {
		for i := 0; i+1 < len(ch); i++ {
			parent := ch[i+1]
			for _, is := range c.revoked[string(parent.RawSubject)] {
				if is.spki != string(parent.RawSubjectPublicKeyInfo) {
					continue
				}
				if e, ok := is.lookup(ch[i].SerialNumber); ok {
					return ch[i], e, true
				}
			}
		}
	}
	return nil, crlEntry{}, false
}

// revokedError is the handshake error for a client certificate that
// client_crl_file revokes (tlsFailReason counts it as client_cert_revoked).
type revokedError struct {
	serial, subject string
}

func (e *revokedError) Error() string {
	return fmt.Sprintf("tls: client certificate revoked (client_crl_file): serial %s, subject %q", e.serial, e.subject)
}

// verifyConnection is the listener's tls.Config.VerifyConnection: it
// refuses a handshake, resumed ones included, whose verified chains hold a
// revoked certificate. crypto/tls then sends the bad_certificate alert
// (it offers no way to send certificate_revoked).
func (c *clientCRL) verifyConnection(log *slog.Logger, remote string) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		now := time.Now()
		c.warnStale(log, now)
		cert, e, ok := c.find(cs.VerifiedChains)
		if !ok {
			return nil
		}
		err := &revokedError{serial: serialHex(cert.SerialNumber), subject: subjectRFC2253(cert)}
		c.logRefused(log, now, "proxy: tls: handshake refused: client certificate revoked (client_crl_file)", cert, e, remote)
		return err
	}
}

// logRefused logs a refused revoked certificate: its serial, subject and
// issuer, and when and why it was revoked (never more of the certificate),
// at most once every crlRefusedLogEvery per serial, with how many refusals
// were left out since the previous line.
func (c *clientCRL) logRefused(log *slog.Logger, now time.Time, msg string, cert *x509.Certificate, e crlEntry, remote string) {
	k := serialKey(cert.SerialNumber)
	c.mu.Lock()
	sp := c.refused[k]
	if sp == nil {
		// Bounded: only serials the file lists get here.
		sp = new(units.Spacer)
		c.refused[k] = sp
	}
	c.mu.Unlock()
	ok, held := sp.Allow(now, crlRefusedLogEvery)
	if !ok {
		return
	}
	attrs := []any{"serial", serialHex(cert.SerialNumber), "subject", subjectRFC2253(cert), "issuer", e.issuer,
		"revoked_at", e.at.UTC().Format(time.RFC3339), "reason", e.reason, "remote", remote, "more_since_last", held}
	log.Warn(msg, attrs...)
}

// stillValid reports whether the client certificate of a connection made
// before a reload is still unrevoked by the client_crl_file in force now;
// a revoked one is logged like a refused handshake.
func (c *clientCRL) stillValid(log *slog.Logger, cs *tls.ConnectionState, remote string) bool {
	cert, e, ok := c.find(cs.VerifiedChains)
	if !ok {
		return true
	}
	c.logRefused(log, time.Now(), "proxy: tls: request refused: the connection's client certificate was revoked since it was made (client_crl_file)", cert, e, remote)
	return false
}
