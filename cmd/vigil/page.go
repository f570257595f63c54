package main

import (
	"net/http"
	"sort"
	"strings"

	"github.com/vigil-synthetics/vigil/reporting/statuspage"
)

// statusPage builds the status page over the app's store, proxy and
// alerter; nil when there is no store to read.
func (a *app) statusPage() http.Handler {
	sp := a.cfg.StatusPage
	if a.hist == nil || !sp.IsEnabled() {
		return nil
	}
	o := statuspage.Options{
		Verdicts:   a.hist,
		AdminToken: a.cfg.Agent.AdminToken,
		Faults:     a.opts.faults,
		Title:      sp.Title,
		Refresh:    sp.Refresh,
		Logger:     a.log,
	}
	if sp.ServeArtifacts() {
		o.ArtifactsDir = a.cfg.Agent.DataDir
	}
	if a.prx != nil {
		o.Origins = a.pageOrigins
	}
	if a.alr != nil {
		o.Alerts = a.pageAlerts
		o.Failing = a.alr.DeliveryFailures
	}
	p, err := statuspage.New(o)
	if err != nil {
		a.log.Error("status page disabled", "error", err)
		return nil
	}
	return p.Handler()
}

func (a *app) pageOrigins() []statuspage.Origin {
	var out []statuspage.Origin
	for _, s := range a.prx.Origins() {
		o := statuspage.Origin{Pool: s.Pool, Name: s.Name, URL: s.URL, Available: s.Available, Ejections: s.Ejections}
		for _, f := range []struct {
			src, key string
			bad      bool
		}{
			{statuspage.FlagVerdict, "verdict", s.VerdictDown},
			{statuspage.FlagPassive, "passive", s.PassiveEjected},
			{statuspage.FlagDrained, "drained", s.Drained},
		} {
			o.Flags = append(o.Flags, statuspage.Flag{Source: f.src, Bad: f.bad, Reason: s.Why[f.key], Since: s.Since[f.key]})
		}
		out = append(out, o)
	}
	return out
}

func (a *app) pageAlerts() []statuspage.Alert {
	var out []statuspage.Alert
	for _, al := range a.alr.Active() {
		if al.Resolved() {
			continue
		}
		art := ""
		if al.ArtifactURL != "" {
			if i := strings.Index(al.ArtifactURL, "/artifacts/"); i >= 0 {
				art = al.ArtifactURL[i+len("/artifacts/"):]
			}
		}
		out = append(out, statuspage.Alert{Rule: al.Rule, Check: al.Check, Target: al.Target,
			Severity: al.Severity, Summary: al.Summary, Regions: al.Regions, Since: al.StartsAt, Artifact: art})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Since.Before(out[j].Since) })
	return out
}
