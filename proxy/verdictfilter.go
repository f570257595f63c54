package proxy

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// filteredSource is a verdict source that can be asked for only the
// verdicts of some checks, tiers and targets (HTTPSource: the canary's
// GET /api/v1/verdicts?check=&tier=&target=).
type filteredSource interface {
	VerdictsFor(ctx context.Context, maxAge time.Duration, f reporting.VerdictFilter) ([]reporting.Verdict, error)
}

// maxFilterQuery bounds the filter's part of a verdicts URL, bytes: a
// longer list of targets is left out (every target is asked for), so that
// no server or proxy on the way refuses the request line (8 KiB is a
// common limit).
const maxFilterQuery = 4096

// poolsFilter is what the pools can count: the checks and tiers their
// verdicts.checks and verdicts.tiers list (every check when a pool lists
// none) and their origins' targets. A pool whose origins have no target
// reads no verdict; with no target at all the filter is empty (every
// verdict). The product of checks and targets is asked for: more than a
// pool counts when pools list different checks, which each pool's counts
// leaves out as before.
func poolsFilter(pools []*pool) reporting.VerdictFilter {
	var f reporting.VerdictFilter
	everyCheck := false
	for _, pl := range pools {
		var targets []string
		for _, o := range pl.origins {
			if o.target != "" {
				targets = append(targets, o.target)
			}
		}
		if len(targets) == 0 {
			continue
		}
		f.Targets = append(f.Targets, targets...)
		if len(pl.cfg.Verdicts.Checks) == 0 && len(pl.cfg.Verdicts.Tiers) == 0 {
			everyCheck = true
		}
		f.Checks = append(f.Checks, pl.cfg.Verdicts.Checks...)
		f.Tiers = append(f.Tiers, pl.cfg.Verdicts.Tiers...)
	}
	if len(f.Targets) == 0 {
		return reporting.VerdictFilter{}
	}
	if everyCheck {
		f.Checks, f.Tiers = nil, nil
	}
	q := url.Values{}
	f.Encode(q)
	if len(q.Encode()) > maxFilterQuery {
		f.Targets = nil
		q = url.Values{}
		f.Encode(q)
		if len(q.Encode()) > maxFilterQuery {
			return reporting.VerdictFilter{}
		}
	}
	return f
}

// VerdictsFor reads the canary's verdicts that f keeps, asking the canary
// for them (a canary that does not know the parameters answers them all,
// and they are filtered here) and for a gzipped answer.
func (s *httpSource) VerdictsFor(ctx context.Context, maxAge time.Duration, f reporting.VerdictFilter) ([]reporting.Verdict, error) {
	u := s.url
	q := url.Values{}
	if maxAge > 0 {
		q.Set("max_age", maxAge.String())
	}
	f.Encode(q)
	if len(q) > 0 {
		sep := "?"
		if strings.Contains(u, "?") {
			sep = "&"
		}
		u += sep + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("verdicts: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	// Asked for here, not left to the transport: one that disables
	// compression (or a RoundTripper of the caller's) would not ask.
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := s.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = s.name // its query may hold a token
		}
		return nil, fmt.Errorf("verdicts: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("verdicts: %s: status %d", s.name, resp.StatusCode)
	}
	if resp.ContentLength > maxVerdictsBody {
		return nil, fmt.Errorf("verdicts: %s: %w (Content-Length %d)", s.name, errVerdictsTooLarge, resp.ContentLength)
	}
	var body io.Reader = resp.Body
	if strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("verdicts: %s: gzip: %w", s.name, err)
		}
		defer zr.Close()
		body = zr
	}
	var vs []reporting.Verdict
	// The bound is on the decompressed document: it is what the decoder
	// holds.
	if err := json.NewDecoder(&capReader{r: body, n: maxVerdictsBody}).Decode(&vs); err != nil {
		return nil, fmt.Errorf("verdicts: %s: %w", s.name, err)
	}
	vs = f.Apply(vs)
	if maxAge > 0 {
		now := time.Now()
		kept := vs[:0]
		for _, v := range vs {
			if !v.At.Before(now.Add(-maxAge)) { // too far ahead: the proxy reports and drops them
				kept = append(kept, v)
			}
		}
		vs = kept
	}
	return vs, nil
}
