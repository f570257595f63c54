package influx_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/influx"
	"github.com/vigil-synthetics/vigil/reporting/influx/influxtest"
	"github.com/vigil-synthetics/vigil/reporting/storetest"
)

var (
	srvOnce sync.Once
	srv     *influxtest.Server
)

// server starts one influxd per test binary run for the tests that do not
// stop it; each test gets its own database.
func sharedServer(t *testing.T) *influxtest.Server {
	t.Helper()
	return influxtest.Start(t)
}

func openStore(t *testing.T, s *influxtest.Server, bucket, dir string, o influx.Options) *influx.Store {
	t.Helper()
	st, err := influx.Open(influx.Config{URL: s.URL, Bucket: bucket, FlushInterval: 50 * time.Millisecond}, dir, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestContract(t *testing.T) {
	s := sharedServer(t)
	storetest.RunContract(t, func(t *testing.T) storetest.Store {
		return openStore(t, s, s.NewDatabase(t), t.TempDir(), influx.Options{})
	})
}

var _ = fmt.Sprint
var _ = context.Background
var _ reporting.Sink
