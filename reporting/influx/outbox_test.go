package influx

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func seqLines(from, n, pad int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = fmt.Appendf(nil, "m,t=x seq=%di,pad=\"%s\" %d\n", from+i, strings.Repeat("p", pad), from+i)
	}
	return out
}

func seqOf(t *testing.T, line string) int {
	t.Helper()
	i := strings.Index(line, "seq=")
	j := strings.Index(line[i:], "i,")
	n, err := strconv.Atoi(line[i+4 : i+j])
	if err != nil {
		t.Fatalf("bad line %q", line)
	}
	return n
}

// drain reads and acknowledges everything, returning the sequence numbers.
func drain(t *testing.T, o *outbox, batch int) []int {
	t.Helper()
	var got []int
	for {
		lines, from, to, err := o.next(batch, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if len(lines) == 0 {
			return got
		}
		for _, l := range lines {
			got = append(got, seqOf(t, l))
		}
		if err := o.ack(from, to, len(lines)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOutboxResumesAtCursorAfterReopen(t *testing.T) {
	dir := t.TempDir()
	o, err := openOutbox(dir, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.append(seqLines(0, 10, 10)); err != nil {
		t.Fatal(err)
	}
	lines, from, to, _ := o.next(4, 1<<20)
	if len(lines) != 4 || seqOf(t, lines[0]) != 0 {
		t.Fatalf("next(4) = %q", lines)
	}
	if err := o.ack(from, to, 4); err != nil {
		t.Fatal(err)
	}
	// Read but not acknowledged: must come again after a restart.
	if lines, _, _, _ := o.next(3, 1<<20); len(lines) != 3 {
		t.Fatalf("next(3) = %q", lines)
	}
	o.close()
	o, err = openOutbox(dir, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	defer o.close()
	if p, _ := o.stats(); p != 6 {
		t.Fatalf("pending after reopen = %d, want 6", p)
	}
	got := drain(t, o, 100)
	if fmt.Sprint(got) != "[4 5 6 7 8 9]" {
		t.Fatalf("after reopen delivered %v, want 4..9", got)
	}
}

func TestOutboxRepairsTornTail(t *testing.T) {
	dir := t.TempDir()
	o, err := openOutbox(dir, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.append(seqLines(0, 3, 10)); err != nil {
		t.Fatal(err)
	}
	o.close()
	// A crash in the middle of a write leaves half a line.
	f, err := os.OpenFile(filepath.Join(dir, segName(1)), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("m,t=x seq=3i,pad=\"pp")
	f.Close()
	o, err = openOutbox(dir, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	defer o.close()
	if p, _ := o.stats(); p != 3 {
		t.Fatalf("pending = %d, want the 3 whole lines", p)
	}
	if _, err := o.append(seqLines(3, 2, 10)); err != nil {
		t.Fatal(err)
	}
	if got := drain(t, o, 2); fmt.Sprint(got) != "[0 1 2 3 4]" {
		t.Fatalf("delivered %v, want 0..4", got)
	}
}

func TestOutboxDropsOldestWhenFull(t *testing.T) {
	dir := t.TempDir()
	const max = 1 << 20
	o, err := openOutbox(dir, max)
	if err != nil {
		t.Fatal(err)
	}
	defer o.close()
	// Deliver a little first so the cursor sits inside the oldest segment.
	o.append(seqLines(0, 100, 80))
	lines, from, to, _ := o.next(50, 1<<20)
	o.ack(from, to, len(lines))
	var dropped int64
	const total = 30000 // ~3.3 MB of ~110-byte lines into a 1 MiB spool
	for i := 100; i < total; i += 100 {
		d, err := o.append(seqLines(i, 100, 80))
		if err != nil {
			t.Fatal(err)
		}
		dropped += d
		if _, size := o.stats(); size > max+o.segMax {
			t.Fatalf("outbox grew to %d bytes, bound %d", size, max+o.segMax)
		}
	}
	if dropped == 0 {
		t.Fatal("nothing dropped from a full outbox")
	}
	pending, _ := o.stats()
	if pending+dropped+50 != total {
		t.Fatalf("pending %d + dropped %d + delivered 50 != %d", pending, dropped, total)
	}
	got := drain(t, o, 500)
	if int64(len(got)) != pending {
		t.Fatalf("drained %d, pending said %d", len(got), pending)
	}
	// The newest survive, contiguous and in order.
	for i, n := range got {
		if n != total-len(got)+i {
			t.Fatalf("line %d has seq %d, want %d: not the newest in order", i, n, total-len(got)+i)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) > 3 { // head segment + cursor (+ its tmp at most)
		t.Fatalf("after draining %d files remain", len(ents))
	}
}
