package checks

import "bytes"

// utf8BOM is the byte-order mark some servers (.NET, Windows tools) put
// before a UTF-8 JSON document. RFC 8259 §8.1 lets a parser ignore it,
// and a browser's Response.json() does.
var utf8BOM = []byte("\xef\xbb\xbf")

// jsonBody is the body the json assertions read: without a leading UTF-8
// byte-order mark.
func jsonBody(body []byte) []byte { return bytes.TrimPrefix(body, utf8BOM) }
