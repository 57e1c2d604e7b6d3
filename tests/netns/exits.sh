#!/usr/bin/env bash
# exits.sh BIN_DIR SRC_DIR: a task's exit is on disk (the worker's exits file) before it is
# sent, so a job that finished while gschedd and its worker went down together ends
# COMPLETED once and does not run again. gschedd and node1 in network namespaces of their
# own (lib.sh); fence_timeout 10 s, so nothing moves by itself during the test. A job that
# may be requeued (max_restarts = 1) starts; node1's link goes down; then the task ends
# (exit 0), so its exit cannot reach gschedd; once the worker's exits file holds it (and
# gschedd still says RUNNING), the worker and gschedd are killed with -9. Both start again
# and the link comes back: the new worker reports the old worker's exit at registration,
# gschedd records the job COMPLETED with no restart, its history has one RUNNING and one
# COMPLETED and no REQUEUED, the task ran once (one start line in its log), and the worker
# drops the exit from its file once gschedd has acknowledged it. Without the exits file
# gschedd would take the job for lost with its worker and run it a second time.
name="exits"
. "$(dirname "$0")/lib.sh"

netns_up 1
write_config 'heartbeat_interval = "1s"' 'heartbeat_misses = 3' 'kill_grace = "1s"' \
  'fence_timeout = "10s"'
start_gschedd
start_worker 1 --gpus 1
wait_for "node1 up" 20 node_state node1 up

task_job once 1 "$(tick_until gate)"
job=$(submit once.toml)
log=$tmp/tasks/$job.log
exits=$tmp/wrk/node1.tasks.exits
wait_for "the task to start" 20 grep -q '^start' "$log"

link_down 1
touch "$tmp/gate"
wait_for "the task to end" 20 grep -q '^end' "$log"
# the file is a journal: an 8-byte header, then the exit's record (worker/exits_file.h)
journal_size() { stat -c %s "$exits" 2>/dev/null || echo 0; }
wait_for "the worker to write the exit to its exits file" 20 eval '[ "$(journal_size)" -gt 8 ]' 
expect "$job" 'j["state"] == "RUNNING"' "RUNNING (its exit cannot have reached gschedd)"
kill_wait KILL "${worker_pid[1]}" "$sched_pid"

start_gschedd
link_up 1
start_worker 1 --gpus 1
wait_for "the new worker to load the old one's exit" 20 \
  grep -q 'exits=1 unacknowledged exits of a previous worker, to report' "$tmp/node1.log"
wait_for "the job to end" 20 is "$job" 'j["state"] not in ("PENDING", "RUNNING", "REQUEUED")'
expect "$job" 'j["state"] == "COMPLETED" and j["restart_count"] == 0 and j["exit_code"] == 0' \
  "COMPLETED with no restart"
expect "$job" '[e["state"] for e in h].count("RUNNING") == 1 and
  [e["state"] for e in h].count("COMPLETED") == 1 and "REQUEUED" not in [e["state"] for e in h]' \
  "one RUNNING, one COMPLETED, no REQUEUED in its history"
expect "$job" 'len(t) == 1 and t[0]["attempt"] == 1 and t[0]["exit_code"] == 0' "one task exit"
[ "$(grep -c '^start' "$log")" = 1 ] || fail "the task ran more than once: $(cat "$log")"
wait_for "the acknowledged exit to leave the exits file" 20 eval '[ "$(journal_size)" = 8 ]' 

kill_wait TERM "${worker_pid[1]}" "$sched_pid"
check_logs
echo "$name: ok"
