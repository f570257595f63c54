package proxy

import (
	"net/http"
	"slices"
	"strings"
)

// scanFields is the most names of a message's order that orderedFields
// finds by scanning the list; above it, it looks each name up in the map
// instead, so that a head of n fields costs O(n) whatever n is. A client
// sending a head of 6000 distinct names (59 KB, under max_header_bytes) cost
// the proxy 70–110 ms of CPU per request with the scan, 200–300 times the
// cost of 100 fields; an origin's answer of 20,000 fields 0.4–0.6 s.
const scanFields = 16

// sortFieldsInsert is the most fields orderedFields sorts by insertion
// (cheap and allocation-free for the few the proxy adds); more are sorted
// in O(n log n).
const sortFieldsInsert = 12

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
	if len(order) > scanFields {
		return orderedFieldsMany(hdr, order, buf)
	}
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
	sortFields(fs[w:])
	return fs
}

// orderedFieldsMany is orderedFields for a long order: a map lookup for
// each of its names, and a set of them only when hdr holds names the
// message did not (those the proxy added).
func orderedFieldsMany(hdr http.Header, order []string, buf []field) []field {
	fs := buf[:0]
	for _, k := range order {
		if vv, ok := hdr[k]; ok {
			fs = append(fs, field{k, vv})
		}
	}
	w := len(fs)
	if w < len(hdr) {
		own := make(map[string]struct{}, len(order))
		for _, k := range order {
			own[k] = struct{}{}
		}
		for k, vv := range hdr {
			if _, ok := own[k]; !ok {
				fs = append(fs, field{k, vv})
			}
		}
	}
	sortFields(fs[w:])
	return fs
}

// sortFields sorts fs by name: by insertion when they are few (the fields
// the proxy added), else in O(n log n) (a message with no order of its own,
// as on the stdlib engine, may hold thousands).
func sortFields(fs []field) {
	if len(fs) > sortFieldsInsert {
		slices.SortFunc(fs, func(a, b field) int { return strings.Compare(a.name, b.name) })
		return
	}
	for i := 1; i < len(fs); i++ {
		for j := i; j > 0 && fs[j].name < fs[j-1].name; j-- {
			fs[j], fs[j-1] = fs[j-1], fs[j]
		}
	}
}

// fieldBit is a one-bit digest of a field name, so that most names the
// proxy added are told from the message's own without comparing strings.
func fieldBit(k string) uint64 {
	if k == "" {
		return 1
	}
	return 1 << ((uint(len(k))*7 + uint(k[len(k)-1]) + uint(k[0])*3) & 63)
}
