package proxy

import "net/http"

// field is one header field name with its values, in writing order.
type field struct {
	name string
	vals []string
}

// orderedFields returns hdr's fields in the order to write them: first the
// names of order (a message's field names in the order they came, each
// once) that hdr still holds, then the others (those the proxy added) sorted
// by name. A request or an answer so keeps the order of its fields through
// the fast path, as nginx, HAProxy and Envoy keep it; ranging over the map
// would give every message a new random order, which breaks origins and
// clients that fingerprint or log the order, and makes captures hard to
// compare. buf is reused storage.
func orderedFields(hdr http.Header, order []string, buf []field) []field {
	fs := buf[:0]
	var seen uint64 // fieldBit of every name taken from order
	for _, k := range order {
		if vv, ok := hdr[k]; ok {
			fs = append(fs, field{k, vv})
			seen |= fieldBit(k)
		}
	}
	if len(fs) == len(hdr) {
		return fs
	}
	n := len(fs)
next:
	for k, vv := range hdr {
		if seen&fieldBit(k) != 0 {
			for i := range fs[:n] {
				if fs[i].name == k {
					continue next
				}
			}
		}
		fs = append(fs, field{k, vv})
	}
	for i := n + 1; i < len(fs); i++ {
		for j := i; j > n && fs[j].name < fs[j-1].name; j-- {
			fs[j], fs[j-1] = fs[j-1], fs[j]
		}
	}
	return fs
}

// fieldBit is a one-bit digest of a field name, so that most names the
// proxy added are told from the message's own without comparing strings.
func fieldBit(k string) uint64 {
	if k == "" {
		return 1
	}
	return 1 << ((uint(len(k))*7 + uint(k[len(k)-1]) + uint(k[0])*3) & 63)
}
