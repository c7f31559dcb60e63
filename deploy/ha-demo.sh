#!/usr/bin/env bash
# make ha-demo: an etcd, three fairsched serve replicas on loopback, a load
# generator against them; the leader is killed with -9 mid-load and the
# takeover time and what the load generator saw are printed.
#
# Environment: BIN (bin/fairsched), LOADGEN (bin/loadgen), ETCDDEV
# (bin/etcddev, the embedded etcd; an etcd on PATH is used when ETCD=etcd),
# HA_TTL (lease TTL, 2s), HA_DURATION (load length, 20s), HA_KILL_AFTER
# (seconds into the load, 8), HA_DIR (working directory, bin/ha-demo).
set -euo pipefail

BIN=${BIN:-bin/fairsched}
LOADGEN=${LOADGEN:-bin/loadgen}
ETCDDEV=${ETCDDEV:-bin/etcddev}
ETCD=${ETCD:-}
HA_TTL=${HA_TTL:-2s}
HA_DURATION=${HA_DURATION:-20s}
HA_KILL_AFTER=${HA_KILL_AFTER:-8}
HA_DIR=${HA_DIR:-bin/ha-demo}

rm -rf "$HA_DIR"
mkdir -p "$HA_DIR"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap cleanup EXIT

mapfile -t ports < <("$ETCDDEV" --free-ports 4)
etcd_addr=${ports[3]}
if [[ "$ETCD" == etcd ]]; then
	etcd --data-dir "$HA_DIR/etcd" --listen-client-urls "http://$etcd_addr" --advertise-client-urls "http://$etcd_addr" \
		--listen-peer-urls "http://127.0.0.1:0" >"$HA_DIR/etcd.log" 2>&1 &
	pids+=($!)
else
	"$ETCDDEV" --data-dir "$HA_DIR/etcd" --listen "$etcd_addr" >"$HA_DIR/etcd.log" 2>&1 &
	pids+=($!)
fi
for _ in $(seq 100); do
	curl -sf "http://$etcd_addr/health" >/dev/null 2>&1 && break
	sleep 0.1
done
echo "etcd on $etcd_addr ($HA_DIR/etcd.log)"

declare -A rpid
urls=()
for i in 0 1 2; do
	addr=${ports[$i]}
	"$BIN" serve --listen "$addr" --etcd "$etcd_addr" --etcd-prefix /fairsched/demo \
		--advertise-url "http://$addr" --etcd-lease-ttl "$HA_TTL" >"$HA_DIR/replica-$i.log" 2>&1 &
	rpid[http://$addr]=$!
	pids+=($!)
	urls+=("http://$addr")
done
echo "replicas: ${urls[*]} (logs in $HA_DIR/replica-*.log), lease TTL $HA_TTL"

leader() {
	for u in "${urls[@]}"; do
		if [[ "$(curl -s --max-time 1 "$u/healthz" | jq -r .role 2>/dev/null)" == leader ]]; then
			echo "$u"
			return
		fi
	done
}
for _ in $(seq 200); do
	l=$(leader)
	[[ -n "$l" ]] && break
	sleep 0.05
done
if [[ -z "$l" ]]; then
	echo "no replica leads after 10 s: see $HA_DIR/replica-*.log and $HA_DIR/etcd.log" >&2
	exit 1
fi
echo "leader: $l"

others=$(IFS=,; echo "${urls[*]:1}")
"$LOADGEN" --target "${urls[0]}" --replicas "$others" --nodes 200 --pools 8 --operations 100 \
	--heartbeat-period 100ms --job-duration uniform:1:5 --duration "$HA_DURATION" --progress-every 2s \
	--max-error-rate 1 --report "$HA_DIR/load.json" >"$HA_DIR/load.log" 2>&1 &
lg=$!
pids+=($lg)
sleep "$HA_KILL_AFTER"

l=$(leader)
echo "kill -9 of the leader $l (pid ${rpid[$l]}) at $(date +%T.%N | cut -c1-12)"
t0=$(date +%s.%N)
kill -9 "${rpid[$l]}"
new=""
while [[ -z "$new" ]]; do
	for u in "${urls[@]}"; do
		[[ "$u" == "$l" ]] && continue
		if [[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$u/api/v1/pools")" == 200 ]]; then
			new=$u
			break
		fi
	done
done
t1=$(date +%s.%N)
printf 'takeover: %s serves %.2f s after the kill (lease TTL %s)\n' "$new" "$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')" "$HA_TTL"

wait "$lg" || true
echo "--- the load generator ($HA_DIR/load.log):"
tail -n 12 "$HA_DIR/load.log"
