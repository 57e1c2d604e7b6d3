#!/usr/bin/env bash
# fence.sh BIN_DIR SRC_DIR: a worker cut off from gschedd by a link taken down fences itself,
# and its job never runs on two nodes at once. gschedd, node1 and node2 each in a network
# namespace of their own on a bridge (lib.sh); 1 s heartbeats, a node DOWN after 2 missed,
# scheduler.fence_timeout 3 s, kill_grace 10 s. A job that may be requeued once starts on
# node1 (node2's worker starts after it) and ticks into its log every 0.1 s, deaf to
# SIGTERM, as a job that checkpoints on SIGTERM and keeps going would. node1's link goes
# down (no RST, no FIN: a pulled cable). Then: node1's worker logs that it fenced itself,
# and the first attempt's task is dead (killed, not merely sent SIGTERM: the grace period
# is longer than gschedd waits) before gschedd moves the job, which it does after the
# worker's fence and fence_timeout and a heartbeat interval after the last heartbeat it had
# (so at least 2 s after the cut); the second attempt starts on node2 and, in the job's
# append-only log, no line of the first attempt follows the second's start (never two at
# once). When the link is back, node1's worker registers again and node1 is up; the job
# completes on node2 with one restart.
name="fence"
. "$(dirname "$0")/lib.sh"

netns_up 2
write_config 'heartbeat_interval = "1s"' 'heartbeat_misses = 2' 'kill_grace = "10s"' \
  'fence_timeout = "3s"'
start_gschedd
start_worker 1 --gpus 1
wait_for "node1 up" 20 node_state node1 up

task_job deaf 1 "$(tick_until gate deaf)"
job=$(submit deaf.toml)
log=$tmp/tasks/$job.log
wait_for "the first attempt to start" 20 grep -q '^start' "$log"
read -r _ _ host1 first _ < <(grep -m1 '^start' "$log")
[ "$host1" = node1 ] || fail "the first attempt ran on '$host1', not node1 (its host name)"
start_worker 2 --gpus 1
wait_for "node2 up" 20 node_state node2 up

cut_at=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ) # as the daemons write ts=
link_down 1
fenced() { grep -q 'nothing heard from gschedd: fenced, tasks killed' "$tmp/node1.log"; }
wait_for "node1's worker to fence itself" 20 fenced
moved() { grep -q 'node=node1 fence_ms=3000 its worker has fenced itself by now' "$tmp/gschedd.log"; }
wait_for "gschedd to move the job" 20 moved
gone "$first" || fail "the first attempt (pid $first) still runs after gschedd moved its job"
wait_for "the second attempt to start" 20 grep -q '^start .* node2 ' "$log"

# The log is appended to by both attempts: the order of its lines is the order of events.
python3 - "$log" "$first" <<'PY' || fail "two attempts ran at once: $(cat "$log")"
import sys
lines = [l.split() for l in open(sys.argv[1])]
first = sys.argv[2]
second_start = next(i for i, l in enumerate(lines) if l[0] == "start" and l[3] != first)
late = [" ".join(l) for l in lines[second_start:] if l[3] == first]
sys.exit(f"lines of the first attempt after the second started: {late}" if late else 0)
PY
fence_at=$(grep -m1 'fenced, tasks killed' "$tmp/node1.log" | grep -o '^ts=[^ ]*')
move_at=$(grep -m1 'its worker has fenced itself by now' "$tmp/gschedd.log" | grep -o '^ts=[^ ]*')
[[ "$fence_at" < "$move_at" ]] ||
  fail "gschedd moved the job ($move_at) before the worker fenced ($fence_at)"
# Its last heartbeat came at most an interval before the cut: the move is at least
# fence_timeout (and that interval) after the last heartbeat, so fence_timeout less one
# interval after the cut at the very least; here, 2 s.
python3 - "$cut_at" "${move_at#ts=}" <<'PY' || fail "gschedd moved the job too early"
import datetime, sys
t = [datetime.datetime.strptime(a, "%Y-%m-%dT%H:%M:%S.%fZ") for a in sys.argv[1:]]
gap = (t[1] - t[0]).total_seconds()
sys.exit(0 if gap >= 2 else f"moved {gap:.3f} s after the cut")
PY

before=$(registrations 1)
link_up 1
wait_for "node1's worker to register again" 30 eval '[ "$(registrations 1)" -gt "$before" ]'
wait_for "node1 up again" 20 node_state node1 up
touch "$tmp/gate"
wait_for "the job to complete" 20 is "$job" 'j["state"] == "COMPLETED"'
expect "$job" 'j["restart_count"] == 1 and j["allocation"][0]["node_name"] == "node2"' \
  "one restart, completed on node2"
[ "$(grep -c '^start' "$log")" = 2 ] || fail "not two attempts: $(cat "$log")"

kill_wait TERM "${worker_pid[1]}" "${worker_pid[2]}" "$sched_pid"
check_logs
echo "$name: ok"
