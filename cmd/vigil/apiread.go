package main

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-synthetics/vigil/canary"
	"github.com/vigil-synthetics/vigil/reporting"
)

// newReader builds the canary whose handler serves GET
// /api/v1/checks/{name}/history in a process that reads a store but runs
// no canary (vigil alerter; vigil proxy over the embedded store): the
// links in alerts (status_url) and on the status page point at that route
// on whatever role answers them. It is never Run, has no pairs, and keeps
// its metrics on a registry of its own, so it neither runs checks nor adds
// canary series to the process's /metrics; the config only tells it which
// check names exist (an unknown one with no history is a 404).
func newReader(cfg *File, log *slog.Logger) (*canary.Canary, error) {
	c, err := canary.New(readerConfig(cfg), nil, canary.Options{Log: log, Registry: prometheus.NewRegistry()})
	if err != nil {
		return nil, fmt.Errorf("history API: %w", err)
	}
	return c, nil
}

// readerConfig is the config the reader canary holds: the file's, without
// the agent's region and vantage, which only a canary that publishes uses
// (a reload that renames them must not log the canary's rename warning).
func readerConfig(cfg *File) *canary.Config {
	c := cfg.Config
	c.Agent.Region, c.Agent.Vantage = "", ""
	return &c
}

// apiNotFound answers an /api/v1/ path that no route of this process
// serves: a JSON error naming the request, like every other /api/v1/
// error, not the status page's HTML 404.
func apiNotFound(w http.ResponseWriter, r *http.Request) {
	reporting.WriteJSON(w, http.StatusNotFound, map[string]string{
		"error": fmt.Sprintf("no API endpoint %s %s on this vigil (its roles serve other /api/v1/ routes)", r.Method, r.URL.Path)})
}

// jsonAPIErrors makes the plain-text 404 and 405 a ServeMux writes for an
// /api/v1/ path or method it has no route for into JSON errors; the
// handler's own answers (JSON already) pass unchanged.
func jsonAPIErrors(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&apiErrorWriter{ResponseWriter: w, r: r}, r)
	})
}

// apiErrorWriter rewrites a non-JSON 404 or 405 (see jsonAPIErrors) and
// drops the text body that follows it.
type apiErrorWriter struct {
	http.ResponseWriter
	r       *http.Request
	swallow bool
}

func (w *apiErrorWriter) WriteHeader(code int) {
	if (code == http.StatusNotFound || code == http.StatusMethodNotAllowed) &&
		!strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
		w.swallow = true
		w.Header().Del("X-Content-Type-Options")
		if code == http.StatusNotFound {
			apiNotFound(w.ResponseWriter, w.r)
			return
		}
		reporting.WriteJSON(w.ResponseWriter, code, map[string]string{
			"error": fmt.Sprintf("method %s not allowed for %s (allowed: %s)", w.r.Method, w.r.URL.Path, w.Header().Get("Allow"))})
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *apiErrorWriter) Write(b []byte) (int, error) {
	if w.swallow {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *apiErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
