#!/usr/bin/env bash
# up.sh BIN_DIR SRC_DIR: `gsched up` starts a local cluster in ./.gsched whose workers are
# UP and which plain `gsched nodes` finds from that directory; a second `up` is refused;
# `down` stops every daemon and keeps the logs, and a later `up` starts again; `down` with
# nothing running, or with only stale pid files, fails without touching other processes.
set -u
bin=$1
src=$2
tmp=$(mktemp -d)
cleanup() {
  for f in "$tmp"/*/*.pid "$tmp"/.gsched/*.pid; do
    [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "up: $*" >&2
  for f in "$tmp"/.gsched/*.log "$tmp"/other/*.log; do
    [ -f "$f" ] && { echo "--- $f" >&2; tail -20 "$f" >&2; }
  done
  exit 1
}
unset GSCHED_SOCKET
cd "$tmp" || exit 1

out=$("$bin/gsched" up --workers 3 --gpus-per-node 2 --features a100) || fail "up failed: $out"
grep -q "local cluster up in $tmp/.gsched: gschedd (port [0-9]*) and 3 workers (node1, node2, node3), 2 GPUs each" <<< "$out" ||
  fail "unexpected summary: $out"
[ "$(stat -c %a .gsched)" = 700 ] || fail "state directory is not mode 0700"
grep -q "state_dir = \"$tmp/.gsched\"" .gsched/gsched.toml || fail "no state_dir in gsched.toml"
table=$("$bin/gsched" nodes) || fail "gsched nodes does not find ./.gsched/gschedd.sock"
[ "$(grep -cE '^node[123] +up +2/2 .* a100$' <<< "$table")" = 3 ] || fail "nodes wrong:"$'\n'"$table"
pids=$(cat .gsched/*.pid)

"$bin/gsched" up 2>err.txt && fail "a second up was not refused"
grep -q "a cluster is already running in $tmp/.gsched (gschedd pid" err.txt || fail "$(cat err.txt)"

out=$("$bin/gsched" down) || fail "down failed: $out"
[ "$out" = "gsched: local cluster in $tmp/.gsched stopped" ] || fail "unexpected: $out"
for p in $pids; do
  kill -0 "$p" 2>/dev/null && [ "$(cut -d' ' -f3 /proc/$p/stat 2>/dev/null)" != Z ] &&
    fail "pid $p still runs after down"
done
ls .gsched/*.pid .gsched/gschedd.sock 2>/dev/null && fail "pid files or socket left behind"
[ -s .gsched/gschedd.log ] && [ -s .gsched/node3.log ] || fail "logs not kept"
"$bin/gsched" down 2>err.txt && fail "down without a cluster succeeded"
grep -q "no cluster is running in $tmp/.gsched" err.txt || fail "$(cat err.txt)"

# A stale pid file naming a live process that is not a gsched daemon is not a cluster.
sleep 60 & stranger=$!
echo "$stranger" > .gsched/gschedd.pid
"$bin/gsched" down 2>/dev/null && fail "a stranger's pid counted as gschedd"
kill -0 "$stranger" || fail "down signalled a process that is not gschedd"
kill "$stranger"
[ -e .gsched/gschedd.pid ] && fail "stale pid file kept"

# gsched.toml counts durations in whole seconds: less is refused before anything starts.
"$bin/gsched" up --state other --heartbeat 300ms 2>err.txt
[ $? = 2 ] || fail "--heartbeat 300ms not refused"
grep -q "heartbeat wants a duration of whole seconds" err.txt || fail "$(cat err.txt)"
[ -e other/gschedd.pid ] && fail "a refused up started something"

# Elsewhere, with a topology file; the socket is then named by GSCHED_SOCKET.
out=$("$bin/gsched" up --workers 1 --state other --topology "$src/tests/topologies/pcie-8gpu.xml" \
  --heartbeat 1s --kill-grace 1m30s) || fail "up --state failed: $out"
grep -qx 'heartbeat_interval = "1s"' other/gsched.toml && grep -qx 'kill_grace = "90s"' other/gsched.toml ||
  fail "--heartbeat / --kill-grace not in gsched.toml: $(cat other/gsched.toml)"
grep -q "heartbeat_ms=1000 listening" other/gschedd.log || fail "gschedd does not use --heartbeat"
# The cluster key: made on the first start, the user's alone, named in gsched.toml.
[ "$(stat -c '%a %s' other/gsched.key)" = "600 32" ] || fail "key: $(stat -c '%a %s' other/gsched.key)"
grep -qx "auth_key = \"$tmp/other/gsched.key\"" other/gsched.toml || fail "no auth_key in: $(cat other/gsched.toml)"
grep -q 'auth=none' other/gschedd.log && fail "gschedd runs without the key"
grep -q "1 worker (node1), 8 GPUs$" <<< "$out" || fail "unexpected summary: $out"
grep -q "export GSCHED_SOCKET=$tmp/other/gschedd.sock" <<< "$out" || fail "no socket hint: $out"
GSCHED_SOCKET=$tmp/other/gschedd.sock "$bin/gsched" nodes | grep -qE '^node1 +up +8/8' ||
  fail "node1 of the topology cluster not up"
"$bin/gsched" down --state other >/dev/null || fail "down --state failed"

# The first cluster starts again from its kept directory.
"$bin/gsched" up --workers 1 >/dev/null || fail "second up failed"
"$bin/gsched" nodes | grep -qE '^node1 +up' || fail "node1 not up after the restart"
"$bin/gsched" down >/dev/null || fail "final down failed"

if grep -lE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' .gsched/*.log other/*.log; then
  fail "sanitizer report in a daemon's log"
fi
echo "up: ok"
