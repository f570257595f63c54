#!/bin/sh
# Canary load benchmarks (make bench):
#   - 10,000 check × target pairs at a 10 s interval against a local
#     endpoint: CPU, peak RSS, schedule lag p50/p99;
#   - 500 HTTP checks/s from the vigil canary vs prometheus-blackbox-exporter
#     (/probe?module=http_2xx at 500/s) against the same endpoint: CPU seconds.
# VIGIL_BENCH_SECONDS sets each measurement's length (default 60).
# The figures are the lines starting with BENCH.
set -eu
cd "$(dirname "$0")/../.."
VIGIL_BENCH=1 go test -count=1 -run '^TestBench(Scale10k|VsBlackbox)$' -v -timeout 20m ./canary/ "$@" |
	grep -E '^\s*(bench_test\.go:[0-9]+: )?BENCH|^(--- |FAIL|ok|PASS)' | sed 's/^ *bench_test\.go:[0-9]*: //'
