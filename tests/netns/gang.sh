#!/usr/bin/env bash
# gang.sh BIN_DIR SRC_DIR: a 2-node job that loses one node is requeued, and its next
# attempt must not start while a rank of the last attempt still runs on the node that was
# not lost. gschedd signals the surviving rank (SIGTERM, SIGKILL after kill_grace) and
# requeues the job only once that rank's exit is in (it once requeued at once: the worker of
# a node holds a new launch while the last attempt's task there lives,
# tests/integration/requeue.sh, but a new attempt placed on other nodes started at once).
# gschedd and node1..node4 in network namespaces of their own (lib.sh); 1 s heartbeats,
# fence_timeout 3 s, kill_grace 10 s; one GPU per node. The job (2 nodes, a GPU each,
# max_restarts 1) starts on node1 and node2, its tasks deaf to SIGTERM (as tasks that
# checkpoint on it and go on); node3 and node4 start; node1's link goes down. node1 fences
# itself, gschedd moves the job (node1 is down): the second attempt goes to two of node2,
# node3, node4. In the job's append-only log no line of a first-attempt task may follow
# the start of a second-attempt task of the same rank.
name="gang"
. "$(dirname "$0")/lib.sh"

netns_up 4
write_config 'heartbeat_interval = "1s"' 'heartbeat_misses = 2' 'kill_grace = "10s"' \
  'fence_timeout = "3s"'
start_gschedd
start_worker 1 --gpus 1
start_worker 2 --gpus 1
wait_for "node1 up" 20 node_state node1 up
wait_for "node2 up" 20 node_state node2 up

task_job gang 1 "$(tick_until gate deaf)" 'nodes = 2' 'gpus_per_node = 1'
job=$(submit gang.toml)
log=$tmp/tasks/$job.log
wait_for "both ranks to start" 20 eval '[ "$(grep -c "^start" "$log")" = 2 ]'
start_worker 3 --gpus 1
start_worker 4 --gpus 1
wait_for "node3 up" 20 node_state node3 up
wait_for "node4 up" 20 node_state node4 up

link_down 1
wait_for "gschedd to move the job" 30 grep -q "job=$job restarts=1 job requeued" "$tmp/gschedd.log"
wait_for "the second attempt's two ranks" 30 eval '[ "$(grep -c "^start" "$log")" = 4 ]'
touch "$tmp/gate"
wait_for "the job to end" 30 is "$job" 'j["state"] not in ("PENDING", "RUNNING", "REQUEUED")'
python3 - "$log" "$src/tests/chaos" <<'PY' || fail "two attempts ran at once: $(grep -v '^tick' "$log")"
import sys
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[2])
import check
bad = [f"rank {r}: {a['node']} pid {a['pid']} after {b['node']} pid {b['pid']} started"
       for r, tasks in check.load_tasks(sys.argv[1]).items()
       for a, b in zip(tasks, tasks[1:]) if a["last"] > b["start"]]
sys.exit("; ".join(bad) if bad else 0)
PY
expect "$job" 'j["state"] == "COMPLETED" and j["restart_count"] == 1'

link_up 1
kill_wait TERM "${worker_pid[1]}" "${worker_pid[2]}" "${worker_pid[3]}" "${worker_pid[4]}" \
  "$sched_pid"
check_logs
echo "$name: ok"
