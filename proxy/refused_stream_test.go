package proxy

import (
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// refusingH2Origin is an h2c origin that refuses every stream with
// REFUSED_STREAM (an origin at its stream limit): it processes nothing.
func refusingH2Origin(t *testing.T, refused *atomic.Int64) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				preface := make([]byte, len(http2.ClientPreface))
				if _, err := io.ReadFull(c, preface); err != nil {
					return
				}
				fr := http2.NewFramer(c, c)
				fr.WriteSettings()
				for {
					f, err := fr.ReadFrame()
					if err != nil {
						return
					}
					switch f := f.(type) {
					case *http2.SettingsFrame:
						if !f.IsAck() {
							fr.WriteSettingsAck()
						}
					case *http2.HeadersFrame:
						refused.Add(1)
						fr.WriteRSTStream(f.StreamID, http2.ErrCodeRefusedStream)
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// TestRefusedStreamMovesOnUncharged: an HTTP/2 origin refusing streams it
// did not process (REFUSED_STREAM) is not charged a failure, and the
// request, body included, goes to the next origin (a POST got 502 and the
// refusing origin was ejected after five).
func TestRefusedStreamMovesOnUncharged(t *testing.T) {
	var refused atomic.Int64
	good := h2cOrigin(t, protoEcho("good"))
	cfg := pool1(PolicyFirst, refusingH2Origin(t, &refused), good)
	cfg.Pools[0].OriginProtocol = OriginHTTP2
	cfg.Pools[0].Passive.Consecutive5xx = 2
	h := start(t, cfg, nil, false)
	// POSTs only: Go's transport resends a body-less request an origin
	// refused to the same origin itself, with backoff (documented).
	for i := 0; i < 6; i++ {
		method, body := "POST", "payload"
		start := time.Now()
		if code, b, hdr := h.do(method, "/p", body); code != 200 || hdr.Get("X-Origin") != "good" {
			t.Fatalf("%s %d: %d %q from %q, want 200 from the next origin", method, i, code, b, hdr.Get("X-Origin"))
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s %d took %s: the refusing origin was retried instead of the next one", method, i, d)
		}
	}
	if refused.Load() == 0 {
		t.Fatal("the refusing origin saw no stream")
	}
	if o := h.p.Origins()[0]; !o.Available {
		t.Errorf("the origin that refused streams was taken out: %v", o.Why)
	}
}
