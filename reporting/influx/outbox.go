package influx

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// outbox is a durable FIFO of line-protocol lines: append-only segment files
// <dir>/<id>.lp (id: 16 hex digits, increasing) and a cursor file naming the
// first undelivered byte. append fsyncs before it returns, so an
// acknowledged Publish survives a crash. The cursor is replaced atomically
// (write + rename) after each delivered batch but not fsynced: after a crash
// the last batch may be sent again, which InfluxDB absorbs (a point is keyed
// by measurement, tags and timestamp, so a re-sent point overwrites itself).
//
// When the files exceed max bytes, whole segments are deleted oldest first
// and their undelivered lines are reported as dropped.
type outbox struct {
	dir    string
	max    int64
	segMax int64

	mu      sync.Mutex
	segs    []segment // oldest first; the last one is the head being appended to
	head    *os.File
	curSeg  int // index into segs of the cursor segment (always 0 after compaction)
	curOff  int64
	pending int64 // undelivered lines
	bytes   int64 // sum of segment sizes
}

type segment struct {
	id   uint64
	size int64
}

// position is where a batch starts or ends.
type position struct {
	id  uint64
	off int64
}

const cursorFile = "cursor"

func segName(id uint64) string { return fmt.Sprintf("%016x.lp", id) }

// openOutbox opens or creates the outbox in dir, repairs a torn last line and
// counts undelivered lines.
// The outbox is private to this user: the directory is 0700 (an existing
// one left 0755 by an older version is tightened) and its files 0600.
func openOutbox(dir string, max int64) (*outbox, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(dir); err == nil && fi.Mode().Perm()&0o077 != 0 {
		_ = os.Chmod(dir, 0o700) // best effort: fails only if another user owns it
	}
	o := &outbox{dir: dir, max: max, segMax: min(max/8, 16<<20)}
	if o.segMax < 64<<10 {
		o.segMax = 64 << 10
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".lp") {
			continue
		}
		id, err := strconv.ParseUint(strings.TrimSuffix(name, ".lp"), 16, 64)
		if err != nil {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			return nil, err
		}
		o.segs = append(o.segs, segment{id: id, size: fi.Size()})
	}
	sort.Slice(o.segs, func(i, j int) bool { return o.segs[i].id < o.segs[j].id })
	if len(o.segs) == 0 {
		o.segs = []segment{{id: 1}}
	}
	// A crash during append can leave a partial last line: cut it off.
	last := &o.segs[len(o.segs)-1]
	if err := o.repairTail(last); err != nil {
		return nil, err
	}
	o.head, err = os.OpenFile(filepath.Join(dir, segName(last.id)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	for _, s := range o.segs {
		o.bytes += s.size
	}
	// Cursor: a missing or unknown segment means "start at the oldest".
	if b, err := os.ReadFile(filepath.Join(dir, cursorFile)); err == nil {
		var id uint64
		var off int64
		if _, err := fmt.Sscanf(string(b), "%x %d", &id, &off); err == nil {
			for i, s := range o.segs {
				if s.id == id && off <= s.size {
					o.curSeg, o.curOff = i, off
					break
				}
			}
		}
	}
	// Segments before the cursor were delivered.
	for o.curSeg > 0 {
		o.removeOldest()
		o.curSeg--
	}
	for i := range o.segs {
		from := int64(0)
		if i == 0 {
			from = o.curOff
		}
		n, err := o.countLines(o.segs[i], from)
		if err != nil {
			o.head.Close()
			return nil, err
		}
		o.pending += n
	}
	return o, nil
}

func (o *outbox) repairTail(s *segment) error {
	if s.size == 0 {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(o.dir, segName(s.id)), os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	// Look back at most 1 MiB for the last newline.
	n := min(s.size, 1<<20)
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, s.size-n); err != nil {
		return err
	}
	i := bytes.LastIndexByte(buf, '\n')
	keep := s.size - n + int64(i) + 1
	if keep == s.size {
		return nil
	}
	if err := f.Truncate(keep); err != nil {
		return err
	}
	s.size = keep
	return f.Sync()
}

func (o *outbox) countLines(s segment, from int64) (int64, error) {
	f, err := os.Open(filepath.Join(o.dir, segName(s.id)))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r := io.NewSectionReader(f, from, s.size-from)
	buf := make([]byte, 256<<10)
	var n int64
	for {
		k, err := r.Read(buf)
		n += int64(bytes.Count(buf[:k], []byte{'\n'}))
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// removeOldest deletes segs[0] (never the head). Callers hold mu.
func (o *outbox) removeOldest() {
	s := o.segs[0]
	_ = os.Remove(filepath.Join(o.dir, segName(s.id)))
	o.bytes -= s.size
	o.segs = o.segs[1:]
}

// append writes lines (each ending in '\n') durably and returns how many
// undelivered lines were dropped to stay under max.
func (o *outbox) append(lines [][]byte) (dropped int64, err error) {
	if len(lines) == 0 {
		return 0, nil
	}
	var buf bytes.Buffer
	for _, l := range lines {
		buf.Write(l)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.head == nil {
		return 0, errClosed
	}
	h := &o.segs[len(o.segs)-1]
	if h.size > 0 && h.size+int64(buf.Len()) > o.segMax {
		if err := o.rotate(); err != nil {
			return 0, err
		}
		h = &o.segs[len(o.segs)-1]
	}
	n, err := o.head.Write(buf.Bytes())
	h.size += int64(n)
	o.bytes += int64(n)
	if err == nil {
		err = o.head.Sync()
	}
	if err != nil {
		// Leave no partial line behind for the reader.
		_ = o.repairTail(h)
		return 0, fmt.Errorf("outbox append: %w", err)
	}
	o.pending += int64(len(lines))
	for o.bytes > o.max && len(o.segs) > 1 {
		s := o.segs[0]
		lost, err := o.countLines(s, o.curOff)
		if err != nil {
			return dropped, err
		}
		o.removeOldest()
		o.curOff = 0
		o.pending -= lost
		dropped += lost
	}
	return dropped, nil
}

func (o *outbox) rotate() error {
	if err := o.head.Close(); err != nil {
		return err
	}
	id := o.segs[len(o.segs)-1].id + 1
	f, err := os.OpenFile(filepath.Join(o.dir, segName(id)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if d, err := os.Open(o.dir); err == nil { // make the new file's name durable
		_ = d.Sync()
		d.Close()
	}
	o.head = f
	o.segs = append(o.segs, segment{id: id})
	return nil
}

// next reads up to maxLines undelivered lines (maxBytes at most, but at
// least one line) from the cursor segment, and the positions before and
// after them. Fully delivered segments are deleted on the way.
func (o *outbox) next(maxLines int, maxBytes int64) (lines []string, from, to position, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.head == nil {
		return nil, from, to, errClosed
	}
	for len(o.segs) > 1 && o.curOff >= o.segs[0].size {
		o.removeOldest()
		o.curOff = 0
	}
	s := o.segs[0]
	from = position{s.id, o.curOff}
	if o.curOff >= s.size {
		o.pending = 0 // everything up to the head's end is delivered
		return nil, from, from, nil
	}
	f, err := os.Open(filepath.Join(o.dir, segName(s.id)))
	if err != nil {
		return nil, from, to, err
	}
	defer f.Close()
	want := min(s.size-o.curOff, maxBytes)
	buf := make([]byte, want)
	if _, err := f.ReadAt(buf, o.curOff); err != nil && err != io.EOF {
		return nil, from, to, err
	}
	end := bytes.LastIndexByte(buf, '\n')
	if end < 0 { // one line longer than maxBytes: read it whole
		rest := make([]byte, s.size-o.curOff)
		if _, err := f.ReadAt(rest, o.curOff); err != nil && err != io.EOF {
			return nil, from, to, err
		}
		buf, end = rest, bytes.IndexByte(rest, '\n')
	}
	var off int64
	for off <= int64(end) && len(lines) < maxLines {
		i := bytes.IndexByte(buf[off:], '\n')
		lines = append(lines, string(buf[off:off+int64(i)]))
		off += int64(i) + 1
	}
	return lines, from, position{s.id, o.curOff + off}, nil
}

// ack marks the lines between from and to delivered, unless the outbox moved
// on meanwhile (their segment was dropped for space).
func (o *outbox) ack(from, to position, n int) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.head == nil || len(o.segs) == 0 || o.segs[0].id != from.id || o.curOff != from.off {
		return nil
	}
	o.curOff = to.off
	o.pending -= int64(n)
	tmp := filepath.Join(o.dir, cursorFile+".tmp")
	if err := os.WriteFile(tmp, fmt.Appendf(nil, "%x %d\n", to.id, to.off), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(o.dir, cursorFile))
}

func (o *outbox) stats() (pending, size int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.pending, o.bytes
}

func (o *outbox) close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.head == nil {
		return nil
	}
	err := o.head.Close()
	o.head = nil
	return err
}

var errClosed = errors.New("influx: closed")
