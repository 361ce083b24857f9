#!/usr/bin/env bash
# The container image and the single-node Kubernetes manifests, run for real
# with Debian's podman (rootful, through sudo unless root):
#
#  1. A Debian bookworm base image made locally (no image registry is needed
#     or reachable): `debootstrap --variant=minbase` from the apt mirror of
#     /etc/apt/sources.list*, trimmed, cached as
#     target/container/debian-bookworm-minbase.tar.gz (reruns skip this), and
#     `podman import`ed.
#  2. deploy/Dockerfile's `runtime-prebuilt` stage built on it around the
#     release binary (RUNTIME_IMAGE = that base; the build stage is skipped),
#     from a small context of its own: the binary and deploy/data.
#  3. The image run with a read-only root filesystem, its gRPC and HTTP ports
#     published on free loopback ports: health over gRPC from the host (the
#     server as a whole, and referee.v1.RefereeService), the image's own
#     HEALTHCHECK run by podman, /metrics; then `podman stop` (SIGTERM): exit
#     code 0, the drain logged, and no ANSI escape code in the log.
#  4. `podman kube play` of deploy/k8s (its kustomization's resources
#     concatenated, the image replaced by the one built here, the container
#     ports bound to free loopback host ports): the pod's container answers
#     what its liveness and readiness probes ask, from the host (podman 4.3
#     ignores gRPC and readiness probes: docs/CLUSTER.md "Deployment"), logs
#     JSON as its ConfigMap says, stops with exit code 0 after its drain; then
#     `podman kube down`.
#
# Podman's state lives in a temporary directory (storage, run and tmp
# directories, network configs: nothing shared with another podman user of
# the machine; only its small cache of blob digests stays, in
# /var/lib/containers/cache), networking is slirp4netns (no bridge, no iptables rules), the
# runtime is runc with no default ulimits (crun fails on setrlimit on some
# hosts); everything started is removed on exit, whatever happens. When
# podman cannot run a container here the script fails: it never skips.
# Installs with apt-get (sudo unless root) what is missing of podman runc
# debootstrap uidmap slirp4netns fuse-overlayfs catatonit.
#
# Usage: scripts/test-container.sh [path/to/punct-referee]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=${1:-$ROOT/target/release/punct-referee}
[ -x "$BIN" ] || { echo "no binary at $BIN (cargo build --release)"; exit 1; }
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
export PATH="$PATH:/usr/sbin:/sbin"

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
START=$SECONDS

missing=()
for tool in podman:podman runc:runc debootstrap:debootstrap newuidmap:uidmap \
    slirp4netns:slirp4netns fuse-overlayfs:fuse-overlayfs catatonit:catatonit; do
    command -v "${tool%%:*}" >/dev/null 2>&1 || [ -x "/usr/libexec/podman/${tool%%:*}" ] \
        || missing+=("${tool##*:}")
done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "-- apt-get install ${missing[*]}"
    $SUDO apt-get update -qq
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/punct-container.XXXXXX")
chmod 755 "$WORK"
pm() {
    $SUDO env CONTAINERS_CONF="$WORK/containers.conf" \
        CONTAINERS_STORAGE_CONF="$WORK/storage.conf" podman "$@"
}

BASE=localhost/punct-referee-base:bookworm-minbase
IMAGE=localhost/punct-referee:container-test
NAME=punct-referee-container-test
RENDERED=$WORK/k8s.yaml
played=""

cleanup() {
    local code=$?
    trap - EXIT INT TERM
    set +e
    if [ "$code" -ne 0 ] && [ -s "$WORK/storage.conf" ]; then
        echo "!! failed; the containers:" >&2
        pm ps -a --format '{{.Names}} {{.Status}}' >&2 2>/dev/null
        echo "!! podman's messages:" >&2
        tail -n 30 "$WORK/podman.log" >&2 2>/dev/null
    fi
    # Only ever podman's state in $WORK: without both files, `pm` would be
    # the machine's default podman, whose containers are none of ours.
    if [ -s "$WORK/containers.conf" ] && [ -s "$WORK/storage.conf" ]; then
        if [ -n "$played" ]; then
            (cd "$WORK" && pm kube down "$RENDERED") >/dev/null 2>&1
        fi
        pm rm -a -f -t 5 >/dev/null 2>&1
        pm pod rm -a -f >/dev/null 2>&1
        pm volume rm -a -f >/dev/null 2>&1
        pm system reset -f >/dev/null 2>&1
    fi
    # Nothing should be mounted any more; unmount what is, deepest first.
    findmnt -rn -o TARGET 2>/dev/null | grep "^$WORK/" | sort -r \
        | while read -r m; do $SUDO umount -l "$m" || true; done
    $SUDO rm -rf "$WORK"
    exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$WORK/net" "$WORK/tmp"
cat > "$WORK/containers.conf" <<EOF
[containers]
# The default ulimits need setrlimit calls some hosts refuse.
default_ulimits = []

[engine]
runtime = "runc"
tmp_dir = "$WORK/tmp"

[network]
network_config_dir = "$WORK/net"
EOF
# Overlay layers, natively where the temporary directory allows it; on an
# overlay file system (inside a container) through fuse-overlayfs, or, with no
# /dev/fuse, plain copies (vfs).
driver=overlay
mount_program=""
if [ "$(stat -f -c %T "$WORK")" = overlayfs ]; then
    if [ -c /dev/fuse ]; then
        mount_program='mount_program = "/usr/bin/fuse-overlayfs"'
    else
        driver=vfs
    fi
fi
cat > "$WORK/storage.conf" <<EOF
[storage]
driver = "$driver"
graphroot = "$WORK/storage"
runroot = "$WORK/run"

[storage.options.overlay]
$mount_program
EOF

fail() {
    echo "!! $*" >&2
    exit 1
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Health of SERVICE ("" = the server as a whole) at 127.0.0.1:PORT, asked
# from the host the way a kubelet's gRPC probe asks; waits up to 30 s.
wait_serving() {
    local port=$1 service=$2
    for _ in $(seq 60); do
        if "$BIN" health --address "http://127.0.0.1:$port" --service "$service" \
            --timeout-secs 1 >/dev/null 2>&1; then
            return 0
        fi
        sleep 0.5
    done
    "$BIN" health --address "http://127.0.0.1:$port" --service "$service" --timeout-secs 1 || true
    return 1
}

# Stops CONTAINER (or, with --pod, the pod it is in) with SIGTERM, then
# checks a graceful exit: code 0, the drain and the stop logged, no ANSI code.
check_graceful_stop() {
    local container=$1 pod=${2:-}
    local t0=$SECONDS
    if [ -n "$pod" ]; then
        pm pod stop -t 20 "$pod" >>"$WORK/podman.log" 2>&1
    else
        pm stop -t 20 "$container" >>"$WORK/podman.log" 2>&1
    fi
    local code
    code=$(pm inspect --format '{{.State.ExitCode}}' "$container")
    pm logs "$container" > "$WORK/$container.log" 2>&1
    [ "$code" = 0 ] || { cat "$WORK/$container.log"; fail "$container exited with $code after SIGTERM, not 0"; }
    grep -q "shutting down: draining" "$WORK/$container.log" \
        || { cat "$WORK/$container.log"; fail "$container logged no drain"; }
    grep -qE '(: |"message":")stopped' "$WORK/$container.log" \
        || { cat "$WORK/$container.log"; fail "$container did not log its stop"; }
    if grep -q $'\x1b' "$WORK/$container.log"; then
        grep -n $'\x1b' "$WORK/$container.log" | head -3 | cat -v
        fail "$container's log has ANSI escape codes"
    fi
    echo "   stopped gracefully in $((SECONDS - t0)) s: exit 0, drain logged, no ANSI codes"
}

echo "-- base image: Debian bookworm minbase"
CACHE=$ROOT/target/container
TARBALL=$CACHE/debian-bookworm-minbase.tar.gz
if [ ! -s "$TARBALL" ]; then
    mirror=${DEBIAN_MIRROR:-}
    if [ -z "$mirror" ]; then
        # The first Debian archive of apt's sources (one-line .list or
        # deb822 .sources), not the security one.
        mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null \
            | sed -n -E 's/^URIs:[[:space:]]*([^[:space:]]+).*/\1/p;
                s/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+)[[:space:]].*/\2/p' \
            | grep -E '/debian/?$' | head -n 1) || true
        mirror=${mirror:-http://deb.debian.org/debian}
    fi
    echo "   debootstrap --variant=minbase bookworm from $mirror (cached in target/container/)"
    mkdir -p "$CACHE"
    $SUDO debootstrap --variant=minbase bookworm "$WORK/rootfs" "$mirror" > "$WORK/debootstrap.log" 2>&1 \
        || { tail -n 20 "$WORK/debootstrap.log"; fail "debootstrap failed"; }
    # What a runtime image does not need: package caches and lists, docs.
    $SUDO rm -rf "$WORK"/rootfs/var/cache/apt/* "$WORK"/rootfs/var/lib/apt/lists/* \
        "$WORK"/rootfs/usr/share/doc "$WORK"/rootfs/usr/share/man \
        "$WORK"/rootfs/usr/share/info "$WORK"/rootfs/usr/share/locale
    $SUDO tar -C "$WORK/rootfs" --numeric-owner -czf "$TARBALL.partial" .
    $SUDO chown "$(id -u):$(id -g)" "$TARBALL.partial"
    mv "$TARBALL.partial" "$TARBALL"
    $SUDO rm -rf "$WORK/rootfs"
fi
pm import -q "$TARBALL" "$BASE" >>"$WORK/podman.log" 2>&1 || fail "podman import failed"
echo "   $(du -h "$TARBALL" | cut -f1) tarball imported as $BASE; storage driver $(pm info --format '{{.Store.GraphDriverName}}')"
# Podman must be able to run a container at all here: fail loudly if not.
if ! out=$(pm run --rm --network none "$BASE" cat /etc/debian_version 2>>"$WORK/podman.log"); then
    tail -n 20 "$WORK/podman.log" >&2
    pm info >&2 || true
    fail "podman cannot run a container on this machine"
fi
echo "   a container runs (Debian $out)"

echo "-- image: deploy/Dockerfile, target runtime-prebuilt, around $BIN"
mkdir -p "$WORK/context/target/release" "$WORK/context/deploy"
ln "$BIN" "$WORK/context/target/release/punct-referee" 2>/dev/null \
    || cp "$BIN" "$WORK/context/target/release/punct-referee"
cp -r "$ROOT/deploy/data" "$WORK/context/deploy/data"
# Docker format: the OCI image format has no HEALTHCHECK.
pm build -q --format docker --target runtime-prebuilt --build-arg "RUNTIME_IMAGE=$BASE" \
    -f "$ROOT/deploy/Dockerfile" -t "$IMAGE" "$WORK/context" >>"$WORK/podman.log" 2>&1 \
    || fail "podman build failed"
user=$(pm image inspect --format '{{.Config.User}}' "$IMAGE")
health=$(pm image inspect --format '{{json .Config.Healthcheck.Test}}' "$IMAGE")
[ "$user" = "65532:65532" ] || fail "the image runs as '$user', not 65532:65532"
case "$health" in
    *'"/usr/local/bin/punct-referee","health"'*) ;;
    *) fail "the image's HEALTHCHECK is $health" ;;
esac
echo "   $IMAGE: user $user, HEALTHCHECK $health"

echo "-- podman run: health from the host, then podman stop (SIGTERM)"
GRPC=$(free_port)
HTTP=$(free_port)
# Podman without systemd cannot arm the health check's timer and says so on
# stderr (podman.log); `podman healthcheck run` runs it on demand below.
pm run -d --name "$NAME" --read-only --network slirp4netns \
    -p "127.0.0.1:$GRPC:50051" -p "127.0.0.1:$HTTP:9464" "$IMAGE" >>"$WORK/podman.log" 2>&1 \
    || fail "podman run failed"
wait_serving "$GRPC" "" || { pm logs "$NAME"; fail "the container's server does not answer health on 127.0.0.1:$GRPC"; }
wait_serving "$GRPC" referee.v1.RefereeService || fail "referee.v1.RefereeService is not SERVING"
echo "   health over gRPC from the host (127.0.0.1:$GRPC): SERVING, referee.v1.RefereeService SERVING"
pm healthcheck run "$NAME" >>"$WORK/podman.log" 2>&1 || fail "the image's HEALTHCHECK fails inside the container"
[ "$(pm inspect --format '{{.State.Health.Status}}' "$NAME")" = healthy ] || fail "podman does not call the container healthy"
echo "   the image's HEALTHCHECK (punct-referee health inside the container): healthy"
python3 - "$HTTP" <<'EOF' || fail "no metrics on the published HTTP port"
import sys, urllib.request
body = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=5).read().decode()
assert 'referee_rpc_total{method="/grpc.health.v1.Health/Check",code="OK"}' in body, body[:500]
EOF
echo "   /metrics on 127.0.0.1:$HTTP counts the health checks"
check_graceful_stop "$NAME"
pm rm -f "$NAME" >>"$WORK/podman.log" 2>&1

echo "-- podman kube play deploy/k8s"
KGRPC=$(free_port)
KHTTP=$(free_port)
# The kustomization's resources, in its order, as one multi-document file;
# podman 4.3 plays the ConfigMap, the PersistentVolumeClaim and the
# Deployment and ignores the Service and the PodDisruptionBudget.
resources=$(sed -n -E '/^resources:/,/^[^ -]/ s/^[[:space:]]*-[[:space:]]+([^[:space:]#]+).*/\1/p' \
    "$ROOT/deploy/k8s/kustomization.yaml")
[ -n "$resources" ] || fail "no resources in deploy/k8s/kustomization.yaml"
: > "$RENDERED"
for resource in $resources; do
    echo "---" >> "$RENDERED"
    # The image built here; each container port bound to a free loopback
    # port (podman would publish it on the same port of every interface).
    sed -E \
        -e "s#^([[:space:]]*image:[[:space:]]*)punct-referee:[^[:space:]]+#\1$IMAGE#" \
        -e "s#^([[:space:]]*)containerPort: 50051\$#\1containerPort: 50051\n\1hostIP: 127.0.0.1\n\1hostPort: $KGRPC#" \
        -e "s#^([[:space:]]*)containerPort: 9464\$#\1containerPort: 9464\n\1hostIP: 127.0.0.1\n\1hostPort: $KHTTP#" \
        "$ROOT/deploy/k8s/$resource" >> "$RENDERED"
done
grep -q "image: $IMAGE" "$RENDERED" || fail "the rendered manifests name no image $IMAGE"
[ "$(grep -c 'hostIP: 127.0.0.1' "$RENDERED")" = 2 ] || fail "the rendered manifests do not bind both ports"
played=yes
(cd "$WORK" && pm kube play --build=false --network slirp4netns "$RENDERED") >>"$WORK/podman.log" 2>&1 \
    || fail "podman kube play failed"
pod=$(pm pod ps --format '{{.Name}}')
container=$pod-referee
pm container exists "$container" || fail "no container $container in pod $pod"
# The probes of deployment.yaml, asked from the host: liveness the server
# as a whole, readiness referee.v1.RefereeService.
wait_serving "$KGRPC" "" || { pm logs "$container"; fail "the pod does not answer its liveness probe's question"; }
wait_serving "$KGRPC" referee.v1.RefereeService || fail "the pod is not ready (referee.v1.RefereeService)"
echo "   pod $pod: liveness (overall health) SERVING, readiness (referee.v1.RefereeService) SERVING on 127.0.0.1:$KGRPC"
probe=$(pm inspect --format '{{json .Config.Healthcheck}}' "$container")
echo "   podman's own probe of the container: $probe (gRPC probes are not translated by podman $(pm version --format '{{.Client.Version}}'))"
read -r user readonly < <(pm inspect --format '{{.Config.User}} {{.HostConfig.ReadonlyRootfs}}' "$container")
[ "$user" = "65532:65532" ] && [ "$readonly" = true ] \
    || fail "the pod runs as '$user' with read-only root '$readonly', not the manifest's 65532:65532, true"
pm logs "$container" > "$WORK/pod.log" 2>&1
python3 - "$WORK/pod.log" <<'EOF' || fail "the pod's log is not JSON lines (PUNCT_REFEREE_LOG_FORMAT of the ConfigMap)"
import json, sys
# Every line but podman's own messages (time="…" level=…) is one JSON object.
lines = [l for l in open(sys.argv[1]) if not l.startswith("time=")]
assert len(lines) >= 3, lines
for line in lines:
    assert isinstance(json.loads(line), dict), line
EOF
echo "   runs as $user on a read-only root, logs JSON (the ConfigMap's environment)"
check_graceful_stop "$container" "$pod"
(cd "$WORK" && pm kube down "$RENDERED") >>"$WORK/podman.log" 2>&1 || fail "podman kube down failed"
played=""
[ -z "$(pm pod ps -q)" ] || fail "podman kube down left a pod"
echo "   podman kube down: no pod left"

echo "-- container tests passed in $((SECONDS - START)) s"
