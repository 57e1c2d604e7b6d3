#!/usr/bin/env bash
# down.sh BIN_DIR SRC_DIR: a node that was down when gschedd restarted still has its jobs
# moved once its worker has fenced itself, even if the node never comes back. (Found while
# building the chaos run: a restarted gschedd gave such a node no failover deadline, so its
# requeue-able job stayed RUNNING for as long as the node stayed away.) gschedd, node1 and
# node2 in network namespaces of their own (lib.sh); 1 s heartbeats, a node DOWN after 2
# missed, fence_timeout 3 s. A requeue-able job runs on node1; node2 starts; node1's link
# goes down; once gschedd has declared node1 down (and stored it so), gschedd is killed with
# -9 and started again, the link still down. Then: within fence_timeout and a heartbeat
# (and a margin) of the restart, the job is requeued and its second attempt runs on node2,
# after the first attempt's last line (node1's worker fenced it); with the link back, node1
# registers again and the job completes on node2.
name="down"
. "$(dirname "$0")/lib.sh"

netns_up 2
write_config 'heartbeat_interval = "1s"' 'heartbeat_misses = 2' 'kill_grace = "1s"' \
  'fence_timeout = "3s"'
start_gschedd
start_worker 1 --gpus 1
wait_for "node1 up" 20 node_state node1 up

task_job away 1 "$(tick_until gate)"
job=$(submit away.toml)
log=$tmp/tasks/$job.log
wait_for "the first attempt to start" 20 grep -q '^start .* node1 ' "$log"
start_worker 2 --gpus 1
wait_for "node2 up" 20 node_state node2 up

link_down 1
wait_for "gschedd to declare node1 down" 20 node_state node1 down
kill_wait KILL "$sched_pid"
start_gschedd
wait_for "node2 back" 20 node_state node2 up
wait_for "the job to be requeued by the restarted gschedd" 10 \
  grep -q "job=$job state=REQUEUED" "$tmp/gschedd.log"
wait_for "the second attempt to start on node2" 20 grep -q '^start .* node2 ' "$log"
python3 - "$log" <<'PY' || fail "two attempts ran at once: $(grep -v '^tick' "$log")"
import sys
lines = [l.split() for l in open(sys.argv[1])]
second = next(i for i, l in enumerate(lines) if l[0] == "start" and l[2] == "node2")
late = [" ".join(l) for l in lines[second:] if l[2] == "node1"]
sys.exit(f"node1's lines after node2's start: {late}" if late else 0)
PY

before=$(registrations 1)
link_up 1
wait_for "node1's worker to register again" 30 eval '[ "$(registrations 1)" -gt "$before" ]'
touch "$tmp/gate"
wait_for "the job to complete" 20 is "$job" 'j["state"] == "COMPLETED"'
expect "$job" 'j["restart_count"] == 1 and j["allocation"][0]["node_name"] == "node2"' \
  "one restart, completed on node2"

kill_wait TERM "${worker_pid[1]}" "${worker_pid[2]}" "$sched_pid"
check_logs
echo "$name: ok"
