#!/usr/bin/env bash
# Runs CMD with a throw-away PostgreSQL server: scripts/with-postgres.sh CMD…
#
# Installs Debian's `postgresql` with apt-get when initdb/pg_ctl are missing,
# makes a data directory in a temporary directory (owned by the `postgres`
# user: initdb refuses to run as root), starts the server on a free loopback
# port with its socket in that directory, creates the database `referee_test`,
# exports PUNCT_REFEREE_TEST_DATABASE_URL (postgres://postgres@127.0.0.1:PORT/
# referee_test; trust authentication, loopback only) and runs CMD. The server
# is stopped and the directory removed however CMD ends; the exit code is
# CMD's. Used by scripts/test.sh; the PostgreSQL tests read the variable
# (docs/STORAGE.md).
set -euo pipefail
# runuser and useradd live in sbin, which a non-login PATH may lack.
export PATH="$PATH:/usr/sbin:/sbin"

if [ "$#" -eq 0 ]; then
    echo "usage: $0 CMD [ARG…]" >&2
    exit 2
fi

find_bin() {
    local dir
    if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
        dirname "$(command -v initdb)"
        return 0
    fi
    # Debian keeps the server's binaries out of PATH, one directory per
    # major version: take the newest.
    for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then
            echo "$dir"
            return 0
        fi
    done
    return 1
}

if ! bin=$(find_bin); then
    echo "== with-postgres: installing Debian's postgresql (initdb/pg_ctl missing)" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq postgresql >&2
    # Debian's package starts a cluster of its own; this script does not use it.
    bin=$(find_bin) || {
        echo "with-postgres: no initdb/pg_ctl after installing postgresql" >&2
        exit 1
    }
fi

# The server's user: `postgres` when running as root (the package creates
# it), else whoever runs this.
if [ "$(id -u)" -eq 0 ]; then
    if ! id postgres >/dev/null 2>&1; then
        useradd --system --home-dir /var/lib/postgresql --shell /bin/false postgres
    fi
    as_pg() { runuser -u postgres -- "$@"; }
    pg_user=postgres
else
    as_pg() { "$@"; }
    pg_user=$(id -un)
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/punct-postgres.XXXXXX")
chmod 755 "$tmp"
data="$tmp/data"
sock="$tmp/socket"
mkdir -p "$data" "$sock"
if [ "$(id -u)" -eq 0 ]; then
    chown -R postgres: "$tmp"
fi

started=0
cleanup() {
    local code=$?
    if [ "$started" = 1 ]; then
        as_pg "$bin/pg_ctl" -D "$data" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$tmp"
    exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

as_pg "$bin/initdb" -D "$data" -U "$pg_user" --auth=trust --encoding=UTF8 --locale=C.UTF-8 \
    >"$tmp/initdb.log" 2>&1 || {
    cat "$tmp/initdb.log" >&2
    exit 1
}

# A free loopback port: the kernel's pick, released just before the server
# binds it (retried if another process takes it in between).
free_port() {
    if command -v python3 >/dev/null 2>&1; then
        python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
    else
        shuf -i 20000-60000 -n 1
    fi
}
for attempt in 1 2 3 4 5; do
    port=$(free_port)
    if as_pg "$bin/pg_ctl" -D "$data" -l "$tmp/server.log" -w -t 30 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $sock -c fsync=off -c max_connections=200" \
        start >/dev/null; then
        started=1
        break
    fi
    echo "with-postgres: start on port $port failed (attempt $attempt)" >&2
    tail -n 5 "$tmp/server.log" >&2 || true
done
if [ "$started" != 1 ]; then
    echo "with-postgres: the server did not start" >&2
    cat "$tmp/server.log" >&2 || true
    exit 1
fi

psql="$bin/psql"
[ -x "$psql" ] || psql=$(command -v psql)
as_pg "$psql" -h "$sock" -p "$port" -U "$pg_user" -d postgres -q -v ON_ERROR_STOP=1 \
    -c "CREATE DATABASE referee_test" >/dev/null

export PUNCT_REFEREE_TEST_DATABASE_URL="postgres://$pg_user@127.0.0.1:$port/referee_test"
# What tests/cluster.rs needs to restart the server mid-test (`pg_ctl
# restart` keeps the options it was started with).
export PUNCT_REFEREE_TEST_PG_CTL="$bin/pg_ctl"
export PUNCT_REFEREE_TEST_PG_DATA="$data"
export PUNCT_REFEREE_TEST_PG_USER="$pg_user"
export PUNCT_REFEREE_TEST_PG_OPTS="-c listen_addresses=127.0.0.1 -p $port -k $sock -c fsync=off -c max_connections=200"
export PUNCT_REFEREE_TEST_PG_LOG="$tmp/server.log"
echo "== with-postgres: PostgreSQL $("$bin/pg_ctl" --version | awk '{print $3}') on 127.0.0.1:$port ($PUNCT_REFEREE_TEST_DATABASE_URL)" >&2

"$@"
