#!/bin/bash
# How the Flent data files here were written (README.md lists them): real runs of netperf-wrapper 0.9.1
# (data-format version 1), Flent 0.12.4 (version 2), Flent 1.1.1 (version 3) and Flent 2.3.0 (version 4),
# each installed from PyPI into a venv of its own, through a 20 Mbit/s token-bucket bottleneck between two
# network namespaces (this kernel has no netem); iperf 2.1.8 and fping 5.1 from Debian, the iperf servers
# in the far namespace.
# Run as root:   bash tests/data/flent/make.sh OUT [VENVS]
# VENVS (default /tmp/flent-venvs) gets nw091/ f0124/ f111/ f230/ with `pip install netperf-wrapper==0.9.1`,
# `flent==0.12.4`, `flent==1.1.1`, `flent==2.3.0`. Namespaces and servers are removed on exit.
# To run on Python 3.11 the two oldest get a sitecustomize.py restoring names that Python removed
# (Thread.isAlive, collections.Callable ...), and netperf-wrapper a link to where pip put its test
# definitions; nothing of their measuring or file writing is changed.
set -euo pipefail
OUT=$(realpath -m "${1:?usage: make.sh OUTDIR [VENVS]}")
VENVS=${2:-/tmp/flent-venvs}
mkdir -p "$OUT" "$VENVS"
for v in nw091:netperf-wrapper==0.9.1 f0124:flent==0.12.4 f111:flent==1.1.1 f230:flent==2.3.0; do
  d=$VENVS/${v%%:*}
  [ -x "$d/bin/python" ] || { python3 -m venv "$d" && "$d/bin/pip" install -q "${v#*:}"; }
done
for d in "$VENVS/nw091" "$VENVS/f0124"; do
  cat > "$d/lib/python3.11/site-packages/sitecustomize.py" <<'PY'
import collections
import collections.abc
import threading

threading.Thread.isAlive = threading.Thread.is_alive  # removed in Python 3.9
for _name in ("Callable", "Mapping", "MutableMapping", "Sequence", "Iterable"):
    setattr(collections, _name, getattr(collections.abc, _name))  # moved to collections.abc in Python 3.10
PY
done
ln -sfn "$VENVS/nw091/share/netperf-wrapper/tests" "$VENVS/nw091/lib/python3.11/site-packages/tests"

T=bbfl$$
A=${T}a B=${T}b
cleanup() {
  ip netns pids "$B" 2>/dev/null | xargs -r kill 2>/dev/null || true
  ip netns del "$A" 2>/dev/null || true
  ip netns del "$B" 2>/dev/null || true
}
trap cleanup EXIT INT TERM
ip netns add "$A"
ip netns add "$B"
ip link add ${T}x netns "$A" type veth peer name ${T}y netns "$B"
ip -n "$A" addr add 10.77.0.1/24 dev ${T}x
ip -n "$B" addr add 10.77.0.2/24 dev ${T}y
for ns in "$A" "$B"; do ip -n "$ns" link set lo up; done
ip -n "$A" link set ${T}x up
ip -n "$B" link set ${T}y up
# The bottleneck on the client's egress: a 20 Mbit/s token bucket.
ip netns exec "$A" tc qdisc add dev ${T}x root handle 1: tbf rate 20mbit burst 32kb latency 50ms
ip netns exec "$B" iperf -s -D >/dev/null 2>&1
ip netns exec "$B" iperf -s -u -D >/dev/null 2>&1
sleep 1

run() {  # run DIR PROGRAM ARGS...
  local dir=$1; shift
  mkdir -p "$OUT/tmp-$dir"
  (cd "$OUT/tmp-$dir" && ip netns exec "$A" "$@" >/dev/null 2>&1 || true)
  mv "$OUT/tmp-$dir"/*.gz "$OUT/" 2>/dev/null || true
  rm -rf "$OUT/tmp-$dir"
}
# The udp_flood test the releases ship (iperf -u at 100 Mbit/s into the 20 Mbit/s bottleneck, fping), one
# sample a second (iperf 2.1.8 without Flent's timestamp patch stamps whole seconds; the old releases leave
# finer steps empty). Flent 1.1.1 wants an iperf with --enhancedreports, which iperf 2.1.8 no longer has:
# its file is the ping test's.
OPTS=(-H 10.77.0.2 -l 10 -s 1)
run nw "$VENVS/nw091/bin/netperf-wrapper" "${OPTS[@]}" -t netperf-wrapper-0.9.1 udp_flood
run f0124 "$VENVS/f0124/bin/flent" "${OPTS[@]}" -D . -t flent-0.12.4 udp_flood
run f111 "$VENVS/f111/bin/flent" "${OPTS[@]}" -D . -t flent-1.1.1 ping
run f230 "$VENVS/f230/bin/flent" "${OPTS[@]}" -D . -t flent-2.3.0 udp_flood
ls -l "$OUT"
