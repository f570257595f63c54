package reporting

import (
	"context"
	"strings"
	"sync"
)

// ReadNotes collects what the sources one request read through have to say
// about their answers (e.g. that the latest verdicts include some a store
// has not taken yet), for the reader to show: the status page's banner,
// an API response header. A source adds its line with NoteRead; sources
// that wrap others pass the context on, so the line reaches the reader
// whatever sits in between. Safe for concurrent use; a nil *ReadNotes
// holds nothing.
type ReadNotes struct {
	mu    sync.Mutex
	notes []string
}

// ReadNotesHeader is the response header the API sets to a request's
// ReadNotes when there are any: JSON arrays have no place for them.
const ReadNotesHeader = "Vigil-Notice"

type readNotesKey struct{}

// WithReadNotes returns ctx carrying a fresh ReadNotes, and that ReadNotes.
func WithReadNotes(ctx context.Context) (context.Context, *ReadNotes) {
	n := &ReadNotes{}
	return context.WithValue(ctx, readNotesKey{}, n), n
}

// NoteRead adds note to the ReadNotes ctx carries (once, however many reads
// add it); without one, or for an empty note, it does nothing.
func NoteRead(ctx context.Context, note string) {
	n, _ := ctx.Value(readNotesKey{}).(*ReadNotes)
	if n == nil || note == "" {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, x := range n.notes {
		if x == note {
			return
		}
	}
	n.notes = append(n.notes, note)
}

// String returns the notes in the order they were first added, joined by
// a space; "" for none.
func (n *ReadNotes) String() string {
	if n == nil {
		return ""
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return strings.Join(n.notes, " ")
}
