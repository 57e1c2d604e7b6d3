#!/usr/bin/env bash
# failures.sh BIN_DIR SRC_DIR: daemons dying under running jobs, on a `gsched up` cluster of
# two ws-4gpu workers with 1 s heartbeats (a node is DOWN after 3 missed ones).
# kill -9 of gschedd: brought back by `gsched up` (its workers left alone), it still has every job it had
# acknowledged, finished ones keep their outcome, a task that ended while it was down and
# one that ends after the restart are each recorded COMPLETED having run exactly once, and
# job ids are not reused. kill -9 of a worker: its node goes DOWN and, once its 5 s fence
# timeout has passed (--fence-timeout), its job with
# max_restarts = 1 is REQUEUED and completes on the other node, one with max_restarts = 0
# ends NODE_FAIL; the dead worker's keeper (worker/keeper.h) ended the tasks it left 4 s
# after it died, before gschedd gave up on the node, so no job ran twice at once; the
# worker started again finds nothing left to end.
name="failures"
. "$(dirname "$0")/lib.sh"

start_cluster --workers 2 --topology "$src/tests/topologies/ws-4gpu.xml" --heartbeat 1s --fence-timeout 5s \
  --kill-grace 1s

# A job whose task logs "start PID" and "end NODELIST" to FILE around waiting for gate NAME.
logged_job() { # logged_job FILE NAME [TOML-LINES]
  cat > "$2.toml" <<EOF
${3:-}
[run]
script = """
echo start \$\$ \$GSCHED_NODELIST >> $tmp/$1
$(gate_wait "$2")
echo end \$GSCHED_NODELIST >> $tmp/$1
"""
EOF
}
lines() { grep -c "^$2" "$tmp/$1" 2>/dev/null; } # lines FILE WORD: how many lines start so

# jobs_json: {job id: [state, exit code, reason]} of every job gschedd knows.
jobs_json() {
  "$bin/gsched" queue --all --json | python3 -c '
import json, sys
print(json.dumps({j["job_id"]: [j["state"], j["exit_code"], j["reason"]] for j in json.load(sys.stdin)}))'
}

# --- kill -9 of gschedd --------------------------------------------------------------------
job_file ok.toml '[run]
command = ["true"]'
job_file exit3.toml '[run]
script = "exit 3"'
done_ok=$(submit ok.toml)
done_bad=$(submit exit3.toml)
wait_end "$done_ok" || fail "job $done_ok failed"
wait_end "$done_bad"
logged_job r1.log r1
logged_job r2.log r2
r1=$(submit r1.toml)
r2=$(submit r2.toml)
wait_start "$r1"
wait_start "$r2"
wait_for "r1 and r2 to log their start" 10 eval '[ "$(lines r1.log start)" = 1 ] && [ "$(lines r2.log start)" = 1 ]'
held=()
for _ in 1 2 3 4 5; do held+=("$(submit ok.toml --hold)"); done # acknowledged, then the kill
# A submit sent again with its client key (as the CLI does after a lost reply) queues
# nothing twice, before and after the restart; another key is another job.
keyed=$(GSCHED_SUBMIT_KEY=once-7f3a submit ok.toml --hold)
[ "$(GSCHED_SUBMIT_KEY=once-7f3a submit ok.toml --hold)" = "$keyed" ] || fail "a retried submit made a second job"
GSCHED_SUBMIT_KEY=once-7f3a "$bin/gsched" submit ok.toml --hold --json | grep -q '"retried":true' ||
  fail "the retried submit does not say so"
before=$(jobs_json)
sched=$(cat "$state/gschedd.pid")
kill -9 "$sched"
wait_for "gschedd (pid $sched) to die" 5 eval "! pid_alive $sched"

# r1 ends while gschedd is down: its worker keeps the exit until it can report it.
gate r1
wait_for "r1 to end" 10 eval '[ "$(lines r1.log end)" = 1 ]'
# `up` brings back a cluster whose gschedd alone died, from its own configuration (so on
# the port its workers know), leaving the workers alone.
w1=$(cat "$state/node1.pid")
w2=$(cat "$state/node2.pid")
"$bin/gsched" up --state "$state" --workers 2 >out.txt 2>&1 || fail "up after gschedd died: $(cat out.txt)"
grep -q "the gschedd of .* is not running, its 2 workers are: starting it again" out.txt ||
  fail "up after gschedd died: $(cat out.txt)"
[ "$(cat "$state/node1.pid")" = "$w1" ] && [ "$(cat "$state/node2.pid")" = "$w2" ] ||
  fail "the workers were restarted"
for n in node1 node2; do
  pid_alive "$(cat "$state/$n.pid")" || fail "$n was disturbed by up"
done
node_up() {
  "$bin/gsched" nodes --json "$1" | python3 -c '
import json, sys
sys.exit(0 if json.load(sys.stdin)[0]["state"] == "up" else 1)'
}
wait_for "node1 back" 15 node_up node1
wait_for "node2 back" 15 node_up node2

after=$(jobs_json)
python3 - "$before" "$after" "$r1" "$r2" <<'PY' || fail "jobs changed across the gschedd restart"
import json, sys
before, after = json.loads(sys.argv[1]), json.loads(sys.argv[2])
running = set(sys.argv[3:5])
missing = sorted(set(before) - set(after), key=int)
assert not missing, f"jobs lost: {missing}"
for job, was in before.items():
    if job in running:
        assert after[job][0] in ("RUNNING", "COMPLETED"), (job, was, after[job])
    else:
        assert after[job] == was, (job, was, after[job])
PY
wait_end "$r1" 10 || fail "r1, ended while gschedd was down, is not COMPLETED: $(jq "$r1" 'j')"
# A job that ended before the kill still says where it ran, and its log is still read.
expect "$done_ok" 'len(j["allocation"]) == 1 and j["allocation"][0]["node_name"] != ""' \
  "its node after the restart"
"$bin/gsched" logs "$done_bad" >/dev/null 2>err.txt || fail "logs after the restart: $(cat err.txt)"
expect "$r2" 'j["state"] == "RUNNING"'
gate r2
wait_end "$r2" 10 || fail "r2 failed after the restart: $(jq "$r2" 'j')"
for r in "$r1" "$r2"; do
  expect "$r" 'j["restart_count"] == 0 and len(t) == 1 and t[0]["attempt"] == 1' "one attempt"
done
[ "$(lines r1.log start)" = 1 ] && [ "$(lines r2.log start)" = 1 ] || fail "a task ran twice"
for h in "${held[@]}"; do expect "$h" 'j["state"] == "PENDING" and j["reason"] == "Held"'; done
[ "$(GSCHED_SUBMIT_KEY=once-7f3a submit ok.toml --hold)" = "$keyed" ] ||
  fail "the client key was forgotten across the restart"
other=$(GSCHED_SUBMIT_KEY=twice-11 submit ok.toml --hold)
[ "$other" != "$keyed" ] || fail "another key gave the same job"
"$bin/gsched" cancel "$keyed" "$other" >/dev/null || fail "cancel of the keyed jobs failed"
next=$(submit ok.toml)
[ "$next" -gt "${held[4]}" ] || fail "job id $next reused after the restart (last was ${held[4]})"
wait_end "$next" || fail "a job submitted after the restart failed"
"$bin/gsched" cancel "${held[@]}" || fail "cancel of the held jobs failed"

# --- kill -9 of a worker -------------------------------------------------------------------
# The blocker fills one node's GPUs, so both victims go to the other, whose worker dies.
cat > blocker.toml <<EOF
[resources]
gpus_per_node = 4
[run]
script = """
$(gate_wait blocker)
"""
EOF
logged_job once.log once '[resources]
gpus_per_node = 2
[restart]
max_restarts = 0'
logged_job twice.log twice '[resources]
gpus_per_node = 2
[restart]
max_restarts = 1'
blocker=$(submit blocker.toml)
wait_start "$blocker"
keep=$(jq "$blocker" 'j["allocation"][0]["node_name"]')
once=$(submit once.toml)
twice=$(submit twice.toml)
wait_start "$once"
wait_start "$twice"
lost=$(jq "$twice" 'j["allocation"][0]["node_name"]')
expect "$once" "j['allocation'][0]['node_name'] == '$lost' != '$keep'" "both victims on one node"
wait_for "both victims to log their start" 10 \
  eval '[ "$(lines once.log start)" = 1 ] && [ "$(lines twice.log start)" = 1 ]'
lost_pid=$(cat "$state/$lost.pid")
mapfile -d '' lost_cmd < "/proc/$lost_pid/cmdline"
orphan=$(awk '/^start/ {print $2; exit}' "$tmp/once.log")
pid_alive "$orphan" || fail "once's task (pid $orphan) is not running"
kill -9 "$lost_pid"
died=$(date +%s%N)
wait_end "$once" 15
expect "$once" 'j["state"] == "NODE_FAIL" and j["restart_count"] == 0'
# The keeper ended once's task before gschedd moved its jobs (0.8 of the fence timeout).
pid_alive "$orphan" && fail "once's task (pid $orphan) outlived its dead worker's fence"
grep -q "job=$once .*task of a worker that died ended by its keeper (fence)" "$state/$lost.log" ||
  fail "no keeper line: $(tail -5 "$state/$lost.log")"
[ $(( ($(date +%s%N) - died) / 1000000 )) -ge 4000 ] || fail "once's job ended within 4 s of the worker's death"
"$bin/gsched" nodes --json "$lost" | python3 -c '
import json, sys
n = json.load(sys.stdin)[0]
sys.exit(0 if n["state"] == "down" else f"{n}")' || fail "$lost not down"
# Requeued; it waits for the blocker's GPUs, the only ones left.
expect "$twice" 'j["state"] == "PENDING" and j["reason"] == "Resources" and j["restart_count"] == 1 and
  [e["state"] for e in h] == ["PENDING", "RUNNING", "REQUEUED"]' "requeued, waiting for Resources"
gate blocker
gate twice
wait_end "$blocker" || fail "the blocker failed"
wait_end "$twice" || fail "the requeued job failed: $(jq "$twice" 'j')"
expect "$twice" "j['restart_count'] == 1 and j['allocation'][0]['node_name'] == '$keep' and
  [e['state'] for e in h][-2:] == ['RUNNING', 'COMPLETED']" "COMPLETED on $keep"
[ "$(lines twice.log "start [0-9]* $keep\$")" = 1 ] || fail "no second attempt on $keep: $(cat "$tmp/twice.log")"

# Started again, the worker finds nothing of its previous life left to end, and registers.
respawn "$lost" "${lost_cmd[@]}" </dev/null >>"$state/$lost.log" 2>&1 &
echo $! > "$state/$lost.pid"
wait_for "the restarted worker to register" 15 eval "[ \"\$(grep -c ' registered' '$state/$lost.log')\" -ge 2 ]"
grep -q "leftover task of a previous worker ended" "$state/$lost.log" &&
  fail "the keeper left a task for the next worker: $(grep leftover "$state/$lost.log")"

stop_cluster
check_logs
echo "failures: ok"
