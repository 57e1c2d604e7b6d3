#!/usr/bin/env bash
# nodes.sh BIN_DIR SRC_DIR: real gschedd and gsched-workerd processes on loopback in a
# temporary directory. Workers register with their topology and show in `gsched nodes`;
# a second worker with a taken name is refused; workers with another cluster key or none
# never register (gschedd logs auth_failed, the keyless one is told why); garbage on the
# worker port closes only that connection; a worker killed with -9 turns DOWN after its
# missed heartbeats; a restarted gschedd gets the surviving worker back; as root, a worker
# without --allow-root-jobs fails root's job at launch, saying why. Polls with deadlines, never bare sleeps.
name="nodes"
. "$(dirname "$0")/../daemons.sh" "$@"

write_config 'heartbeat_interval = "1s"' 'heartbeat_misses = 2'

start_sched() {
  "$bin/gschedd" --config "$tmp/gsched.toml" 2>>"$tmp/gschedd.log" &
  sched=$!
  pids+=("$sched")
  wait_for "gschedd to listen" test -S "$tmp/gschedd.sock"
}

node_state() { # node_state NAME STATE: the node is listed with that state
  "$bin/gsched" nodes --json "$1" | python3 -c '
import json, sys
nodes = json.load(sys.stdin)
sys.exit(0 if nodes and nodes[0]["state"] == sys.argv[1] else 1)' "$2"
}

# The state directory holds every user's jobs: gschedd's alone, even one made 0755 before.
mkdir -m 755 "$tmp/state"
start_sched
[ "$(stat -c %a "$tmp/state")" = 700 ] || fail "state directory mode $(stat -c %a "$tmp/state")"
[ "$(stat -c %a "$tmp/state/gsched.db")" = 600 ] || fail "database mode $(stat -c %a "$tmp/state/gsched.db")"
"$bin/gsched-workerd" --scheduler 127.0.0.1:"$port" --auth-key "$tmp/gsched.key" --name node1 --gpus 2 --features h100 \
  2>"$tmp/node1.log" &
w1=$!; pids+=("$w1")
"$bin/gsched-workerd" --scheduler 127.0.0.1:"$port" --auth-key "$tmp/gsched.key" --name node2 \
  --topology "$src/tests/topologies/pcie-8gpu.xml" 2>"$tmp/node2.log" &
w2=$!; pids+=("$w2")
wait_for "node1 up" node_state node1 up
wait_for "node2 up" node_state node2 up

table=$("$bin/gsched" nodes) || fail "gsched nodes failed"
grep -qE '^node2 +up +8/8 +64/64' <<< "$table" || fail "node2 line wrong in:$'\n'$table"
grep -qE '^node1 +up +2/2 .* h100$' <<< "$table" || fail "node1 line wrong in:$'\n'$table"

# A second worker claiming node1 is refused while the first is alive.
"$bin/gsched-workerd" --scheduler 127.0.0.1:"$port" --auth-key "$tmp/gsched.key" --name node1 --gpus 1 2>"$tmp/dup.log" &
dup=$!; pids+=("$dup")
wait_for "the duplicate refused" grep -q "already connected" "$tmp/gschedd.log"
kill -TERM "$dup"

# Another cluster key, and no key at all: neither gets in, nor takes a node name.
(umask 077 && head -c 32 /dev/urandom > "$tmp/other.key")
"$bin/gsched-workerd" --scheduler 127.0.0.1:"$port" --auth-key "$tmp/other.key" --name intruder \
  2>"$tmp/intruder.log" &
pids+=("$!")
"$bin/gsched-workerd" --scheduler 127.0.0.1:"$port" --auth-key "" --name keyless \
  2>"$tmp/keyless.log" &
pids+=("$!")
wait_for "the other key refused" grep -q "reason=auth_failed role=worker name=intruder" \
  "$tmp/gschedd.log"
wait_for "the keyless worker told why" grep -q "needs_the_cluster_key" "$tmp/keyless.log"
"$bin/gsched" nodes --json intruder keyless | python3 -c 'import json, sys
sys.exit(0 if json.load(sys.stdin) == [] else 1)' || fail "an unauthenticated worker registered"

# Garbage on the worker port: that connection is closed, the daemon keeps serving.
python3 - "$port" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + bytes(range(256)) * 8)
try:
    s.recv(100)
except OSError:
    pass
s.close()
PY
node_state node1 up || fail "gschedd stopped serving after garbage"

# kill -9 a worker: its node goes DOWN after 2 missed heartbeats.
kill -9 "$w1"
# (It shows down as soon as its connection is gone; it is declared failed on the deadline.)
wait_for "node1 down" node_state node1 down
missed() { "$bin/gsched" nodes | grep -q "missed 2 heartbeats"; }
wait_for "node1 declared failed" missed

# Restart gschedd: the surviving worker reconnects and registers again.
kill -TERM "$sched"
wait "$sched" || fail "gschedd exited non-zero on SIGTERM"
start_sched
wait_for "node2 back after the restart" node_state node2 up

# As root: these workers were started without --allow-root-jobs, so root's job fails to
# launch, saying why, and nothing of it runs.
if [ "$(id -u)" = 0 ]; then
  id=$("$bin/gsched" sbatch --parsable -w node2 -o "$tmp/root.out" --wrap "touch $tmp/ran") ||
    fail "sbatch as root: $id"
  "$bin/gsched" wait "$id" --timeout 30s >/dev/null 2>&1
  "$bin/gsched" show "$id" > "$tmp/root-show.txt" 2>&1
  grep -q 'State=FAILED Reason=rank 0 could not start on node2: this node does not run jobs as root' \
    "$tmp/root-show.txt" ||
    fail "root's job on a worker that refuses them: $(cat "$tmp/root-show.txt")"
  [ -e "$tmp/ran" ] && fail "root's job ran"
fi

# Bad configuration is refused with its place, and nothing listens.
printf '[scheduler]\nport = 70000\n' > "$tmp/bad.toml"
"$bin/gschedd" --config "$tmp/bad.toml" 2>"$tmp/bad.err"
[ $? -eq 1 ] || fail "bad config not refused"
grep -q "bad.toml:2:8: scheduler.port" "$tmp/bad.err" || fail "bad config error: $(cat "$tmp/bad.err")"
"$bin/gsched" nodes --socket "$tmp/nobody.sock" 2>"$tmp/err.txt"
[ $? -eq 1 ] || fail "gsched nodes without a scheduler did not fail"
grep -q "cannot reach gschedd at $tmp/nobody.sock" "$tmp/err.txt" || fail "no clear error"

kill -TERM "$w2" "$sched"
wait "$w2" || fail "worker exited non-zero"
wait "$sched" || fail "gschedd exited non-zero"
# Under the sanitizer build the daemons report into their logs: those count too.
if grep -lE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$tmp"/*.log; then
  fail "sanitizer report in a daemon's log"
fi
echo "nodes: ok"
