#!/usr/bin/env bash
# no_kill.sh BIN_DIR SRC_DIR: sbatch --no-kill on a `gsched up` cluster of two workers with 1 s
# heartbeats and a 5 s fence timeout. A two-node batch job runs a step on both nodes; the
# worker of its second node is killed (-9); once the node fails over the job is still
# RUNNING (its history says it runs on). The node comes back (its worker again) and gschedd
# restarts: the job still knows the node as lost, so its next srun runs on the node it has
# left, an srun -w naming the failed node is refused, and the job completes. The same job
# without --no-kill is ended NODE_FAIL by the failover.
name="no_kill"
. "$(dirname "$0")/lib.sh"

slurm_names sbatch srun

start_cluster --workers 2 --topology "$src/tests/topologies/ws-4gpu.xml" --heartbeat 1s \
  --fence-timeout 5s --kill-grace 1s

# job NAME [SBATCH-OPTIONS...]: a two-node batch job whose script runs a step on both nodes,
# waits for gate NAME, then runs a step on whatever it has; prints its id.
job() {
  local name=$1
  shift
  cat > "$work/$name.sh" <<EOF
#!/bin/bash
#SBATCH -N 2
#SBATCH -o $work/$name.out
srun -l bash -c 'echo "BEFORE \$SLURMD_NODENAME"'
$(gate_wait "$name")
srun -l bash -c 'echo "AFTER \$SLURMD_NODENAME"'
echo "AFTER_RC=\$?"
srun -w "\$(cat $work/$name.lost)" true
echo "LOST_RC=\$?"
EOF
  local out
  out=$(sbatch --parsable "$@" "$work/$name.sh" 2>&1) || fail "sbatch $name: $out"
  echo "$out"
}

# kill_second ID NAME: kills the worker of the job's second node once its first step ran.
kill_second() {
  local id=$1 name=$2 node pid
  wait_for "$name's first step" 20 eval "[ \"\$(grep -c '^[01]: BEFORE' '$work/$name.out' 2>/dev/null)\" = 2 ]"
  node=$(jq "$id" 'j["allocation"][1]["node_name"]')
  echo "$node" > "$work/$name.lost"
  pid=$(cat "$state/$node.pid")
  mapfile -d '' worker_cmd < "/proc/$pid/cmdline"
  printf '%s\0' "${worker_cmd[@]}" > "$work/$node.cmd"
  kill -9 "$pid"
  echo "$node"
}
node_up() { "$bin/gsched" nodes --json "$1" | python3 -c '
import json, sys
sys.exit(0 if json.load(sys.stdin)[0]["state"] == "up" else 1)'; }
# bring_back NODE: its worker again, as up started it, and waits for the node to be up.
bring_back() {
  mapfile -d '' worker_cmd < "$work/$1.cmd"
  respawn "$1" "${worker_cmd[@]}" </dev/null >>"$state/$1.log" 2>&1 &
  echo $! > "$state/$1.pid"
  wait_for "$1 back" 20 node_up "$1"
}

id=$(job keep --no-kill)
wait_start "$id"
lost=$(kill_second "$id" keep)
wait_for "the job to run on without $lost" 30 \
  is "$id" 'any("runs on without it (--no-kill)" in e["reason"] for e in h)'
expect "$id" 'j["state"] == "RUNNING"' "still RUNNING after losing $lost"
bring_back "$lost"
restart_sched 2
wait_for "$lost up after the restart" 20 node_up "$lost"
expect "$id" 'j["state"] == "RUNNING"' "still RUNNING after gschedd's restart"
gate keep
wait_end "$id" 30 || true
out=$work/keep.out
expect "$id" 'j["state"] == "COMPLETED"' "COMPLETED, output: $(cat "$out")"
[ "$(grep -c '^0: AFTER ' "$out")" = 1 ] && ! grep -q '^1: AFTER' "$out" ||
  fail "the step after the failure did not run on the one node left: $(cat "$out")"
! grep -q "^0: AFTER $lost\$" "$out" || fail "a step ran on the failed node $lost: $(cat "$out")"
grep -q '^AFTER_RC=0$' "$out" || fail "the step after the failure failed: $(cat "$out")"
grep -q "node '$lost' (-w) of job $id failed (the job runs on: --no-kill)" "$out" ||
  fail "srun -w $lost was not refused as failed: $(cat "$out")"
grep -q '^LOST_RC=1$' "$out" || fail "srun -w $lost: $(cat "$out")"
expect "$id" 'sum("runs on without it (--no-kill)" in e["reason"] for e in h) == 1' \
  "the node's loss noted once"

# The same job without --no-kill.
id=$(job fail)
wait_start "$id"
lost=$(kill_second "$id" fail)
wait_end "$id" 40 || true # the failover ends it; its gate never opens
expect "$id" 'j["state"] == "NODE_FAIL"' "NODE_FAIL without --no-kill"
bring_back "$lost"

stop_cluster
check_logs
echo "$name: all checks passed"
