package proxy

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"math/big"
	"net/url"
	"testing"
	"time"
)

// xfccAttr is one attribute of a subject built for a test: its type, its
// ASN.1 string tag and its value bytes as they go into the certificate.
type xfccAttr struct {
	oid asn1.ObjectIdentifier
	tag int
	val string
}

// xfccRDN is one relative distinguished name of a test subject.
type xfccRDN []xfccAttr

// String tags as `openssl req` (string_mask utf8only) encodes them.
const (
	tagUTF8  = asn1.TagUTF8String
	tagPrint = asn1.TagPrintableString
	tagIA5   = asn1.TagIA5String
	tagT61   = asn1.TagT61String
	tagBMP   = asn1.TagBMPString
)

func attr(oid asn1.ObjectIdentifier, tag int, val string) xfccAttr {
	return xfccAttr{oid, tag, val}
}

var (
	oidCN       = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidSN       = asn1.ObjectIdentifier{2, 5, 4, 4}
	oidSerial   = asn1.ObjectIdentifier{2, 5, 4, 5}
	oidC        = asn1.ObjectIdentifier{2, 5, 4, 6}
	oidL        = asn1.ObjectIdentifier{2, 5, 4, 7}
	oidST       = asn1.ObjectIdentifier{2, 5, 4, 8}
	oidStreet   = asn1.ObjectIdentifier{2, 5, 4, 9}
	oidO        = asn1.ObjectIdentifier{2, 5, 4, 10}
	oidOU       = asn1.ObjectIdentifier{2, 5, 4, 11}
	oidTitle    = asn1.ObjectIdentifier{2, 5, 4, 12}
	oidBusiness = asn1.ObjectIdentifier{2, 5, 4, 15}
	oidPostal   = asn1.ObjectIdentifier{2, 5, 4, 17}
	oidName     = asn1.ObjectIdentifier{2, 5, 4, 41}
	oidGN       = asn1.ObjectIdentifier{2, 5, 4, 42}
	oidInitials = asn1.ObjectIdentifier{2, 5, 4, 43}
	oidGenQual  = asn1.ObjectIdentifier{2, 5, 4, 44}
	oidDNQual   = asn1.ObjectIdentifier{2, 5, 4, 46}
	oidPseudo   = asn1.ObjectIdentifier{2, 5, 4, 65}
	oidEmail    = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}
	oidUID      = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 1}
	oidDC       = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}
	oidPrivate  = asn1.ObjectIdentifier{1, 2, 3, 4}
)

// rawSubject encodes rdns, in order, as a certificate's DER subject.
func rawSubject(t *testing.T, rdns ...xfccRDN) []byte {
	t.Helper()
	type atv struct {
		Type  asn1.ObjectIdentifier
		Value asn1.RawValue
	}
	type rdnSET []atv
	var seq []rdnSET
	for _, r := range rdns {
		var set rdnSET
		for _, a := range r {
			set = append(set, atv{a.oid, asn1.RawValue{Class: asn1.ClassUniversal, Tag: a.tag, Bytes: []byte(a.val)}})
		}
		seq = append(seq, set)
	}
	der, err := asn1.Marshal(seq)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// issueRaw issues a client certificate signed by ca with the given DER
// subject and, when uri is not empty, a URI and a DNS name.
func (ca *testCA) issueRaw(t *testing.T, subject []byte, uri, dns string) (tls.Certificate, *x509.Certificate) {
	t.Helper()
	key := newECKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), RawSubject: subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if uri != "" {
		u, _ := url.Parse(uri)
		tmpl.URIs, tmpl.DNSNames = []*url.URL{u}, []string{dns}
	}
	der, err := x509.CreateCertificate(nil, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, leaf
}

// xfccSubjects are subjects and what `openssl x509 -noout -subject
// -nameopt RFC2253` (OpenSSL 3.0, X509_NAME_print_ex with XN_FLAG_RFC2253,
// as Envoy calls it) prints for them; each want is OpenSSL's output for a
// certificate with the same DER subject, the first seven made by `openssl
// req -x509 -subj <subj>` (with -utf8 for the UTF-8 one).
var xfccSubjects = []struct {
	subj string // the `openssl req -subj` argument, or what the subject holds
	rdns []xfccRDN
	want string
}{
	{`/DC=corp/emailAddress=bob@example.com/CN=bob/O=Acme/C=US`,
		[]xfccRDN{{attr(oidDC, tagIA5, "corp")}, {attr(oidEmail, tagIA5, "bob@example.com")}, {attr(oidCN, tagUTF8, "bob")}, {attr(oidO, tagUTF8, "Acme")}, {attr(oidC, tagPrint, "US")}},
		`C=US,O=Acme,CN=bob,emailAddress=bob@example.com,DC=corp`},
	{`/O=Acme/CN=good client`,
		[]xfccRDN{{attr(oidO, tagUTF8, "Acme")}, {attr(oidCN, tagUTF8, "good client")}},
		`CN=good client,O=Acme`},
	{`/CN=Ünïcødé 日本`,
		[]xfccRDN{{attr(oidCN, tagUTF8, "Ünïcødé 日本")}},
		`CN=\C3\9Cn\C3\AFc\C3\B8d\C3\A9 \E6\97\A5\E6\9C\AC`},
	{`/CN=a+OU=b`,
		[]xfccRDN{{attr(oidCN, tagUTF8, "a"), attr(oidOU, tagUTF8, "b")}},
		`OU=b+CN=a`},
	{`/CN=x\,y\+z"w\\v<u>t;s/O=p=q#r`,
		[]xfccRDN{{attr(oidCN, tagUTF8, `x,y+z"w\v<u>t;s`)}, {attr(oidO, tagUTF8, "p=q#r")}},
		`O=p=q#r,CN=x\,y\+z\"w\\v\<u\>t\;s`},
	{`/CN= lead/O=trail /OU=#hash/L=# /ST= /title=#`,
		[]xfccRDN{{attr(oidCN, tagUTF8, " lead")}, {attr(oidO, tagUTF8, "trail ")}, {attr(oidOU, tagUTF8, "#hash")}, {attr(oidL, tagUTF8, "# ")}, {attr(oidST, tagUTF8, " ")}, {attr(oidTitle, tagUTF8, "#")}},
		`title=#,ST=\ ,L=\#\ ,OU=\#hash,O=trail\ ,CN=\ lead`},
	{`/street=Main St/UID=u1/serialNumber=42/SN=Doe/GN=Jo/initials=JD/pseudonym=ps/dnQualifier=dq/generationQualifier=III/name=nm/postalCode=12345/businessCategory=bc/title=Dr`,
		[]xfccRDN{{attr(oidStreet, tagUTF8, "Main St")}, {attr(oidUID, tagUTF8, "u1")}, {attr(oidSerial, tagPrint, "42")}, {attr(oidSN, tagUTF8, "Doe")}, {attr(oidGN, tagUTF8, "Jo")}, {attr(oidInitials, tagUTF8, "JD")}, {attr(oidPseudo, tagUTF8, "ps")}, {attr(oidDNQual, tagPrint, "dq")}, {attr(oidGenQual, tagUTF8, "III")}, {attr(oidName, tagUTF8, "nm")}, {attr(oidPostal, tagUTF8, "12345")}, {attr(oidBusiness, tagUTF8, "bc")}, {attr(oidTitle, tagUTF8, "Dr")}},
		`title=Dr,businessCategory=bc,postalCode=12345,name=nm,generationQualifier=III,dnQualifier=dq,pseudonym=ps,initials=JD,GN=Jo,SN=Doe,serialNumber=42,UID=u1,street=Main St`},
	{"1.2.3.4=foo (an OID OpenSSL does not know), a T61String, a BMPString, control characters",
		[]xfccRDN{{attr(oidPrivate, tagUTF8, "foo")}, {attr(oidCN, tagT61, "caf\xe9")}, {attr(oidOU, tagBMP, "\x00#\x00\xe9\x65\xe5\x00 ")}, {attr(oidL, tagUTF8, "a\tb\x7f\x00")}},
		`L=a\09b\7F\00,OU=\#\C3\A9\E6\97\A5\ ,CN=caf\C3\A9,1.2.3.4=#0C03666F6F`},
}

// TestXFCCSubjectMatchesOpenSSL: the Subject of X-Forwarded-Client-Cert is
// what OpenSSL (and so Envoy) prints for the certificate's subject, with
// the header's own quoting on top; Hash, URI and DNS are unchanged.
func TestXFCCSubjectMatchesOpenSSL(t *testing.T) {
	ca := newTestCA(t, "vigil client CA")
	for _, tc := range xfccSubjects {
		_, leaf := ca.issueRaw(t, rawSubject(t, tc.rdns...), "spiffe://example.test/bob", "bob.example.test")
		sum := sha256.Sum256(leaf.Raw)
		want := `Hash=` + hex.EncodeToString(sum[:]) + `;Subject="` + xfccEscape(tc.want) + `";URI="spiffe://example.test/bob";DNS="bob.example.test"`
		if got := clientCertElement(leaf); got != want {
			t.Errorf("subject %s:\n got %s\nwant %s", tc.subj, got, want)
		}
	}
}

// TestXFCCSubjectThroughProxy: an origin behind tls_listen with
// client_ca_file gets the Subject OpenSSL prints, in the certificate's
// reversed order with emailAddress and DC by name and UTF-8 as \XX, quoted
// for the header.
func TestXFCCSubjectThroughProxy(t *testing.T) {
	b := newBackend(t, "a")
	ca := newTestCA(t, "vigil client CA")
	cfg := pool1(PolicyFirst, b.srv.URL)
	cfg.ClientCAFile = ca.file
	_, _, addr, roots := runTLSProxyReg(t, cfg)
	cert, leaf := ca.issueRaw(t, rawSubject(t,
		xfccRDN{attr(oidDC, tagIA5, "corp")},
		xfccRDN{attr(oidEmail, tagIA5, "bob@example.com")},
		xfccRDN{attr(oidCN, tagUTF8, `Bob "B" Ünï\`)},
		xfccRDN{attr(oidO, tagUTF8, "Acme, Inc")},
		xfccRDN{attr(oidC, tagPrint, "US")},
	), "", "")
	sum := sha256.Sum256(leaf.Raw)
	// OpenSSL: C=US,O=Acme\, Inc,CN=Bob \"B\" \C3\9Cn\C3\AF\\,emailAddress=bob@example.com,DC=corp
	want := `Hash=` + hex.EncodeToString(sum[:]) + `;Subject="C=US,O=Acme\\, Inc,CN=Bob \\\"B\\\" \\C3\\9Cn\\C3\\AF\\\\,emailAddress=bob@example.com,DC=corp"`
	for _, h2 := range []bool{false, true} {
		code, _, err := tlsGet(t, addr, roots, &cert, h2, "/")
		if err != nil || code != 200 {
			t.Fatalf("h2=%v: %d %v", h2, code, err)
		}
		b.mu.Lock()
		got := b.last["X-Forwarded-Client-Cert"]
		b.mu.Unlock()
		if len(got) != 1 || got[0] != want {
			t.Errorf("h2=%v: origin got X-Forwarded-Client-Cert %q, want [%s]", h2, got, want)
		}
	}
}
