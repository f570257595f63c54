package statuspage

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// notingSource is a memSource whose reads note a line (reporting.NoteRead),
// as the embedded store read through reporting.WithWaiting does while it
// refuses writes.
type notingSource struct {
	*memSource
	note atomic.Value // string
}

func (n *notingSource) Verdicts(ctx context.Context, maxAge time.Duration) ([]reporting.Verdict, error) {
	reporting.NoteRead(ctx, n.note.Load().(string))
	return n.memSource.Verdicts(ctx, maxAge)
}

func (n *notingSource) History(ctx context.Context, q reporting.HistoryQuery) ([]reporting.Verdict, error) {
	reporting.NoteRead(ctx, n.note.Load().(string))
	return n.memSource.History(ctx, q)
}

// TestBannerCarriesReadNotes: what the reads of Verdicts note shows in the
// banner of the overview and the check page, after Options.Notice's line,
// once per page however many reads noted it; without notes the banner is
// Options.Notice's alone, or hidden.
func TestBannerCarriesReadNotes(t *testing.T) {
	src := &notingSource{memSource: &memSource{now: func() time.Time { return t0 }}}
	src.add(verdict("home", "eu-1", "eu", reporting.StateUnhealthy, "status", time.Second))
	const note = "store.embedded refuses writes since 2026-11-30T11:58:00Z: disk I/O error (778). The latest states shown include verdicts waiting in this process's memory for retry; history and uptime are incomplete from 2026-11-30T11:58:00Z."
	src.note.Store(note)
	var notice atomic.Value
	notice.Store("InfluxDB unreachable since 2026-11-30T11:57:00Z: showing this canary's own results only")
	srv := serve(t, Options{Verdicts: src, Notice: func() string { return notice.Load().(string) }})
	banner := func(path string) (shown bool, line string) {
		t.Helper()
		code, _, body := get(t, srv, path)
		if code != http.StatusOK {
			t.Fatalf("GET %s = %d\n%s", path, code, body)
		}
		n := byID(parseHTML(t, body), "notice")
		if n == nil {
			t.Fatalf("GET %s: no #notice element", path)
		}
		_, hidden := attr(n, "hidden")
		return !hidden, strings.TrimSpace(text(n))
	}
	for _, path := range []string{"/", "/check/home"} {
		want := notice.Load().(string) + ". " + note
		if shown, line := banner(path); !shown || line != want {
			t.Errorf("GET %s: banner shown=%v %q\nwant %q", path, shown, line, want)
		}
	}
	notice.Store("")
	for _, path := range []string{"/", "/check/home"} {
		if shown, line := banner(path); !shown || line != note {
			t.Errorf("GET %s without a notice: banner shown=%v %q, want the read's note", path, shown, line)
		}
	}
	src.note.Store("")
	for _, path := range []string{"/", "/check/home"} {
		if shown, line := banner(path); shown || line != "" {
			t.Errorf("GET %s without notes: banner shown=%v %q, want hidden", path, shown, line)
		}
	}
}
