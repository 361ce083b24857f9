#!/usr/bin/env bash
# Moves per second on one replica and on three, with the same client load
# (docs/BENCHMARKS.md "Cluster"):
#
#   scripts/with-postgres.sh scripts/bench-cluster.sh target/release/punct-referee [LOAD ARGS…]
#
# For each of 1 and 3 replicas: a fresh database on the server of
# PUNCT_REFEREE_TEST_DATABASE_URL, the replicas on free loopback ports
# (--storage postgres, their own node ids), then `punct-referee load` with
# its connections spread over them (--address, --also), then the replicas
# stopped. Extra arguments go to the load tool (default: --games 16,64
# --seconds 5 --warmup 1 --channels 6). The server CPU the load tool
# reports per call is that of the replicas and of the PostgreSQL server
# (its postmaster and backends: --cpu-of), so one replica and three are
# compared by the CPU a move costs the whole cluster, not only by moves/s
# on a machine whose cores they share.
set -euo pipefail
bin=${1:?usage: $0 BINARY [LOAD ARGS…]}
shift
load_args=("$@")
if [ "${#load_args[@]}" -eq 0 ]; then
    load_args=(--games 16,64 --seconds 5 --warmup 1 --channels 6)
fi
server=${PUNCT_REFEREE_TEST_DATABASE_URL:?run under scripts/with-postgres.sh}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/punct-bench-cluster.XXXXXX")
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$tmp"
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

with_db() { # URL with its database replaced (see postgres::with_database)
    case "$1" in
        *\?*) echo "$1&dbname=$2" ;;
        *) echo "$1?dbname=$2" ;;
    esac
}

for replicas in 1 3; do
    db="punct_bench_${replicas}_$$"
    psql "$server" -q -c "CREATE DATABASE $db" >/dev/null
    url=$(with_db "$server" "$db")
    addrs=()
    pids=()
    for i in $(seq 1 "$replicas"); do
        port=$(free_port)
        PUNCT_REFEREE_DATABASE_URL="$url" "$bin" serve --listen "127.0.0.1:$port" --no-http \
            --storage postgres --node-id "bench-$i" --log warn --log-format json \
            --max-sessions 1000000 2>"$tmp/replica-$replicas-$i.log" &
        pids+=($!)
        addrs+=("127.0.0.1:$port")
    done
    for a in "${addrs[@]}"; do
        for _ in $(seq 1 100); do
            "$bin" health --address "http://$a" >/dev/null 2>&1 && break
            sleep 0.1
        done
    done
    also=$(IFS=,; echo "${addrs[*]:1}")
    # The postmaster: the parent of the checkpointer.
    checkpointer=$(psql "$server" -Atc "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'")
    postmaster=$(awk '{ sub(/.*\) /, ""); print $2 }' "/proc/$checkpointer/stat")
    cpu_of=$(IFS=,; echo "${pids[*]},$postmaster")
    echo "== $replicas replica(s): ${addrs[*]} (CPU of processes $cpu_of)"
    if [ -n "$also" ]; then
        "$bin" load --address "http://${addrs[0]}" --also "$also" --cpu-of "$cpu_of" "${load_args[@]}"
    else
        "$bin" load --address "http://${addrs[0]}" --cpu-of "$cpu_of" "${load_args[@]}"
    fi
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    pids=()
done
