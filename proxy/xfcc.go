package proxy

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"strings"
	"unicode/utf8"
)

// clientCertElement is the X-Forwarded-Client-Cert value for a verified
// client certificate, in Envoy's format: the SHA-256 of its DER form, its
// subject as OpenSSL prints it in RFC 2253 form (subjectRFC2253), and its
// URI and DNS subject alternative names.
func clientCertElement(c *x509.Certificate) string {
	sum := sha256.Sum256(c.Raw)
	var b strings.Builder
	b.WriteString("Hash=")
	b.WriteString(hex.EncodeToString(sum[:]))
	b.WriteString(`;Subject="`)
	b.WriteString(xfccEscape(subjectRFC2253(c)))
	b.WriteByte('"')
	for _, u := range c.URIs {
		b.WriteString(`;URI="`)
		b.WriteString(xfccEscape(u.String()))
		b.WriteByte('"')
	}
	for _, d := range c.DNSNames {
		b.WriteString(`;DNS="`)
		b.WriteString(xfccEscape(d))
		b.WriteByte('"')
	}
	return b.String()
}

// xfccEscape escapes a quoted X-Forwarded-Client-Cert value: backslash and
// double quote get a backslash; a control character (none can be valid in
// a header) becomes '?'.
func xfccEscape(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < ' ' || c == 0x7f:
			b.WriteByte('?')
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// subjectRFC2253 is the certificate's subject as Envoy puts it in
// X-Forwarded-Client-Cert: OpenSSL's X509_NAME_print_ex(…, XN_FLAG_RFC2253),
// which is also `openssl x509 -noout -subject -nameopt RFC2253`. It differs
// from pkix.Name.String in three ways an origin matching on the string sees:
// the attributes come in the certificate's own order, reversed (the last
// RDN first, and within a multi-valued RDN the last attribute first);
// attributes are named by OpenSSL's short names (emailAddress, DC, street,
// UID, …) and only an OID OpenSSL does not know is printed dotted, with the
// hex of its DER value; and every byte of a non-ASCII character is sent as
// \XX (OpenSSL's ASN1_STRFLGS_ESC_MSB), so the header stays ASCII.
// A subject that does not parse (crypto/x509 has already parsed it, so this
// is not expected) falls back to pkix.Name.String.
func subjectRFC2253(c *x509.Certificate) string {
	var rdns []xfccRDNSET
	if rest, err := asn1.Unmarshal(c.RawSubject, &rdns); err != nil || len(rest) != 0 {
		return c.Subject.String()
	}
	var b strings.Builder
	first := true
	for i := len(rdns) - 1; i >= 0; i-- {
		for j := len(rdns[i]) - 1; j >= 0; j-- {
			atv := rdns[i][j]
			switch {
			case first:
				first = false
			case j == len(rdns[i])-1:
				b.WriteByte(',')
			default:
				b.WriteByte('+')
			}
			name, known := opensslAttrNames[atv.Type.String()]
			if !known {
				// XN_FLAG_DUMP_UNKNOWN_FIELDS: an unknown attribute is
				// always dumped, whatever its string type.
				b.WriteString(atv.Type.String())
				b.WriteByte('=')
				writeDERDump(&b, atv.Value.FullBytes)
				continue
			}
			b.WriteString(name)
			b.WriteByte('=')
			writeRFC2253Value(&b, atv.Value)
		}
	}
	return b.String()
}

// xfccRDNSET is one relative distinguished name with its values left
// encoded, so their string type and DER survive (pkix.RDNSequence decodes
// them to Go strings); the name ending in SET makes encoding/asn1 read it as
// a SET OF.
type xfccRDNSET []struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// writeRFC2253Value prints a known attribute's value as OpenSSL's
// do_print_ex with ASN1_STRFLGS_RFC2253 does: a string type is converted to
// UTF-8 (a UTF8String is taken byte by byte, as is) and escaped; any other
// type is dumped as '#' and the hex of its DER (ASN1_STRFLGS_DUMP_UNKNOWN,
// ASN1_STRFLGS_DUMP_DER).
func writeRFC2253Value(b *strings.Builder, v asn1.RawValue) {
	width := -1
	if v.Class == asn1.ClassUniversal && !v.IsCompound {
		switch v.Tag {
		case asn1.TagUTF8String:
			width = 0
		case asn1.TagNumericString, asn1.TagPrintableString, asn1.TagT61String,
			asn1.TagIA5String, asn1.TagUTCTime, asn1.TagGeneralizedTime, 26: // VisibleString
			width = 1
		case asn1.TagBMPString:
			width = 2
		case 28: // UniversalString
			width = 4
		}
	}
	if width < 0 || (width > 1 && len(v.Bytes)%width != 0) {
		// OpenSSL fails the whole print on a BMPString or UniversalString
		// of a broken length; crypto/x509 refuses such a certificate.
		writeDERDump(b, v.FullBytes)
		return
	}
	s := v.Bytes
	for i := 0; i < len(s); {
		pos := 0
		if i == 0 {
			pos = rfc2253First
		}
		var r rune
		switch width {
		case 0, 1:
			r = rune(s[i])
			i++
		case 2:
			r = rune(s[i])<<8 | rune(s[i+1])
			i += 2
		case 4:
			r = rune(s[i])<<24 | rune(s[i+1])<<16 | rune(s[i+2])<<8 | rune(s[i+3])
			i += 4
		}
		if i == len(s) {
			// OpenSSL's do_buf: the last character's flag replaces the
			// first's, so a value that is a lone '#' is not escaped.
			pos = rfc2253Last
		}
		if r < 0x80 || width == 0 {
			writeRFC2253Byte(b, byte(r), pos)
			continue
		}
		// UTF8_putc: OpenSSL prints nothing for a surrogate or a value
		// beyond U+10FFFF; utf8.AppendRune would print U+FFFD.
		if r > utf8.MaxRune || (r >= 0xd800 && r <= 0xdfff) {
			continue
		}
		for _, c := range utf8.AppendRune(nil, r) {
			writeRFC2253Byte(b, c, pos)
		}
	}
}

const (
	rfc2253First = 1 + iota
	rfc2253Last
)

// writeRFC2253Byte is OpenSSL's do_esc_char with ASN1_STRFLGS_RFC2253: the
// RFC 2253 specials and backslash get a backslash, as do '#' or a space
// first and a space last; control characters and bytes of 0x80 and above
// become \XX.
func writeRFC2253Byte(b *strings.Builder, c byte, pos int) {
	const hexdig = "0123456789ABCDEF"
	switch {
	case c >= 0x80 || c < 0x20 || c == 0x7f:
		b.WriteByte('\\')
		b.WriteByte(hexdig[c>>4])
		b.WriteByte(hexdig[c&0xf])
		return
	case strings.IndexByte(`,+"\<>;`, c) >= 0,
		pos == rfc2253First && (c == '#' || c == ' '),
		pos == rfc2253Last && c == ' ':
		b.WriteByte('\\')
	}
	b.WriteByte(c)
}

// writeDERDump is OpenSSL's do_dump with ASN1_STRFLGS_DUMP_DER: '#' and the
// value's DER encoding in upper-case hex.
func writeDERDump(b *strings.Builder, der []byte) {
	b.WriteByte('#')
	b.WriteString(strings.ToUpper(hex.EncodeToString(der)))
}

// opensslAttrNames maps an attribute type's OID to the name OpenSSL prints
// for it with XN_FLAG_FN_SN (its short name, or its long name where it has
// none), taken from OpenSSL's obj_mac.h for the arcs subject attributes are
// drawn from: X.520 (2.5.4), PKCS #9 (1.2.840.113549.1.9, without the S/MIME
// arc), the pilot/COSINE attributes of RFC 4519 (0.9.2342.19200300.100.1),
// the EV jurisdiction attributes (1.3.6.1.4.1.311.60.2.1) and the Russian
// registration numbers (1.2.643.3.131.1.1, 1.2.643.100). An OID OpenSSL
// names outside them would be printed dotted here.
var opensslAttrNames = map[string]string{
	"0.9.2342.19200300.100.1.1":  "UID",
	"0.9.2342.19200300.100.1.2":  "textEncodedORAddress",
	"0.9.2342.19200300.100.1.3":  "mail",
	"0.9.2342.19200300.100.1.4":  "info",
	"0.9.2342.19200300.100.1.5":  "favouriteDrink",
	"0.9.2342.19200300.100.1.6":  "roomNumber",
	"0.9.2342.19200300.100.1.7":  "photo",
	"0.9.2342.19200300.100.1.8":  "userClass",
	"0.9.2342.19200300.100.1.9":  "host",
	"0.9.2342.19200300.100.1.10": "manager",
	"0.9.2342.19200300.100.1.11": "documentIdentifier",
	"0.9.2342.19200300.100.1.12": "documentTitle",
	"0.9.2342.19200300.100.1.13": "documentVersion",
	"0.9.2342.19200300.100.1.14": "documentAuthor",
	"0.9.2342.19200300.100.1.15": "documentLocation",
	"0.9.2342.19200300.100.1.20": "homeTelephoneNumber",
	"0.9.2342.19200300.100.1.21": "secretary",
	"0.9.2342.19200300.100.1.22": "otherMailbox",
	"0.9.2342.19200300.100.1.23": "lastModifiedTime",
	"0.9.2342.19200300.100.1.24": "lastModifiedBy",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.26": "aRecord",
	"0.9.2342.19200300.100.1.27": "pilotAttributeType27",
	"0.9.2342.19200300.100.1.28": "mXRecord",
	"0.9.2342.19200300.100.1.29": "nSRecord",
	"0.9.2342.19200300.100.1.30": "sOARecord",
	"0.9.2342.19200300.100.1.31": "cNAMERecord",
	"0.9.2342.19200300.100.1.37": "associatedDomain",
	"0.9.2342.19200300.100.1.38": "associatedName",
	"0.9.2342.19200300.100.1.39": "homePostalAddress",
	"0.9.2342.19200300.100.1.40": "personalTitle",
	"0.9.2342.19200300.100.1.41": "mobileTelephoneNumber",
	"0.9.2342.19200300.100.1.42": "pagerTelephoneNumber",
	"0.9.2342.19200300.100.1.43": "friendlyCountryName",
	"0.9.2342.19200300.100.1.44": "uid",
	"0.9.2342.19200300.100.1.45": "organizationalStatus",
	"0.9.2342.19200300.100.1.46": "janetMailbox",
	"0.9.2342.19200300.100.1.47": "mailPreferenceOption",
	"0.9.2342.19200300.100.1.48": "buildingName",
	"0.9.2342.19200300.100.1.49": "dSAQuality",
	"0.9.2342.19200300.100.1.50": "singleLevelQuality",
	"0.9.2342.19200300.100.1.51": "subtreeMinimumQuality",
	"0.9.2342.19200300.100.1.52": "subtreeMaximumQuality",
	"0.9.2342.19200300.100.1.53": "personalSignature",
	"0.9.2342.19200300.100.1.54": "dITRedirect",
	"0.9.2342.19200300.100.1.55": "audio",
	"0.9.2342.19200300.100.1.56": "documentPublisher",
	"1.2.643.3.131.1.1":          "INN",
	"1.2.643.100.1":              "OGRN",
	"1.2.643.100.3":              "SNILS",
	"1.2.643.100.5":              "OGRNIP",
	"1.2.643.100.111":            "subjectSignTool",
	"1.2.643.100.112":            "issuerSignTool",
	"1.2.643.100.113":            "classSignTool",
	"1.2.643.100.113.1":          "classSignToolKC1",
	"1.2.643.100.113.2":          "classSignToolKC2",
	"1.2.643.100.113.3":          "classSignToolKC3",
	"1.2.643.100.113.4":          "classSignToolKB1",
	"1.2.643.100.113.5":          "classSignToolKB2",
	"1.2.643.100.113.6":          "classSignToolKA1",
	"1.2.840.113549.1.9.1":       "emailAddress",
	"1.2.840.113549.1.9.2":       "unstructuredName",
	"1.2.840.113549.1.9.3":       "contentType",
	"1.2.840.113549.1.9.4":       "messageDigest",
	"1.2.840.113549.1.9.5":       "signingTime",
	"1.2.840.113549.1.9.6":       "countersignature",
	"1.2.840.113549.1.9.7":       "challengePassword",
	"1.2.840.113549.1.9.8":       "unstructuredAddress",
	"1.2.840.113549.1.9.9":       "extendedCertificateAttributes",
	"1.2.840.113549.1.9.14":      "extReq",
	"1.2.840.113549.1.9.15":      "SMIME-CAPS",
	"1.2.840.113549.1.9.20":      "friendlyName",
	"1.2.840.113549.1.9.21":      "localKeyID",
	"1.2.840.113549.1.9.22.1":    "x509Certificate",
	"1.2.840.113549.1.9.22.2":    "sdsiCertificate",
	"1.2.840.113549.1.9.23.1":    "x509Crl",
	"1.3.6.1.4.1.311.60.2.1.1":   "jurisdictionL",
	"1.3.6.1.4.1.311.60.2.1.2":   "jurisdictionST",
	"1.3.6.1.4.1.311.60.2.1.3":   "jurisdictionC",
	"2.5.4.3":                    "CN",
	"2.5.4.4":                    "SN",
	"2.5.4.5":                    "serialNumber",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.9":                    "street",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.12":                   "title",
	"2.5.4.13":                   "description",
	"2.5.4.14":                   "searchGuide",
	"2.5.4.15":                   "businessCategory",
	"2.5.4.16":                   "postalAddress",
	"2.5.4.17":                   "postalCode",
	"2.5.4.18":                   "postOfficeBox",
	"2.5.4.19":                   "physicalDeliveryOfficeName",
	"2.5.4.20":                   "telephoneNumber",
	"2.5.4.21":                   "telexNumber",
	"2.5.4.22":                   "teletexTerminalIdentifier",
	"2.5.4.23":                   "facsimileTelephoneNumber",
	"2.5.4.24":                   "x121Address",
	"2.5.4.25":                   "internationaliSDNNumber",
	"2.5.4.26":                   "registeredAddress",
	"2.5.4.27":                   "destinationIndicator",
	"2.5.4.28":                   "preferredDeliveryMethod",
	"2.5.4.29":                   "presentationAddress",
	"2.5.4.30":                   "supportedApplicationContext",
	"2.5.4.31":                   "member",
	"2.5.4.32":                   "owner",
	"2.5.4.33":                   "roleOccupant",
	"2.5.4.34":                   "seeAlso",
	"2.5.4.35":                   "userPassword",
	"2.5.4.36":                   "userCertificate",
	"2.5.4.37":                   "cACertificate",
	"2.5.4.38":                   "authorityRevocationList",
	"2.5.4.39":                   "certificateRevocationList",
	"2.5.4.40":                   "crossCertificatePair",
	"2.5.4.41":                   "name",
	"2.5.4.42":                   "GN",
	"2.5.4.43":                   "initials",
	"2.5.4.44":                   "generationQualifier",
	"2.5.4.45":                   "x500UniqueIdentifier",
	"2.5.4.46":                   "dnQualifier",
	"2.5.4.47":                   "enhancedSearchGuide",
	"2.5.4.48":                   "protocolInformation",
	"2.5.4.49":                   "distinguishedName",
	"2.5.4.50":                   "uniqueMember",
	"2.5.4.51":                   "houseIdentifier",
	"2.5.4.52":                   "supportedAlgorithms",
	"2.5.4.53":                   "deltaRevocationList",
	"2.5.4.54":                   "dmdName",
	"2.5.4.65":                   "pseudonym",
	"2.5.4.72":                   "role",
	"2.5.4.97":                   "organizationIdentifier",
	"2.5.4.98":                   "c3",
	"2.5.4.99":                   "n3",
	"2.5.4.100":                  "dnsName",
}
