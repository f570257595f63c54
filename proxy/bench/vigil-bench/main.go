// Command vigil-bench runs the proxy alone in front of one origin, for the
// throughput comparison in proxy/bench/run.sh.
package main

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"syscall"

	"github.com/vigil-synthetics/vigil/proxy"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:19084", "listen address")
	origin := flag.String("origin", "http://127.0.0.1:19080", "origin URL")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile to this file")
	engine := flag.String("engine", proxy.EngineFast, "proxy.engine: fast or stdlib")
	procs := flag.Int("gomaxprocs", 0, "GOMAXPROCS (0: Go's default)")
	gogc := flag.Int("gogc", 0, "GC percent (0: Go's default)")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			slog.Error("cpuprofile", "err", err)
			os.Exit(1)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	if *gogc > 0 {
		debug.SetGCPercent(*gogc)
	}
	if *procs > 0 {
		runtime.GOMAXPROCS(*procs)
	}
	cfg := proxy.Config{Listen: *listen, Engine: *engine, Pools: []proxy.PoolConfig{{
		Name: "bench", Origins: []proxy.OriginConfig{{Target: "origin", URL: *origin}},
	}}}
	p, err := proxy.New(cfg, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		slog.Error("proxy", "err", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := p.Run(ctx); err != nil {
		slog.Error("proxy", "err", err)
	}
}
