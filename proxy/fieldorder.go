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
	// One pass over the map: a name of order goes to its slot, any other
	// after the slots; no lookups.
	n := len(order)
	fs := buf[:0]
	var bits uint64 // fieldBit of every name in order
	for _, k := range order {
		fs = append(fs, field{})
		bits |= fieldBit(k)
	}
next:
	for k, vv := range hdr {
		if bits&fieldBit(k) != 0 {
			for i, o := range order {
				if o == k {
					fs[i] = field{k, vv}
					continue next
				}
			}
		}
		fs = append(fs, field{k, vv})
	}
	// Close the slots of names the message no longer holds (hop-by-hop
	// fields the proxy removed), then sort the others.
	w := 0
	for i := 0; i < n; i++ {
		if fs[i].name != "" {
			fs[w] = fs[i]
			w++
		}
	}
	fs = fs[:w+copy(fs[w:], fs[n:])]
	for i := w + 1; i < len(fs); i++ {
		for j := i; j > w && fs[j].name < fs[j-1].name; j-- {
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
