package reporting

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/vigil-synthetics/vigil/reporting/units"
)

// maxNoteErr bounds the store's error in a WithWaiting note, in runes.
const maxNoteErr = 200

// WithWaiting returns store's reads with what the Fanout f holds for it
// while it refuses writes (the batches kept for retry of the sink named
// sink, see Fanout): for the readers in the same process (the status page,
// the API, the alerter, an in-process proxy), which would otherwise see the
// store's latest verdicts grow old and turn unknown while this process
// holds current ones. name names the store in the note ("store.embedded").
//
//   - Verdicts: the latest verdict per series (Verdict.Key) of the store and
//     of the kept batches, the newer one winning (the store's on a tie), within
//     maxAge. A kept verdict that replaces a stored one keeps its Duplicates.
//   - Signals (when store is a SignalSource, and only then is the result
//     one): the store's and the kept ones with At after since, oldest first.
//   - History and Rollups: the store's alone; the runs kept are missing
//     from them until the store takes them.
//
// While the sink refuses writes every read also adds a note (NoteRead) for
// the reader to show, on one line: "store.embedded refuses writes since T:
// ERR. The latest states shown include verdicts waiting in this process's
// memory for retry; history and uptime are incomplete from T." Reads of
// store that fail return its error as they are.
func WithWaiting(store HistorySource, f *Fanout, sink, name string) HistorySource {
	w := &waiting{HistorySource: store, f: f, sink: sink, name: name}
	if s, ok := store.(SignalSource); ok {
		return &waitingSignals{waiting: w, sigs: s}
	}
	return w
}

type waiting struct {
	HistorySource
	f          *Fanout
	sink, name string
}

type waitingSignals struct {
	*waiting
	sigs SignalSource
}

var (
	_ HistorySource = (*waiting)(nil)
	_ HistorySource = (*waitingSignals)(nil)
	_ SignalSource  = (*waitingSignals)(nil)
)

// note adds the read's note while the sink refuses writes.
func (w *waiting) note(ctx context.Context, since time.Time, err error) {
	if err == nil {
		return
	}
	msg := []rune(units.SingleLine(err.Error()))
	if len(msg) > maxNoteErr {
		msg = append(msg[:maxNoteErr-3], '.', '.', '.')
	}
	at := since.UTC().Format(time.RFC3339)
	NoteRead(ctx, fmt.Sprintf("%s refuses writes since %s: %s. The latest states shown include verdicts waiting in this process's memory for retry; history and uptime are incomplete from %s.",
		w.name, at, string(msg), at))
}

// Verdicts merges the kept verdicts into the store's latest ones.
func (w *waiting) Verdicts(ctx context.Context, maxAge time.Duration) ([]Verdict, error) {
	// What is kept first, the store next: a batch the store takes in
	// between is then read in one or both, never in neither.
	items, since, ferr := w.f.kept(w.sink)
	vs, err := w.HistorySource.Verdicts(ctx, maxAge)
	if err != nil {
		return vs, err
	}
	w.note(ctx, since, ferr)
	var cutoff time.Time
	if maxAge > 0 {
		cutoff = time.Now().Add(-maxAge)
	}
	var idx map[string]int
	added := false
	for _, it := range items {
		for _, v := range it.verdicts {
			if !cutoff.IsZero() && v.At.Before(cutoff) {
				continue
			}
			if idx == nil {
				idx = make(map[string]int, len(vs))
				for i, x := range vs {
					idx[x.Key()] = i
				}
			}
			k := v.Key()
			i, ok := idx[k]
			if !ok {
				idx[k] = len(vs)
				vs = append(vs, v)
				added = true
				continue
			}
			if v.At.After(vs[i].At) {
				v.Duplicates = vs[i].Duplicates
				vs[i] = v
			}
		}
	}
	if added { // the store's order: check, target, region, vantage
		slices.SortFunc(vs, func(a, b Verdict) int {
			return cmp.Or(cmp.Compare(a.Check, b.Check), cmp.Compare(a.Target, b.Target),
				cmp.Compare(a.Region, b.Region), cmp.Compare(a.Vantage, b.Vantage))
		})
	}
	return vs, nil
}

// History is the store's (the kept runs are missing from it).
func (w *waiting) History(ctx context.Context, q HistoryQuery) ([]Verdict, error) {
	_, since, ferr := w.f.kept(w.sink)
	vs, err := w.HistorySource.History(ctx, q)
	if err == nil {
		w.note(ctx, since, ferr)
	}
	return vs, err
}

// Rollups are the store's (the kept runs are missing from them).
func (w *waiting) Rollups(ctx context.Context, q HistoryQuery) ([]Rollup, error) {
	_, since, ferr := w.f.kept(w.sink)
	rs, err := w.HistorySource.Rollups(ctx, q)
	if err == nil {
		w.note(ctx, since, ferr)
	}
	return rs, err
}

// RollupCounts are the store's (the kept runs are missing from them).
func (w *waiting) RollupCounts(ctx context.Context, q HistoryQuery, step time.Duration) ([]RollupCount, error) {
	_, since, ferr := w.f.kept(w.sink)
	cs, err := CountRollups(ctx, w.HistorySource, q, step)
	if err == nil {
		w.note(ctx, since, ferr)
	}
	return cs, err
}

// CountsRollups is the store's.
func (w *waiting) CountsRollups() bool { return CountsRollups(w.HistorySource) }

// Signals adds the kept signals with At after since to the store's.
func (w *waitingSignals) Signals(ctx context.Context, since time.Time) ([]Signal, error) {
	items, fsince, ferr := w.f.kept(w.sink)
	out, err := w.sigs.Signals(ctx, since)
	if err != nil {
		return out, err
	}
	w.note(ctx, fsince, ferr)
	type key struct {
		pool, origin, region, vantage string
		at                            int64
	}
	var seen map[key]bool
	added := false
	for _, it := range items {
		for _, g := range it.signals {
			if !g.At.After(since) {
				continue
			}
			if seen == nil {
				seen = make(map[key]bool, len(out))
				for _, x := range out {
					seen[key{x.Pool, x.Origin, x.Region, x.Vantage, x.At.UnixNano()}] = true
				}
			}
			k := key{g.Pool, g.Origin, g.Region, g.Vantage, g.At.UnixNano()}
			if seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, g)
			added = true
		}
	}
	if added {
		slices.SortStableFunc(out, func(a, b Signal) int { return a.At.Compare(b.At) })
	}
	return out, nil
}
