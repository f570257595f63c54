#!/bin/sh
# Throughput comparison: vigil vs nginx proxy_pass vs HAProxy vs Caddy, all in
# front of the same nginx origin serving a 1 KiB file, measured with
# `wrk -c32` keep-alive. Each proxy runs with its default worker/thread
# settings; "nginx" is proxy_pass with upstream keep-alive (as every
# production setup does), "nginx-dflt" plain `proxy_pass` with nginx's
# defaults (HTTP/1.0 to the origin, a new origin connection per request: the
# configuration DESIGN.md's first measurements used). "cpu µs/req" is
# the proxy's own CPU time (all its processes) per request, which stays
# comparable when other work shares the machine.
#
# "vigil" is the fast engine (proxy.engine: fast), "vigil-std" net/http's
# server (proxy.engine: stdlib). VIGIL_FLAGS passes extra vigil-bench flags
# (e.g. VIGIL_FLAGS=-gomaxprocs=1). BARE=1 adds "bare-epoll"
# (proxy/bench/bare-epoll): a featureless Go proxy on its own epoll loop, the
# ceiling for a Go engine on this machine. Ports 19080-19087 must be free.
#
# usage: [ROUNDS=3] [VERBOSE=1] proxy/bench/run.sh [duration of one measurement, default 10s]
set -eu
VIGIL_FLAGS=${VIGIL_FLAGS:-}
echo "building and starting (go build, nginx, haproxy, caddy)..." >&2
DUR=${1:-10s}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
W=$(mktemp -d)
trap 'for f in "$W"/*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null; done; rm -rf "$W"' EXIT INT TERM

head -c 1024 /dev/zero | tr '\0' 'x' > "$W/1k.txt"
mkdir -p "$W/tmp"
cat > "$W/nginx-origin.conf" <<NGINX
worker_processes auto;
pid $W/nginx-origin.pid;
error_log $W/nginx-origin.err;
events {}
http {
  access_log off;
  client_body_temp_path $W/tmp; proxy_temp_path $W/tmp; fastcgi_temp_path $W/tmp; uwsgi_temp_path $W/tmp; scgi_temp_path $W/tmp;
  keepalive_requests 1000000;
  server { listen 127.0.0.1:19080; root $W; location / { } }
}
NGINX
cat > "$W/nginx-proxy.conf" <<NGINX
worker_processes auto;
pid $W/nginx-proxy.pid;
error_log $W/nginx-proxy.err;
events {}
http {
  access_log off;
  client_body_temp_path $W/tmp; proxy_temp_path $W/tmp; fastcgi_temp_path $W/tmp; uwsgi_temp_path $W/tmp; scgi_temp_path $W/tmp;
  keepalive_requests 1000000;
  upstream origin { server 127.0.0.1:19080; keepalive 64; }
  server { listen 127.0.0.1:19081;
    location / { proxy_pass http://origin; proxy_http_version 1.1; proxy_set_header Connection ""; } }
}
NGINX
cat > "$W/nginx-dflt.conf" <<NGINX
worker_processes auto;
pid $W/nginx-dflt.pid;
error_log $W/nginx-dflt.err;
events {}
http {
  access_log off;
  client_body_temp_path $W/tmp; proxy_temp_path $W/tmp; fastcgi_temp_path $W/tmp; uwsgi_temp_path $W/tmp; scgi_temp_path $W/tmp;
  keepalive_requests 1000000;
  server { listen 127.0.0.1:19087; location / { proxy_pass http://127.0.0.1:19080; } }
}
NGINX
cat > "$W/haproxy.cfg" <<HAP
global
  pidfile $W/haproxy.pid
defaults
  mode http
  timeout connect 2s
  timeout client 30s
  timeout server 30s
frontend fe
  bind 127.0.0.1:19082
  default_backend be
backend be
  http-reuse always
  server o1 127.0.0.1:19080
HAP
cat > "$W/Caddyfile" <<CADDY
{
  admin off
  auto_https off
  log {
    output discard
  }
}
http://127.0.0.1:19083 {
  reverse_proxy 127.0.0.1:19080
}
CADDY

nginx -c "$W/nginx-origin.conf" -p "$W" </dev/null >/dev/null 2>&1
nginx -c "$W/nginx-proxy.conf" -p "$W" </dev/null >/dev/null 2>&1
nginx -c "$W/nginx-dflt.conf" -p "$W" </dev/null >/dev/null 2>&1
haproxy -D -f "$W/haproxy.cfg" </dev/null >/dev/null 2>&1
caddy run --config "$W/Caddyfile" --adapter caddyfile >"$W/caddy.log" 2>&1 </dev/null &
echo $! > "$W/caddy.pid"
(cd "$ROOT" && go build -o "$W/vigil-bench" ./proxy/bench/vigil-bench)
"$W/vigil-bench" -listen 127.0.0.1:19084 -origin http://127.0.0.1:19080 $VIGIL_FLAGS >"$W/vigil.log" 2>&1 </dev/null &
echo $! > "$W/vigil.pid"
"$W/vigil-bench" -listen 127.0.0.1:19085 -origin http://127.0.0.1:19080 -engine stdlib $VIGIL_FLAGS >"$W/vigil-std.log" 2>&1 </dev/null &
echo $! > "$W/vigil-std.pid"
if [ -n "${BARE:-}" ]; then
  (cd "$ROOT" && go build -o "$W/bare-epoll" ./proxy/bench/bare-epoll)
  "$W/bare-epoll" -port 19086 -oport 19080 >"$W/bare-epoll.log" 2>&1 </dev/null &
  echo $! > "$W/bare-epoll.pid"
fi
sleep 2

# cpu_ticks PIDFILE: CPU ticks of the process and its children, "user system".
cpu_ticks() {
  m=$(cat "$1")
  u=0; s=0
  for p in $m $(ps -o pid= --ppid "$m"); do
    [ -r "/proc/$p/stat" ] || continue
    set -- $(awk '{print $14, $15}' "/proc/$p/stat")
    u=$((u + $1)); s=$((s + $2))
  done
  echo "$u $s"
}
HZ=$(getconf CLK_TCK)

# lat_us VALUE: wrk's latency ("612.00us", "1.20ms", "2.00s") in µs.
lat_us() {
  echo "$1" | awk '/us$/ {sub(/us$/, ""); print $0; next} /ms$/ {sub(/ms$/, ""); print $0 * 1000; next} /s$/ {sub(/s$/, ""); print $0 * 1000000}'
}

# ROUNDS interleaved rounds (default 3): every proxy is measured once per
# round, so load from other processes hits them all alike; the table gives
# each column's median over the rounds.
ROUNDS=${ROUNDS:-3}
SPECS="origin:19080:nginx-origin vigil:19084:vigil vigil-std:19085:vigil-std nginx:19081:nginx-proxy nginx-dflt:19087:nginx-dflt haproxy:19082:haproxy caddy:19083:caddy"
[ -n "${BARE:-}" ] && SPECS="$SPECS bare-epoll:19086:bare-epoll"
: > "$W/results"
r=0
while [ "$r" -lt "$ROUNDS" ]; do
  r=$((r + 1))
  for spec in $SPECS; do
    name=${spec%%:*}; rest=${spec#*:}; port=${rest%%:*}; pidf="$W/${rest#*:}.pid"
    wrk -t2 -c32 -d1s "http://127.0.0.1:$port/1k.txt" >/dev/null 2>&1 || true   # warm-up
    set -- $(cpu_ticks "$pidf"); u0=$1; s0=$2
    out=$(wrk -t2 -c32 -d"$DUR" --latency "http://127.0.0.1:$port/1k.txt")
    set -- $(cpu_ticks "$pidf"); u1=$1; s1=$2
    rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
    n=$(echo "$out" | awk '/requests in/ {print $1}')
    p50=$(lat_us "$(echo "$out" | awk '$1=="50%" {print $2}')")
    p99=$(lat_us "$(echo "$out" | awk '$1=="99%" {print $2}')")
    usr=$(awk -v t=$((u1 - u0)) -v hz="$HZ" -v n="$n" 'BEGIN { printf "%.1f", t / hz * 1e6 / n }')
    sys=$(awk -v t=$((s1 - s0)) -v hz="$HZ" -v n="$n" 'BEGIN { printf "%.1f", t / hz * 1e6 / n }')
    cpu=$(awk -v a="$usr" -v b="$sys" 'BEGIN { printf "%.1f", a + b }')
    echo "$name $rps $p50 $p99 $cpu $usr $sys" >> "$W/results"
    [ -n "${VERBOSE:-}" ] && echo "round $r: $name $rps req/s p50 ${p50}us p99 ${p99}us cpu ${cpu}us/req (user $usr, system $sys)" >&2
  done
done

printf '%-10s %10s %9s %9s %14s %8s %8s   (median of %s rounds of %s)\n' proxy req/s p50 p99 "cpu µs/req" user system "$ROUNDS" "$DUR"
for spec in $SPECS; do
  name=${spec%%:*}
  awk -v name="$name" '
    function median(a, n,   i, j, t) {
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    $1 == name { n++; rps[n] = $2; p50[n] = $3; p99[n] = $4; cpu[n] = $5; usr[n] = $6; sys[n] = $7 }
    END { printf "%-10s %10.0f %7.0fus %7.0fus %14.1f %8.1f %8.1f\n", name, median(rps, n), median(p50, n), median(p99, n), median(cpu, n), median(usr, n), median(sys, n) }
  ' "$W/results"
done

# The issue's target, from the medians above: vigil's throughput at least
# nginx's (upstream keep-alive) and twice Caddy's, its p99 at most HAProxy's.
awk '
  function median(a, n,   i, j, t) {
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  { k = $1; n[k]++; rps[k, n[k]] = $2; p99[k, n[k]] = $4 }
  END {
    for (k in n) {
      delete a; for (i = 1; i <= n[k]; i++) a[i] = rps[k, i]; R[k] = median(a, n[k])
      delete a; for (i = 1; i <= n[k]; i++) a[i] = p99[k, i]; P[k] = median(a, n[k])
    }
    if (!R["nginx"] || !R["caddy"] || !P["haproxy"]) exit
    x = R["vigil"] / R["nginx"]; y = R["vigil"] / R["caddy"]; z = P["vigil"] / P["haproxy"]
    printf "target: throughput vs nginx %.2fx (want >= 1) %s; vs Caddy %.2fx (want >= 2) %s; p99 vs HAProxy %.2fx (want <= 1) %s\n",
      x, (x >= 1 ? "met" : "NOT met"), y, (y >= 2 ? "met" : "NOT met"), z, (z <= 1 ? "met" : "NOT met")
  }
' "$W/results"
