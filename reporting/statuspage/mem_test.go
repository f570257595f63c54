package statuspage

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/vigil-synthetics/vigil/reporting"
)

// memSource is an in-memory reporting.HistorySource with the embedded
// store's ordering contract: History oldest first, with a Limit the newest
// Limit verdicts.
type memSource struct {
	mu      sync.Mutex
	now     func() time.Time
	hist    []reporting.Verdict
	rollups []reporting.Rollup
	err     error
}

var _ reporting.HistorySource = (*memSource)(nil)

func (m *memSource) add(vs ...reporting.Verdict) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hist = append(m.hist, vs...)
}

func (m *memSource) setErr(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.err = err
}

func (m *memSource) Verdicts(_ context.Context, maxAge time.Duration) ([]reporting.Verdict, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return nil, m.err
	}
	latest := map[string]reporting.Verdict{}
	for _, v := range m.hist {
		if old, ok := latest[v.Key()]; !ok || !v.At.Before(old.At) {
			latest[v.Key()] = v
		}
	}
	var out []reporting.Verdict
	for _, v := range latest {
		if maxAge > 0 && v.At.Before(m.now().Add(-maxAge)) {
			continue
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b reporting.Verdict) int { return strings.Compare(a.Key(), b.Key()) })
	return out, nil
}

func match(q reporting.HistoryQuery, check, target, region string) bool {
	return (q.Check == "" || q.Check == check) && (q.Target == "" || q.Target == target) && (q.Region == "" || q.Region == region)
}

func (m *memSource) History(_ context.Context, q reporting.HistoryQuery) ([]reporting.Verdict, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return nil, m.err
	}
	to := q.To
	if to.IsZero() {
		to = m.now()
	}
	var out []reporting.Verdict
	for _, v := range m.hist {
		if match(q, v.Check, v.Target, v.Region) && !v.At.Before(q.From) && !v.At.After(to) {
			out = append(out, v)
		}
	}
	slices.SortStableFunc(out, func(a, b reporting.Verdict) int { return a.At.Compare(b.At) })
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[len(out)-q.Limit:]
	}
	return out, nil
}

func (m *memSource) Rollups(_ context.Context, q reporting.HistoryQuery) ([]reporting.Rollup, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return nil, m.err
	}
	to := q.To
	if to.IsZero() {
		to = m.now()
	}
	var out []reporting.Rollup
	for _, r := range m.rollups {
		if match(q, r.Check, r.Target, r.Region) && r.Minute.Add(time.Minute).After(q.From) && !r.Minute.After(to) {
			out = append(out, r)
		}
	}
	return out, nil
}

var errDown = errors.New("store is down")

// --- HTML helpers -----------------------------------------------------------

func parseHTML(t *testing.T, body string) *html.Node {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse html: %v", err)
	}
	return doc
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

// findAll returns every element carrying attribute key (any value).
func findAll(n *html.Node, key string) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			if _, ok := attr(n, key); ok {
				out = append(out, n)
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

// findTag returns every element named tag.
func findTag(n *html.Node, tag string) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == tag {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

// inline elements do not separate words in text().
var inline = map[string]bool{"a": true, "b": true, "abbr": true, "time": true}

// text is n's text content with whitespace collapsed; block-level elements
// (and spans, which the page lays out as blocks) separate words.
func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		if n.Type == html.ElementNode && !inline[n.Data] {
			b.WriteString(" ")
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
		if n.Type == html.ElementNode && !inline[n.Data] {
			b.WriteString(" ")
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}
