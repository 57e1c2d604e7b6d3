#!/usr/bin/env bash
# rejoin.sh BIN_DIR SRC_DIR: a job whose task a worker's fence killed is treated as hit by a
# node failure (requeued while it has restarts left), not as cancelled, when the node comes
# back after the fence but before gschedd moved its jobs (the fenced task's exit says
# CANCELLED; gschedd once ended the job CANCELLED, with no reason, though nobody cancelled it
# and it had restarts left: a job with a node down and not yet failed over now leaves its
# end to that failover, or to the node's return). gschedd and node1 in network namespaces of their own
# (lib.sh); 1 s heartbeats, a node DOWN after 2 missed, fence_timeout 3 s. A job with
# max_restarts = 2 runs on node1; node1's link goes down until its worker has fenced itself
# (about 2.25-3 s; gschedd would move the job at 4 s after the last heartbeat), then comes
# back. The job must be requeued (restart_count 1) and, run again on node1, complete.
name="rejoin"
. "$(dirname "$0")/lib.sh"

netns_up 1
write_config 'heartbeat_interval = "1s"' 'heartbeat_misses = 2' 'kill_grace = "1s"' \
  'fence_timeout = "3s"'
start_gschedd
start_worker 1 --gpus 1
wait_for "node1 up" 20 node_state node1 up

task_job back 2 "$(tick_until gate)"
job=$(submit back.toml)
log=$tmp/tasks/$job.log
wait_for "the first attempt to start" 20 grep -q '^start' "$log"
link_down 1
wait_for "node1's worker to fence itself" 20 grep -q 'fenced, tasks killed' "$tmp/node1.log"
link_up 1
grep -q "its worker has fenced itself by now" "$tmp/gschedd.log" &&
  fail "gschedd moved the job before the link was back: the test came too late"
wait_for "node1's worker to register again" 20 eval '[ "$(registrations 1)" -gt 1 ]'
wait_for "the job to be requeued or to end" 20 \
  is "$job" 'j["restart_count"] > 0 or j["state"] not in ("PENDING", "RUNNING")'
expect "$job" 'j["restart_count"] == 1 and "CANCELLED" not in [e["state"] for e in h]' \
  "requeued after its node's fence, not CANCELLED"
wait_for "the second attempt to start" 20 eval '[ "$(grep -c "^start" "$log")" = 2 ]'
touch "$tmp/gate"
wait_for "the job to complete" 20 is "$job" 'j["state"] == "COMPLETED"'

kill_wait TERM "${worker_pid[1]}" "$sched_pid"
check_logs
echo "$name: ok"
