#!/usr/bin/env bash
# stale.sh BIN_DIR SRC_DIR: a worker that has heard nothing from gschedd for fence_timeout
# does not act on what reaches it late: a launch gschedd sent before it gave up on the node
# and moved the job must not start a second attempt beside the one now running elsewhere.
# (Found by the chaos run, seed 2: a launch held in TCP buffers behind a cut link reached
# its worker when the link came back, after gschedd had started the job on another node.)
# gschedd, node1 and node2 in network namespaces of their own (lib.sh); 1 s heartbeats, a
# node DOWN after 2 missed, fence_timeout 3 s. node1's worker is stopped (SIGSTOP: a frozen
# host; its kernel still takes in TCP data). A job that may be requeued is submitted and
# launched on node1: the launch waits unread in node1's socket. node2's worker starts;
# gschedd declares node1 down, moves the job after fence_timeout and a heartbeat, and the
# second attempt runs on node2. Then node1's worker continues (SIGCONT) and reads the old
# launch: it must fence itself instead (its log says so) and start nothing. node1 registers
# again; the job's log has no line from node1; the job completes on node2, restarted once.
name="stale"
. "$(dirname "$0")/lib.sh"

netns_up 2
write_config 'heartbeat_interval = "1s"' 'heartbeat_misses = 2' 'kill_grace = "1s"' \
  'fence_timeout = "3s"'
start_gschedd
start_worker 1 --gpus 1
wait_for "node1 up" 20 node_state node1 up

task_job late 1 "$(tick_until gate)"
kill -STOP "${worker_pid[1]}"
job=$(submit late.toml)
log=$tmp/tasks/$job.log
grep -q "job=$job attempt=1 nodes=node1 " "$tmp/gschedd.log" ||
  fail "the job did not go to node1: $(grep "job=$job " "$tmp/gschedd.log")"
unread() { # the launch (and more) wait in node1's socket from gschedd
  ip netns exec "${netns_node[1]}" ss -tnH state established "dst $sched_ip" |
    awk '$1 > 0 {found = 1} END {exit !found}'
}
wait_for "the launch to wait unread in node1's socket" 10 unread
start_worker 2 --gpus 1
wait_for "node2 up" 20 node_state node2 up
wait_for "gschedd to move the job" 20 grep -q "job=$job state=REQUEUED" "$tmp/gschedd.log"
wait_for "the second attempt to start on node2" 20 grep -q '^start .* node2 ' "$log"

before=$(registrations 1)
kill -CONT "${worker_pid[1]}"
wait_for "node1's worker to register again" 30 eval '[ "$(registrations 1)" -gt "$before" ]'
wait_for "node1 up again" 20 node_state node1 up
grep -q 'fenced, tasks killed' "$tmp/node1.log" || fail "node1's worker did not fence itself"
! grep -q " node1 " "$log" || fail "node1 acted on the late launch: $(cat "$log")"
! grep -q "job=$job .*task started" "$tmp/node1.log" || fail "node1 started the job's task"

touch "$tmp/gate"
wait_for "the job to complete" 20 is "$job" 'j["state"] == "COMPLETED"'
expect "$job" 'j["restart_count"] == 1 and j["allocation"][0]["node_name"] == "node2"' \
  "one restart, completed on node2"
[ "$(grep -c '^start' "$log")" = 1 ] || fail "not one start: $(cat "$log")"

kill_wait TERM "${worker_pid[1]}" "${worker_pid[2]}" "$sched_pid"
check_logs
echo "$name: ok"
