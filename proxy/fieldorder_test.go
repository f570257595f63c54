package proxy

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestFieldOrderKept: on the fast engine a request reaches the origin with
// its header fields in the order the client sent them (repeated fields in
// place), the proxy's own after them in name order, and the answer reaches
// the client with the origin's order, the proxy's Date after it; the same
// on every request of a keep-alive connection. Both directions used to come
// out in Go's random map order, different from one request to the next.
func TestFieldOrderKept(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	var heads []string // the request heads the origin received
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					var head strings.Builder
					for {
						line, err := br.ReadString('\n')
						if err != nil {
							return
						}
						if line == "\r\n" {
							break
						}
						head.WriteString(line)
					}
					mu.Lock()
					heads = append(heads, head.String())
					mu.Unlock()
					io.WriteString(c, "HTTP/1.1 200 OK\r\nZulu: 1\r\nAlpha: 2\r\nContent-Type: text/plain\r\nX-Multi: a\r\nMike: 3\r\nX-Multi: b\r\nContent-Length: 2\r\nBravo: 4\r\n\r\nok")
				}
			}(c)
		}
	}()
	if testEngine() != EngineFast {
		t.Skip("the field order is kept by the fast engine; net/http's server writes fields in name order")
	}
	h := startWith(t, pool1(PolicyRoundRobin, "http://"+ln.Addr().String()), nil, false, EngineFast)
	c, err := net.Dial("tcp", strings.TrimPrefix(h.front.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	const n = 20
	var answers []string
	for i := 0; i < n; i++ {
		io.WriteString(c, "GET /x HTTP/1.1\r\nZeta: 1\r\nHost: www.example.com\r\nAccept: */*\r\nX-Custom: a\r\nuser-agent: raw\r\nBeta: 2\r\nX-Custom: b\r\nAardvark: 3\r\n\r\n")
		var names []string
		clen := 0
		for first := true; ; first = false {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
			if line == "\r\n" {
				break
			}
			if first {
				if !strings.HasPrefix(line, "HTTP/1.1 200 ") {
					t.Fatalf("request %d: %q", i, line)
				}
				continue
			}
			name, v, _ := strings.Cut(line, ":")
			names = append(names, name)
			if name == "Content-Length" {
				clen = int(strings.TrimSpace(v)[0] - '0')
			}
		}
		if _, err := io.ReadFull(br, make([]byte, clen)); err != nil {
			t.Fatalf("request %d: body: %v", i, err)
		}
		answers = append(answers, strings.Join(names, ","))
	}

	wantReq := []string{"Zeta", "Accept", "X-Custom", "X-Custom", "User-Agent", "Beta", "Aardvark",
		"Via", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Real-Ip", "X-Request-Id"}
	mu.Lock()
	defer mu.Unlock()
	if len(heads) != n {
		t.Fatalf("origin got %d requests, want %d", len(heads), n)
	}
	for i, head := range heads {
		var names []string
		for _, line := range strings.Split(strings.TrimRight(head, "\r\n"), "\r\n")[1:] {
			name, _, _ := strings.Cut(line, ":")
			if name != "Host" {
				names = append(names, name)
			}
		}
		if !reflect.DeepEqual(names, wantReq) {
			t.Fatalf("request %d reached the origin with fields %v, want %v", i, names, wantReq)
		}
	}
	wantResp := "Zulu,Alpha,Content-Type,X-Multi,X-Multi,Mike,Content-Length,Bravo,X-Request-Id,Date"
	for i, a := range answers {
		if a != wantResp {
			t.Fatalf("answer %d reached the client with fields %s, want %s", i, a, wantResp)
		}
	}
}

func TestOrderedFields(t *testing.T) {
	hdr := http.Header{"C": {"3"}, "A": {"1"}, "X-Forwarded-For": {"ip"}, "B": {"2"}, "Via": {"v"}, "Forwarded": {"f"}}
	for i := 0; i < 20; i++ {
		fs := orderedFields(hdr, []string{"A", "Gone", "B", "C"}, nil)
		var got []string
		for _, f := range fs {
			got = append(got, f.name)
		}
		want := []string{"A", "B", "C", "Forwarded", "Via", "X-Forwarded-For"}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("order %v, want %v (the message's own fields in order, then the others by name)", got, want)
		}
	}
}

// TestOrderedFieldsMany: the same order when the message has more names
// than orderedFields scans (a map lookup each), and when it has none of its
// own and the proxy's are many (sorted in O(n log n)).
func TestOrderedFieldsMany(t *testing.T) {
	for _, n := range []int{scanFields - 1, scanFields, scanFields + 1, 500} {
		hdr := http.Header{}
		var order, want []string
		for i := n; i > 0; i-- { // names in reverse name order, so that order is not sorted
			k := fmt.Sprintf("N-%04d", i)
			order = append(order, k)
			if i%7 != 0 { // every 7th name gone (removed by the proxy)
				hdr[k] = []string{"v"}
				want = append(want, k)
			}
		}
		var added []string
		for i := 0; i < n/3; i++ {
			k := fmt.Sprintf("Added-%04d", n/3-i)
			hdr[k] = []string{"v"}
			added = append(added, k)
		}
		slices.Sort(added)
		want = append(want, added...)
		for _, tc := range []struct {
			name  string
			order []string
			want  []string
		}{{"own order", order, want}, {"no order", nil, slices.Sorted(maps.Keys(hdr))}} {
			fs := orderedFields(hdr, tc.order, nil)
			var got []string
			for _, f := range fs {
				got = append(got, f.name)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("%d names, %s: order %v, want %v", n, tc.name, got, tc.want)
			}
		}
	}
}

func BenchmarkOrderedFields(b *testing.B) {
	hdr := http.Header{}
	var order []string
	for _, k := range []string{"User-Agent", "Accept", "Accept-Encoding", "Accept-Language", "Cookie", "Referer", "Sec-Fetch-Mode", "Cache-Control"} {
		hdr[k] = []string{"v"}
		order = append(order, k)
	}
	for _, k := range []string{"X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host", "X-Real-Ip"} {
		hdr[k] = []string{"v"}
	}
	var buf []field
	b.ReportAllocs()
	for b.Loop() {
		buf = orderedFields(hdr, order, buf)
	}
}
