package statuspage

import (
	"fmt"
	"html"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/vigil-synthetics/vigil/reporting"
)

// badgeColors are the badge's value colours (shields.io's palette).
var badgeColors = map[reporting.State]string{
	reporting.StateHealthy:   "#4c1",
	reporting.StateDegraded:  "#dfb317",
	reporting.StateUnhealthy: "#e05d44",
	reporting.StateUnknown:   "#9f9f9f",
}

// serveBadge answers GET /badge/{check}: an SVG badge for READMEs and
// wikis, in the flat style of shields.io. Without a query it is the
// check's state, the worst over its targets and regions as the matrix
// shows them ("home | healthy"); ?uptime=24h, 7d or 30d makes it the
// check's uptime over that window, over all its targets ("home 30d |
// 99.95%", "no runs" without any); ?target=NAME narrows either to one
// target. A check with no verdict and no runs is 404, with a badge saying
// so; a bad window is 400. Cached for 60 s.
func (p *Page) serveBadge(w http.ResponseWriter, r *http.Request) {
	check, _ := strings.CutSuffix(r.PathValue("check"), ".svg")
	p.badge(w, r, check, check)
}

// badge writes check's badge (see serveBadge) with label as its name.
func (p *Page) badge(w http.ResponseWriter, r *http.Request, check, label string) {
	q := r.URL.Query()
	target, hasTarget := q.Get("target"), q.Has("target")
	ctx, _, cancel := p.ctx(r)
	defer cancel()
	now := p.o.Now()
	if window := q.Get("uptime"); q.Has("uptime") {
		valid := false
		for _, uw := range uptimeWindows {
			valid = valid || uw.Label == window
		}
		if !valid {
			names := make([]string, len(uptimeWindows))
			for i, uw := range uptimeWindows {
				names[i] = uw.Label
			}
			writeBadge(w, http.StatusBadRequest, "uptime", "want "+strings.Join(names, ", "), badgeColors[reporting.StateUnknown])
			return
		}
		rows, err := p.uptime(ctx, check, now)
		if err != nil {
			p.log.Warn("statuspage: read rollups", "check", check, "err", err)
			writeBadge(w, http.StatusServiceUnavailable, label, "cannot read the store", badgeColors[reporting.StateUnknown])
			return
		}
		wl := label + " " + window
		for _, row := range rows {
			// Without ?target, the row over all targets; a check of one
			// target has only that target's row.
			if hasTarget && row.Target != target || !hasTarget && row.Target != "" && len(rows) > 1 {
				continue
			}
			for _, c := range row.Cells {
				if c.Window != window {
					continue
				}
				if c.Total == 0 {
					writeBadge(w, http.StatusOK, wl, "no runs", badgeColors[reporting.StateUnknown])
					return
				}
				writeBadge(w, http.StatusOK, wl, formatUptime(c.Ratio), uptimeColor(c.Ratio))
				return
			}
		}
		writeBadge(w, http.StatusNotFound, wl, "no such check", badgeColors[reporting.StateUnknown])
		return
	}
	vs, err := p.o.Verdicts.Verdicts(ctx, max(p.o.Forget, 0))
	if err != nil {
		p.log.Warn("statuspage: read verdicts", "err", err)
		writeBadge(w, http.StatusServiceUnavailable, label, "cannot read the store", badgeColors[reporting.StateUnknown])
		return
	}
	worst, found := reporting.State(stateNone), false
	for _, v := range p.present(vs) {
		if v.Check != check || hasTarget && v.Target != target {
			continue
		}
		found = true
		if st := v.Current(now); severity(st) > severity(worst) {
			worst = st
		}
	}
	if !found {
		writeBadge(w, http.StatusNotFound, label, "no such check", badgeColors[reporting.StateUnknown])
		return
	}
	writeBadge(w, http.StatusOK, label, string(worst), badgeColors[worst])
}

// formatUptime is an uptime ratio as a badge shows it: "100%", "99.95%",
// never rounded up to 100% (0.99996 is "99.99%").
func formatUptime(ratio float64) string {
	if ratio >= 1 {
		return "100%"
	}
	pct := float64(int64(ratio*10000)) / 100 // truncated to 0.01 %
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", pct), "0"), ".") + "%"
}

// uptimeColor is green from 99.9 %, yellow-green from 99 %, yellow from
// 95 %, red below.
func uptimeColor(ratio float64) string {
	switch {
	case ratio >= 0.999:
		return "#4c1"
	case ratio >= 0.99:
		return "#a4a61d"
	case ratio >= 0.95:
		return "#dfb317"
	}
	return "#e05d44"
}

// writeBadge writes a flat two-part SVG badge, label | value, with the
// value on color; both texts are escaped.
func writeBadge(w http.ResponseWriter, code int, label, value, color string) {
	// About 6.5 px per character of 11 px Verdana, and 5 px each side.
	width := func(s string) int { return utf8.RuneCountInString(s)*13/2 + 10 }
	lw, vw := width(label), width(value)
	l, v := html.EscapeString(label), html.EscapeString(value)
	w.Header().Set("Content-Type", "image/svg+xml; charset=utf-8")
	w.Header().Set("Cache-Control", "max-age=60")
	w.WriteHeader(code)
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="20" role="img" aria-label="%s: %s">`+
		`<title>%s: %s</title>`+
		`<linearGradient id="s" x2="0" y2="100%%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/></linearGradient>`+
		`<clipPath id="r"><rect width="%d" height="20" rx="3" fill="#fff"/></clipPath>`+
		`<g clip-path="url(#r)"><rect width="%d" height="20" fill="#555"/><rect x="%d" width="%d" height="20" fill="%s"/><rect width="%d" height="20" fill="url(#s)"/></g>`+
		`<g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" font-size="11">`+
		`<text x="%d" y="14">%s</text><text x="%d" y="14">%s</text></g></svg>`+"\n",
		lw+vw, l, v, l, v, lw+vw, lw, lw, vw, color, lw+vw, lw/2, l, lw+vw/2, v)
}
