package statuspage_test

import (
	"log"
	"net/http"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/statuspage"
)

// Example wires the status page next to other handlers on agent.listen.
// store is any reporting.HistorySource (the embedded store, InfluxDB); the
// function fields adapt the proxy, the alerter and the demo origins.
func Example() {
	var store reporting.HistorySource // e.g. the embedded SQLite store
	if store == nil {
		return // (the example only shows the wiring)
	}
	page, err := statuspage.New(statuspage.Options{
		Verdicts: store,
		Origins: func() []statuspage.Origin {
			return []statuspage.Origin{{Pool: "web", Name: "origin-a", URL: "http://127.0.0.1:9201", Available: true,
				Flags: []statuspage.Flag{{Source: statuspage.FlagVerdict, Reason: "3/3 regions healthy"}}}}
		},
		Alerts:       func() []statuspage.Alert { return nil },
		ArtifactsDir: "./vigil-data",
		AdminToken:   "from agent.admin_token",
		Refresh:      5 * time.Second,
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", http.NotFoundHandler()) // promhttp.Handler() in vigil
	mux.Handle("/", page.Handler())                // /, /check/{name}, /artifacts/…, /static/…, POST /fault
	log.Fatal(http.ListenAndServe("127.0.0.1:9470", mux))
}
