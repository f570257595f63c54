package proxy

import (
	"bufio"
	"io"
	"strings"
	"testing"
)

// TestChunkedReader: the body each chunked framing decodes to, and which
// framings are refused.
func TestChunkedReader(t *testing.T) {
	tests := []struct {
		name, in, want string
		wantErr        bool
	}{
		{"plain", "5\r\nhello\r\n0\r\n\r\n", "hello", false},
		{"several chunks, upper-case hex", "3\r\nabc\r\nA\r\n0123456789\r\n0\r\n\r\n", "abc0123456789", false},
		{"leading zeros", "0005\r\nhello\r\n000\r\n\r\n", "hello", false},
		{"extension", "5;a=1;b=\"x y\"\r\nhello\r\n0;last\r\n\r\n", "hello", false},
		{"white space before extension", "5 \t;a=1\r\nhello\r\n0 ;z\r\n\r\n", "hello", false},
		{"trailing white space", "5  \r\nhello\r\n0\r\n\r\n", "hello", false},
		{"bare LF", "5\nhello\r\n0\r\n\r\n", "", true},
		{"CR inside the line", "5;a\rb\r\nhello\r\n0\r\n\r\n", "", true},
		{"leading white space", " 5\r\nhello\r\n0\r\n\r\n", "", true},
		{"white space inside the size", "1 0\r\nhello\r\n0\r\n\r\n", "", true},
		{"no size", ";a\r\nhello\r\n0\r\n\r\n", "", true},
		{"many leading zeros", "0000000000000000000005\r\nhello\r\n0A\r\n0123456789\r\n0000000000000000000\r\n\r\n", "hello0123456789", false},
		{"17 significant hex digits", "10000000000000005\r\nhello\r\n0\r\n\r\n", "", true},
		{"data longer than its size", "3\r\nhello\r\n0\r\n\r\n", "", true},
		{"cut in a chunk", "5\r\nhel", "", true},
		{"cut before the last chunk", "5\r\nhello\r\n", "", true},
		{"size line over 4 KiB", "5;" + strings.Repeat("a", 5000) + "\r\nhello\r\n0\r\n\r\n", "", true},
		{"padded byte chunks", strings.Repeat("1;"+strings.Repeat("x", 200)+"\r\nA\r\n", 200) + "0\r\n\r\n", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A small buffer makes the reader stop and resume mid-line.
			br := bufio.NewReaderSize(iotestHalf{strings.NewReader(tt.in)}, 8192)
			got, err := io.ReadAll(newChunkedReader(br))
			if tt.wantErr {
				if err == nil {
					t.Fatalf("decoded %q, want an error", got)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
			// The trailer section is left for the caller.
			if rest, _ := io.ReadAll(br); string(rest) != "\r\n" {
				t.Errorf("left %q after the last chunk, want the trailer section", rest)
			}
		})
	}
}

// iotestHalf hands out at most half of what each Read asks for (at least
// one byte), so chunk lines arrive in pieces.
type iotestHalf struct{ r io.Reader }

func (h iotestHalf) Read(p []byte) (int, error) {
	return h.r.Read(p[:(len(p)+1)/2])
}
