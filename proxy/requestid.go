package proxy

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"sync/atomic"
	"unsafe"
)

// requestIDs makes the IDs of requests (Config.RequestID): 32 hex digits, a
// random prefix drawn once per process, then a per-request counter mixed by
// an odd multiplier and a random key, so IDs are unique across proxies and
// restarts and do not show the request count. One allocation per ID.
type requestIDs struct {
	prefix [16]byte // hex of 8 random bytes
	key    uint64
	seq    atomic.Uint64
}

func newRequestIDs() *requestIDs {
	var b [16]byte
	rand.Read(b[:])
	g := &requestIDs{key: binary.LittleEndian.Uint64(b[8:])}
	hex.Encode(g.prefix[:], b[:8])
	return g
}

// ridBox holds an ID and the one-element value slice the header maps share.
type ridBox struct {
	v [1]string
	b [32]byte
}

// next returns a new ID as a header value.
func (g *requestIDs) next() []string {
	x := g.seq.Add(1)*0x9E3779B97F4A7C15 ^ g.key
	box := new(ridBox)
	copy(box.b[:16], g.prefix[:])
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], x)
	hex.Encode(box.b[16:], n[:])
	box.v[0] = unsafe.String(&box.b[0], len(box.b))
	return box.v[:]
}

// validRequestID reports whether a client's ID may be kept
// (request_id_from_client): 1 to 128 bytes of letters, digits and
// - _ . : + = /, so it cannot break a log line or carry markup.
func validRequestID(v string) bool {
	if len(v) == 0 || len(v) > 128 {
		return false
	}
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-', c == '_', c == '.', c == ':', c == '+', c == '=', c == '/':
		default:
			return false
		}
	}
	return true
}
