package reporting

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// VerdictFilter selects the verdicts GET /api/v1/verdicts answers with:
// ?check=a,b&tier=deep&target=x,y (each a comma-separated list, or the
// parameter repeated). A verdict is kept when its check is listed or its
// tier is (either, as a proxy pool's verdicts.checks and verdicts.tiers
// count; neither given: every check) and its target is listed (none
// given: every target). The zero filter keeps every verdict.
type VerdictFilter struct {
	Checks, Tiers, Targets []string
}

// ParseVerdictFilter reads the filter of a verdicts request's query.
func ParseVerdictFilter(q url.Values) VerdictFilter {
	list := func(name string) []string {
		var out []string
		for _, v := range q[name] {
			for _, s := range strings.Split(v, ",") {
				if s = strings.TrimSpace(s); s != "" {
					out = append(out, s)
				}
			}
		}
		return out
	}
	return VerdictFilter{Checks: list("check"), Tiers: list("tier"), Targets: list("target")}
}

// Validate reports a tier f names that no check can have ("tier: "nope"
// is not a tier: shallow, deep or synthetic"), so a typo is a 400, not an
// empty answer.
func (f VerdictFilter) Validate() error {
	for _, t := range f.Tiers {
		switch t {
		case TierShallow, TierDeep, TierSynthetic:
		default:
			return fmt.Errorf("tier: %q is not a tier: %s, %s or %s", t, TierShallow, TierDeep, TierSynthetic)
		}
	}
	return nil
}

// Empty reports whether f keeps every verdict.
func (f VerdictFilter) Empty() bool {
	return len(f.Checks) == 0 && len(f.Tiers) == 0 && len(f.Targets) == 0
}

// Apply returns the verdicts of vs f keeps (vs itself, reordered in place).
func (f VerdictFilter) Apply(vs []Verdict) []Verdict {
	if f.Empty() {
		return vs
	}
	// Sets for a long list: a proxy asks for hundreds of targets.
	checks, tiers, targets := setOf(f.Checks), setOf(f.Tiers), setOf(f.Targets)
	return slices.DeleteFunc(vs, func(v Verdict) bool {
		if (len(checks) > 0 || len(tiers) > 0) && !checks[v.Check] && !tiers[v.Tier] {
			return true
		}
		return len(targets) > 0 && !targets[v.Target]
	})
}

func setOf(xs []string) map[string]bool {
	if len(xs) == 0 {
		return nil
	}
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// Encode adds f's parameters to q (comma-separated lists, sorted).
func (f VerdictFilter) Encode(q url.Values) {
	for _, p := range []struct {
		name string
		xs   []string
	}{{"check", f.Checks}, {"tier", f.Tiers}, {"target", f.Targets}} {
		if len(p.xs) > 0 {
			xs := slices.Clone(p.xs)
			slices.Sort(xs)
			q.Set(p.name, strings.Join(slices.Compact(xs), ","))
		}
	}
}

// acceptsGzip reports whether the request's Accept-Encoding takes gzip
// (with a q-value above 0).
func acceptsGzip(r *http.Request) bool {
	for _, h := range r.Header.Values("Accept-Encoding") {
		for _, part := range strings.Split(h, ",") {
			coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			if !strings.EqualFold(strings.TrimSpace(coding), "gzip") && strings.TrimSpace(coding) != "*" {
				continue
			}
			q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			if q == "q=0" || q == "q=0.0" || q == "q=0.00" || q == "q=0.000" {
				continue
			}
			return true
		}
	}
	return false
}

// WriteJSONGzip is WriteJSON, gzipped (Content-Encoding: gzip) when the
// request accepts it. Vary: Accept-Encoding is set either way.
func WriteJSONGzip(w http.ResponseWriter, r *http.Request, code int, v any) {
	w.Header().Add("Vary", "Accept-Encoding")
	if !acceptsGzip(r) {
		WriteJSON(w, code, v)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Encoding", "gzip")
	w.WriteHeader(code)
	zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
	enc := json.NewEncoder(zw)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	_ = zw.Close()
}
