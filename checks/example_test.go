package checks_test

import (
	"context"
	"fmt"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// A deep asset check against an origin that serves a corrupt file: the
// cause names what broke and every assertion says what it saw.
func ExampleNewHTTP() {
	origin := checktest.NewOrigin(checktest.WithMode(checktest.ModeCorrupt))
	defer origin.Close()

	check, err := checks.NewHTTP(
		checks.HTTPSpec{Path: "/asset.bin", CacheBust: true},
		checks.Expect{
			Status:   checks.StatusList{"200"},
			Headers:  map[string]string{"cache-control": `~max-age=\d+`, "access-control-allow-origin": "present"},
			Checksum: "sha256:" + checktest.AssetSHA256(),
			TTFB:     2 * time.Second,
		},
		checks.Options{Check: "asset", Version: "1.0.0", Timeout: 5 * time.Second},
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	r := check.Run(context.Background(), checks.Target{Name: "origin-a", URL: origin.URL()})
	fmt.Println("ok:", r.OK, "cause:", r.Cause, "could not run:", r.CouldNotRun())
	for _, a := range r.Assertions {
		fmt.Println(a.Name, a.OK)
	}
	// Output:
	// ok: false cause: checksum could not run: false
	// status true
	// header Access-Control-Allow-Origin true
	// header Cache-Control true
	// checksum false
	// ttfb true
}
