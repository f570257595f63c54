#!/usr/bin/env bash
# Runs the multi-region example on this machine, without Docker, on 127.0.0.1 only: InfluxDB 1.8
# with Flux (database "vigil"), the three demo origins, canaries in eu-west, us-east and ap-south,
# the proxy and the alerter (with Alertmanager when it is installed), all from the example configs.
#
#   examples/multi-region/run-local.sh           # or: make multi-region. Ctrl-C stops everything.
#   examples/multi-region/run-local.sh --check   # start, break origin-b, wait until the proxy takes
#                                                # it out by a quorum of regions, heal it; exit 0 or 1
#
# Needs bin/vigil (make build; built here when missing and go is on PATH; MR_VIGIL=PATH runs
# another binary), curl, and influxd 1.8: $VIGIL_INFLUXD, .cache/bin/influxd (make setup) or
# influxd on PATH.
#
# The example files are not changed: local copies go to a temporary directory, with the compose
# host names (origin-a, influxdb, alertmanager, canary-eu-west) replaced by 127.0.0.1 addresses.
# Each process gets its own agent.listen and agent.data_dir (--listen, VIGIL_AGENT_DATA_DIR), the
# proxy its proxy.listen (VIGIL_PROXY_LISTEN). --check keeps the example's intervals (asset every
# 15 s, healthz every 5 s) and takes about a minute.
#
# Ports, each overridable from the environment (a port in use is an error that names its variable):
#   MR_INFLUX_PORT=8086 MR_INFLUX_RPC_PORT=8088   InfluxDB HTTP API, its backup/RPC port
#   MR_ORIGIN_PORT=9201                           origin-a; origin-b and origin-c on the next two
#   MR_FAULT_PORT=9204                            the origins' fault switches (vigil demo fault --addr)
#   MR_EU_WEST_PORT=9470 MR_US_EAST_PORT=9473 MR_AP_SOUTH_PORT=9474   canaries: status page, API
#   MR_PROXY_PORT=8080 MR_PROXY_ADMIN_PORT=9471   proxy traffic, proxy API (/api/v1/origins)
#   MR_ALERTER_PORT=9472 MR_ALERTMANAGER_PORT=9093
# MR_CHECK_TIMEOUT (seconds, default 90) bounds each wait of --check.
set -eu

check=0
case "${1:-}" in
"") ;;
--check) check=1 ;;
-h | --help)
	sed -n '2,/^set -eu/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
	exit 0
	;;
*)
	echo "run-local.sh: unknown argument $1 (want --check or nothing; --help explains)" >&2
	exit 2
	;;
esac

root=$(cd "$(dirname "$0")/../.." && pwd)
example="$root/examples/multi-region"

: "${MR_INFLUX_PORT:=8086}" "${MR_INFLUX_RPC_PORT:=8088}"
: "${MR_ORIGIN_PORT:=9201}" "${MR_FAULT_PORT:=9204}"
: "${MR_EU_WEST_PORT:=9470}" "${MR_US_EAST_PORT:=9473}" "${MR_AP_SOUTH_PORT:=9474}"
: "${MR_PROXY_PORT:=8080}" "${MR_PROXY_ADMIN_PORT:=9471}" "${MR_ALERTER_PORT:=9472}"
: "${MR_ALERTMANAGER_PORT:=9093}" "${MR_CHECK_TIMEOUT:=90}"

say() { printf 'run-local.sh: %s\n' "$*"; }
die() {
	printf 'run-local.sh: FAIL: %s\n' "$*" >&2
	exit 1
}

# --- the binaries -------------------------------------------------------------------------------
vigil="${MR_VIGIL:-$root/bin/vigil}"
if [ -n "${MR_VIGIL:-}" ]; then
	[ -x "$vigil" ] || die "MR_VIGIL=$MR_VIGIL: not an executable file"
elif [ ! -x "$vigil" ]; then
	command -v go >/dev/null 2>&1 || die "$vigil not found and go is not on PATH: run make build"
	say "building bin/vigil"
	(cd "$root" && go build -trimpath -o bin/vigil ./cmd/vigil) || die "go build ./cmd/vigil failed"
fi

influxd=""
for c in "${VIGIL_INFLUXD:-}" "$root/.cache/bin/influxd" "$(command -v influxd 2>/dev/null || true)"; do
	if [ -n "$c" ] && [ -x "$c" ] && [ ! -d "$c" ]; then
		influxd=$c
		break
	fi
done
if [ -z "$influxd" ]; then
	die "influxd (InfluxDB 1.8) not found (looked in ${VIGIL_INFLUXD:+VIGIL_INFLUXD=$VIGIL_INFLUXD, }$root/.cache/bin/influxd and PATH). Get it with
  GOBIN=$root/.cache/bin go install github.com/influxdata/influxdb/cmd/influxd@v1.8.10
(a few minutes, once; or: make setup), or put InfluxDB 1.8's influxd on PATH."
fi
command -v curl >/dev/null 2>&1 || die "curl is needed (apt-get install curl)"

alertmanager=""
for c in "$(command -v alertmanager 2>/dev/null || true)" "$(command -v prometheus-alertmanager 2>/dev/null || true)" /usr/bin/prometheus-alertmanager; do
	if [ -n "$c" ] && [ -x "$c" ]; then
		alertmanager=$c
		break
	fi
done

# --- ports --------------------------------------------------------------------------------------
in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
ports="MR_INFLUX_PORT MR_INFLUX_RPC_PORT MR_ORIGIN_PORT MR_FAULT_PORT MR_EU_WEST_PORT MR_US_EAST_PORT
	MR_AP_SOUTH_PORT MR_PROXY_PORT MR_PROXY_ADMIN_PORT MR_ALERTER_PORT"
[ -z "$alertmanager" ] || ports="$ports MR_ALERTMANAGER_PORT"
for v in $ports; do
	eval "p=\$$v"
	case "$p" in '' | *[!0-9]* | 0*) die "$v=$p: want a port number" ;; esac
	[ "$p" -le 65533 ] || die "$v=$p: want a port up to 65535 (65533 for MR_ORIGIN_PORT)"
done
case "$MR_CHECK_TIMEOUT" in '' | *[!0-9]* | 0*) die "MR_CHECK_TIMEOUT=$MR_CHECK_TIMEOUT: want seconds" ;; esac
origin_b_port=$((MR_ORIGIN_PORT + 1))
origin_c_port=$((MR_ORIGIN_PORT + 2))
seen=" "
for v in $ports; do
	eval "p=\$$v"
	case "$seen" in *" $p "*) die "$v=$p: the same port as another MR_*_PORT" ;; esac
	seen="$seen$p "
	if [ "$v" = MR_ORIGIN_PORT ]; then
		for q in "$p" "$origin_b_port" "$origin_c_port"; do
			case "$seen" in *" $q "*) [ "$q" = "$p" ] || die "MR_ORIGIN_PORT=$p: origin-b/c take $origin_b_port and $origin_c_port, which another MR_*_PORT uses" ;; esac
			in_use "$q" && die "127.0.0.1:$q is in use (origins take MR_ORIGIN_PORT=$p and the next two): set MR_ORIGIN_PORT to a free range"
		done
		seen="$seen$origin_b_port $origin_c_port "
		continue
	fi
	in_use "$p" && die "127.0.0.1:$p is in use: set $v to a free port (is make demo or another run-local.sh running?)"
done

influx_url="http://127.0.0.1:$MR_INFLUX_PORT"
# The configs read INFLUX_URL, INFLUX_TOKEN (the local InfluxDB has no auth) and OPS_WEBHOOK_URL;
# VIGIL_* set the per-process keys. Other VIGIL_* overrides of the caller
# (VIGIL_STORE_INFLUXDB_URL, …) would point this run elsewhere: only VIGIL_ADMIN_TOKEN is kept.
# The example's webhook receivers post to 127.0.0.1:9999, where nothing listens here: the local
# alerter leaves them out (its /healthz would report them failing for good) unless OPS_WEBHOOK_URL
# names a webhook of yours, which then gets the ops receiver's notifications.
export INFLUX_URL="$influx_url" INFLUX_TOKEN=""
ops_hook=${OPS_WEBHOOK_URL:-}
for v in $(env | sed -n 's/^\(VIGIL_[A-Za-z0-9_]*\)=.*/\1/p'); do
	[ "$v" = VIGIL_ADMIN_TOKEN ] || unset "$v"
done

# --- processes ----------------------------------------------------------------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/vigil-multi-region.XXXXXX")
pids=""
names=""
stopping=0

cleanup() {
	status=$?
	[ "$stopping" = 0 ] || return
	stopping=1
	trap '' INT TERM
	if [ -n "$pids" ]; then
		say "stopping everything it started"
		# shellcheck disable=SC2086
		kill -TERM $pids 2>/dev/null || true
		i=0
		while [ $i -lt 100 ]; do # 20 s, then SIGKILL
			left=""
			for p in $pids; do
				if kill -0 "$p" 2>/dev/null; then left="$left $p"; fi
			done
			[ -n "$left" ] || break
			sleep 0.2
			i=$((i + 1))
		done
		# shellcheck disable=SC2086
		[ -z "$left" ] || kill -KILL $left 2>/dev/null || true
		wait 2>/dev/null || true
	fi
	if [ "$status" != 0 ] && [ "$status" != 130 ] && [ "$status" != 143 ]; then
		for f in "$work"/logs/*.log; do
			[ -s "$f" ] || continue
			printf '\n--- last lines of %s\n' "${f##*/}" >&2
			tail -n 25 "$f" >&2
		done
	fi
	rm -rf "$work"
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir -p "$work/logs" "$work/conf"

# start NAME CMD...: runs CMD in the background, output in $work/logs/NAME.log.
start() {
	n=$1
	shift
	"$@" >"$work/logs/$n.log" 2>&1 </dev/null &
	pids="$pids $!"
	names="$names $n:$!"
}

# alive NAME: fails, with its log, when the process started as NAME has exited.
alive() {
	for e in $names; do
		if [ "${e%%:*}" = "$1" ]; then
			kill -0 "${e#*:}" 2>/dev/null && return 0
			die "$1 exited at start (log: ${1}.log below)"
		fi
	done
}

# wait_http NAME URL SECONDS: until URL answers at all (any HTTP status).
wait_http() {
	i=0
	while [ $i -lt $(($3 * 5)) ]; do
		alive "$1"
		code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$2" 2>/dev/null) || true
		case "$code" in [1-5]??) return 0 ;; esac
		sleep 0.2
		i=$((i + 1))
	done
	die "$1 did not answer $2 within $3 s"
}

mkdir -p "$work/influxdb"
cat >"$work/influxdb/influxdb.conf" <<EOF
reporting-disabled = true
bind-address = "127.0.0.1:$MR_INFLUX_RPC_PORT"
[meta]
  dir = "$work/influxdb/meta"
[data]
  dir = "$work/influxdb/data"
  wal-dir = "$work/influxdb/wal"
  query-log-enabled = false
[http]
  enabled = true
  bind-address = "127.0.0.1:$MR_INFLUX_PORT"
  flux-enabled = true
  log-enabled = false
[monitor]
  store-enabled = false
[continuous_queries]
  enabled = false
[subscriber]
  enabled = false
[logging]
  level = "warn"
EOF
say "starting InfluxDB ($influxd)"
start influxd env INFLUXDB_REPORTING_DISABLED=true "$influxd" run -config "$work/influxdb/influxdb.conf"
wait_http influxd "$influx_url/ping" 60
curl -sf --max-time 10 -XPOST "$influx_url/query" --data-urlencode 'q=CREATE DATABASE vigil' >/dev/null ||
	die "CREATE DATABASE vigil on $influx_url failed"

fault_addr="127.0.0.1:$MR_FAULT_PORT"
start origins "$vigil" demo origins --origin-port "$MR_ORIGIN_PORT" --listen "$fault_addr"
i=0
until grep -q '^fault switches on' "$work/logs/origins.log" 2>/dev/null; do
	alive origins
	[ $i -lt 75 ] || die "vigil demo origins printed no 'fault switches on' line within 15 s"
	sleep 0.2
	i=$((i + 1))
done

am_url=""
if [ -n "$alertmanager" ]; then
	mkdir -p "$work/alertmanager"
	printf 'route:\n  receiver: log\nreceivers:\n  - name: log\n' >"$work/alertmanager/alertmanager.yml"
	am_url="http://127.0.0.1:$MR_ALERTMANAGER_PORT"
	start alertmanager "$alertmanager" --config.file="$work/alertmanager/alertmanager.yml" \
		--storage.path="$work/alertmanager/data" --web.listen-address="127.0.0.1:$MR_ALERTMANAGER_PORT" \
		--cluster.listen-address= --log.level=warn
fi

# Local copies of the example configs: compose host names become 127.0.0.1 addresses. Without
# Alertmanager the alerter's "am" receiver is left out (its webhook receiver stays).
for f in canary-eu-west canary-us-east canary-ap-south proxy alerter; do
	sed -e "s#http://origin-a:9201#http://127.0.0.1:$MR_ORIGIN_PORT#" \
		-e "s#http://origin-b:9201#http://127.0.0.1:$origin_b_port#" \
		-e "s#http://origin-c:9201#http://127.0.0.1:$origin_c_port#" \
		-e "s#http://canary-eu-west:9470#http://127.0.0.1:$MR_EU_WEST_PORT#" \
		-e "s#http://influxdb:8086#$influx_url#" \
		"$example/$f.yaml" >"$work/conf/$f.yaml"
	if [ -n "$am_url" ]; then
		sed -i.bak "s#http://alertmanager:9093#$am_url#" "$work/conf/$f.yaml"
	else
		sed -i.bak '/alertmanager: {url: http:\/\/alertmanager:9093}/d' "$work/conf/$f.yaml"
	fi
	if [ "$f" = alerter ]; then
		if [ -n "$ops_hook" ]; then
			sed -i.bak '/127\.0\.0\.1:9999\/edge/d' "$work/conf/$f.yaml"
		else
			sed -i.bak '/127\.0\.0\.1:9999/d' "$work/conf/$f.yaml"
		fi
		# No receiver left (no Alertmanager, no OPS_WEBHOOK_URL): an empty list, not a key
		# without a value.
		grep -Eq '^    - \{name: ' "$work/conf/$f.yaml" || sed -i.bak 's/^  receivers:$/  receivers: []/' "$work/conf/$f.yaml"
	fi
	rm -f "$work/conf/$f.yaml.bak"
	grep -Eq 'origin-[abc]:9201|influxdb:8086|alertmanager:9093|canary-eu-west:9470' "$work/conf/$f.yaml" &&
		die "$work/conf/$f.yaml still names a compose host: examples/multi-region/$f.yaml changed?"
done

run_agent() { # NAME PORT COMMAND CONFIG [VAR=VALUE...]
	n=$1 port=$2 role=$3 conf=$4
	shift 4
	start "$n" env VIGIL_AGENT_DATA_DIR="$work/data/$n" "$@" \
		"$vigil" "$role" -c "$work/conf/$conf.yaml" --listen "127.0.0.1:$port"
}
say "starting the canaries, the proxy and the alerter"
run_agent eu-west "$MR_EU_WEST_PORT" canary canary-eu-west
run_agent us-east "$MR_US_EAST_PORT" canary canary-us-east
run_agent ap-south "$MR_AP_SOUTH_PORT" canary canary-ap-south
run_agent proxy "$MR_PROXY_ADMIN_PORT" proxy proxy VIGIL_PROXY_LISTEN="127.0.0.1:$MR_PROXY_PORT"
run_agent alerter "$MR_ALERTER_PORT" alerter alerter

wait_http eu-west "http://127.0.0.1:$MR_EU_WEST_PORT/healthz" 30
wait_http us-east "http://127.0.0.1:$MR_US_EAST_PORT/healthz" 30
wait_http ap-south "http://127.0.0.1:$MR_AP_SOUTH_PORT/healthz" 30
wait_http proxy "http://127.0.0.1:$MR_PROXY_ADMIN_PORT/healthz" 30
wait_http proxy "http://127.0.0.1:$MR_PROXY_PORT/" 30
wait_http alerter "http://127.0.0.1:$MR_ALERTER_PORT/healthz" 30
[ -z "$am_url" ] || wait_http alertmanager "$am_url/-/ready" 30

fault_cmd="$vigil demo fault --addr $fault_addr"
am_text=${am_url:-"not installed: the alerter runs without its am receiver"}
hook_text=${ops_hook:-"left out: set OPS_WEBHOOK_URL to a webhook of yours to get the ops receiver's notifications"}
case "$fault_cmd" in "$root"/*) fault_cmd=${fault_cmd#"$root"/} ;; esac
cat <<EOF

  status page (eu-west)  http://127.0.0.1:$MR_EU_WEST_PORT/
  status pages           us-east http://127.0.0.1:$MR_US_EAST_PORT/  ap-south http://127.0.0.1:$MR_AP_SOUTH_PORT/
  proxy                  http://127.0.0.1:$MR_PROXY_PORT/   origins: http://127.0.0.1:$MR_PROXY_ADMIN_PORT/api/v1/origins
  alerter                http://127.0.0.1:$MR_ALERTER_PORT/healthz
  InfluxDB               $influx_url (database vigil, Flux on)
  Alertmanager           $am_text
  webhooks               $hook_text
  origins                origin-a http://127.0.0.1:$MR_ORIGIN_PORT/  origin-b http://127.0.0.1:$origin_b_port/  origin-c http://127.0.0.1:$origin_c_port/
  break an origin        $fault_cmd origin-b corrupt
  heal it                $fault_cmd origin-b ok
  configs, logs          $work/conf, $work/logs (removed on exit)

EOF

if [ "$check" = 0 ]; then
	say "running; Ctrl-C stops everything"
	while :; do
		for e in $names; do
			kill -0 "${e#*:}" 2>/dev/null || die "${e%%:*} exited"
		done
		sleep 1
	done
fi

# --- --check ------------------------------------------------------------------------------------
api() { curl -sf --max-time 5 "$1" 2>/dev/null || true; }

# json_lines KEY: one line per JSON object of an array whose objects start with "KEY" (no jq).
json_lines() { tr -d '\n' | awk -v k="\"$1\":" '{ gsub(k, "\n" k); print }'; }

# origin_b: origin-b's entry in the proxy's /api/v1/origins, on one line.
origin_b() {
	api "http://127.0.0.1:$MR_PROXY_ADMIN_PORT/api/v1/origins" | json_lines pool | grep '"name": *"origin-b"' | tr -s ' ' || true
}

# until_ok SECONDS WHAT COMMAND...: runs COMMAND every second until it succeeds.
until_ok() {
	limit=$1 what=$2
	shift 2
	t0=$(date +%s)
	while :; do
		for e in $names; do
			kill -0 "${e#*:}" 2>/dev/null || die "${e%%:*} exited while waiting for $what"
		done
		if "$@"; then
			say "ok after $(($(date +%s) - t0)) s: $what"
			return 0
		fi
		[ $(($(date +%s) - t0)) -lt "$limit" ] || return 1
		sleep 1
	done
}

# all_regions: every canary's /api/v1/verdicts (read from InfluxDB) has the asset check healthy
# on origin-a, origin-b and origin-c from each of the three regions.
all_regions() {
	for port in "$MR_EU_WEST_PORT" "$MR_US_EAST_PORT" "$MR_AP_SOUTH_PORT"; do
		v=$(api "http://127.0.0.1:$port/api/v1/verdicts?max_age=1m" | json_lines check | grep '"check": *"asset"')
		for r in eu-west us-east ap-south; do
			for tg in origin-a origin-b origin-c; do
				printf '%s\n' "$v" | grep "\"target\": *\"$tg\"" | grep "\"region\": *\"$r\"" |
					grep -q '"state": *"healthy"' || return 1
			done
		done
	done
}
origin_b_out() { origin_b | grep -q '"verdict_down": *true'; }
origin_b_in() { origin_b | grep -q '"available": *true' && ! origin_b_out; }

until_ok "$MR_CHECK_TIMEOUT" "every canary reads asset verdicts (healthy) for origin-a/b/c from eu-west, us-east and ap-south in InfluxDB" all_regions ||
	die "not every canary's /api/v1/verdicts showed asset healthy on origin-a/b/c in all three regions within ${MR_CHECK_TIMEOUT} s"
until_ok "$MR_CHECK_TIMEOUT" "the proxy has origin-b in" origin_b_in ||
	die "the proxy did not report origin-b available within ${MR_CHECK_TIMEOUT} s: $(origin_b)"

say "breaking origin-b: $fault_cmd origin-b corrupt"
"$vigil" demo fault --addr "$fault_addr" origin-b corrupt || die "vigil demo fault origin-b corrupt failed"
until_ok "$MR_CHECK_TIMEOUT" "the proxy took origin-b out by verdict" origin_b_out ||
	die "the proxy did not take origin-b out by verdict within ${MR_CHECK_TIMEOUT} s: $(origin_b)"
why=$(origin_b | sed -n 's/.*"why": *{ *"verdict": *"\([^"]*\)".*/\1/p')
say "proxy: origin-b out: $why"
case "$why" in *"quorum 2"*) ;; *) die "origin-b is out, but its reason names no quorum of 2: $(origin_b)" ;; esac

# Users get the right asset through the proxy while origin-b serves a corrupt one.
want=$(sed -n 's/.*checksum: "sha256:\([0-9a-f]*\)".*/\1/p' "$example/proxy.yaml")
sha=""
if command -v sha256sum >/dev/null 2>&1; then sha="sha256sum"; elif command -v shasum >/dev/null 2>&1; then sha="shasum -a 256"; fi
if [ -n "$sha" ] && [ -n "$want" ]; then
	for i in 1 2 3 4 5 6 7 8 9; do
		got=$(curl -sf --max-time 5 "http://127.0.0.1:$MR_PROXY_PORT/asset.bin" | $sha | cut -d' ' -f1) || true
		[ "$got" = "$want" ] || die "request $i for /asset.bin through the proxy: sha256 ${got:-(no answer)}, want $want"
	done
	say "ok: 9 of 9 requests for /asset.bin through the proxy got the right checksum"
fi

say "healing origin-b: $fault_cmd origin-b ok"
"$vigil" demo fault --addr "$fault_addr" origin-b ok || die "vigil demo fault origin-b ok failed"
until_ok "$MR_CHECK_TIMEOUT" "the proxy has origin-b back" origin_b_in ||
	die "the proxy did not return origin-b within ${MR_CHECK_TIMEOUT} s: $(origin_b)"
say "PASS: three regions publish to InfluxDB; the proxy took the corrupt origin-b out by quorum and returned it once healed"
exit 0
