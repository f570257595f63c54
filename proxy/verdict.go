package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// pollVerdicts reads the Source every VerdictPoll and applies the verdicts to
// every pool. When a read fails the last verdicts read are applied again, so
// they age out by max_age and Expires instead of sticking.
func (p *Proxy) pollVerdicts(ctx context.Context) {
	var last []reporting.Verdict
	failing := false
	for {
		st := p.state.Load()
		var maxAge time.Duration
		for _, pl := range st.pools {
			maxAge = max(maxAge, pl.cfg.Verdicts.MaxAge)
		}
		rctx, cancel := context.WithTimeout(ctx, max(st.cfg.VerdictPoll, time.Second))
		vs, err := p.src.Verdicts(rctx, maxAge)
		cancel()
		switch {
		case err == nil:
			last = vs
			if failing {
				p.log.Info("proxy: verdict source readable again", "source", sourceName(p.src))
			}
			failing = false
			p.vh.Record(nil)
		case ctx.Err() != nil:
			return
		default:
			if !failing {
				p.log.Warn("proxy: reading verdicts failed; keeping the last ones until they age out",
					"source", sourceName(p.src), "err", err)
				failing = true
			}
			p.vh.Record(err)
		}
		now := time.Now()
		for _, pl := range st.pools {
			pl.applyVerdicts(last, now)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(st.cfg.VerdictPoll):
		}
	}
}

// sourceName describes a verdict source for logs and /healthz: its String
// when it has one (HTTPSource gives its URL), else its type.
func sourceName(src reporting.Source) string {
	if s, ok := src.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%T", src)
}

// counts reports whether a verdict's check counts for this pool.
func (pl *pool) counts(v *reporting.Verdict) bool {
	if pl.cfg.checkSet == nil && pl.cfg.tierSet == nil {
		return true
	}
	return pl.cfg.checkSet[v.Check] || pl.cfg.tierSet[v.Tier]
}

// verdictDown decides one origin: down when at least quorum distinct regions
// hold a fresh unhealthy verdict for a counted check. Degraded, healthy,
// unknown, expired and older-than-max_age verdicts never take an origin out.
// It returns a reason listing the failing checks and regions.
func (pl *pool) verdictDown(o *origin, vs []reporting.Verdict, now time.Time) (bool, string) {
	if o.target == "" {
		return false, ""
	}
	regions := map[string][]string{}
	for i := range vs {
		v := &vs[i]
		if v.Target != o.target || !pl.counts(v) {
			continue
		}
		if v.Current(now) != reporting.StateUnhealthy || now.Sub(v.At) > pl.cfg.Verdicts.MaxAge {
			continue
		}
		why := v.Check
		if v.Cause != "" {
			why += " (" + v.Cause + ")"
		}
		regions[v.Region] = append(regions[v.Region], why)
	}
	if len(regions) < pl.cfg.Verdicts.Quorum {
		return false, ""
	}
	keys := make([]string, 0, len(regions))
	for r := range regions {
		keys = append(keys, r)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, r := range keys {
		if i > 0 {
			b.WriteString("; ")
		}
		name := r
		if name == "" {
			name = "(no region)"
		}
		fmt.Fprintf(&b, "%s: %s", name, strings.Join(regions[r], ", "))
	}
	return true, fmt.Sprintf("unhealthy in %d region(s), quorum %d: %s", len(regions), pl.cfg.Verdicts.Quorum, b.String())
}

// applyVerdicts sets or clears each origin's verdict flag; max_ejected can
// keep a verdict-down origin in service.
func (pl *pool) applyVerdicts(vs []reporting.Verdict, now time.Time) {
	for _, o := range pl.origins {
		down, why := pl.verdictDown(o, vs, now)
		switch {
		case down && !o.has(flagVerdict):
			pl.mu.Lock()
			ok := pl.mayEject(o)
			changed := ok && o.set(flagVerdict, why, now)
			pl.mu.Unlock()
			if !ok {
				o.mu.Lock()
				first := o.verdictSeen != why
				o.verdictSeen = why
				o.mu.Unlock()
				if first {
					pl.log.Warn("proxy: verdicts say origin is down but max_ejected keeps it in service",
						"pool", pl.name, "origin", o.name, "why", why, "max_ejected", pl.cfg.MaxEjected.String())
				}
				continue
			}
			if changed {
				o.m.ejections[ReasonVerdict].Inc()
				o.m.available.Set(0)
				pl.log.Warn("proxy: origin down by verdicts", "pool", pl.name, "origin", o.name, "why", why)
			}
		case down:
			o.mu.Lock()
			o.why[bit(flagVerdict)] = why
			o.mu.Unlock()
		case !down && o.has(flagVerdict):
			if o.clear(flagVerdict, now) {
				o.m.available.Set(b2f(o.Available()))
				pl.log.Info("proxy: verdicts cleared origin", "pool", pl.name, "origin", o.name)
			}
		default:
			o.mu.Lock()
			o.verdictSeen = ""
			o.mu.Unlock()
		}
	}
}

// HTTPSource reads a canary's verdicts over HTTP: GET base/api/v1/verdicts
// returning a JSON array of reporting.Verdict in its wire form. base is the
// canary agent's URL ("http://canary:9090"); a URL that already ends in
// /api/v1/verdicts is used as is. client nil means a client with a 10s
// timeout. Verdicts older than maxAge are dropped on this side.
func HTTPSource(base string, client *http.Client) reporting.Source {
	u := strings.TrimSuffix(base, "/")
	if !strings.HasSuffix(u, "/api/v1/verdicts") {
		u += "/api/v1/verdicts"
	}
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	name := u
	if pu, err := url.Parse(u); err == nil {
		name = pu.Redacted() // no password in logs, errors or /healthz
	}
	return &httpSource{url: u, name: name, client: client}
}

type httpSource struct {
	url    string
	name   string // url without its password
	client *http.Client
}

var _ reporting.Source = (*httpSource)(nil)

// String is the verdicts URL, password redacted.
func (s *httpSource) String() string { return s.name }

// maxVerdictsBody bounds the verdicts document read from a canary.
const maxVerdictsBody = 32 << 20

func (s *httpSource) Verdicts(ctx context.Context, maxAge time.Duration) ([]reporting.Verdict, error) {
	u := s.url
	if maxAge > 0 {
		u += "?max_age=" + url.QueryEscape(maxAge.String())
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("verdicts: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("verdicts: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("verdicts: %s: status %d", s.name, resp.StatusCode)
	}
	var vs []reporting.Verdict
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxVerdictsBody)).Decode(&vs); err != nil {
		return nil, fmt.Errorf("verdicts: %s: %w", s.name, err)
	}
	if maxAge > 0 {
		now := time.Now()
		kept := vs[:0]
		for _, v := range vs {
			if now.Sub(v.At) <= maxAge {
				kept = append(kept, v)
			}
		}
		vs = kept
	}
	return vs, nil
}
