#!/usr/bin/env bash
# ddp.sh BIN_DIR SRC_DIR MODE: data-parallel gsched-train launched by gsched (issue 7), on a
# `gsched up` cluster of three workers with 1 s heartbeats (MODE mpi; without MPI there is
# nothing to launch). A 2-node job file with launcher = "mpi":
#   - its one leader task on the first node runs mpirun, whose daemons are srun steps of
#     the job started through gsched rsh: one rank per node, each on its own node's worker;
#   - `gsched mpirun` outside a job, and a launcher typo, are refused with a reason;
#   - kill -9 of the worker under rank 1 after the first checkpoint, and then (that worker
#     restarted) of the one under the leader, mpirun: each time the job is REQUEUED, runs
#     again on two live nodes, resumes from its last checkpoint and ends COMPLETED at the
#     same final losses as the uninterrupted run; nothing of the first attempt lingers.
name="integration_ddp"
. "$(dirname "$0")/lib.sh"
mode=${3:-local}
if [ "$mode" != mpi ]; then
  echo "$name: built without MPI; nothing to run"
  exit 0
fi
# MPI's libraries leak by design; the ranks and launchers under the sanitizer build say so.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
export PATH="$bin:$PATH" # the job's environment is submit's: gsched-train is found there

start_cluster --workers 3 --gpus-per-node 0 --heartbeat 1s --kill-grace 1s --fence-timeout 5s

train_data "$tmp/data"
train_cfg "$work/cfg.toml" "$tmp/data" 200
printf '[eval]\nevery = 100\nbatches = 2\n' >> "$work/cfg.toml"
ddp_job() { # ddp_job FILE OUT_DIR
  job_file "$1" "name = \"ddp\"
[resources]
nodes = 2
cpus_per_task = 1
[run]
launcher = \"mpi\"
command = [\"gsched-train\", \"train\", \"cfg.toml\", \"--out_dir=$2\"]
stdout = \"$2.out\"
[restart]
max_restarts = 1"
}

# --- refused: outside a job, and a launcher that does not exist ----------------------------
out=$(env -u GSCHED_JOB_ID -u SLURM_JOB_ID "$bin/gsched" mpirun -- true 2>&1) &&
  fail "gsched mpirun outside a job ran: $out"
case $out in *"runs inside a job"*) ;; *) fail "gsched mpirun outside a job: $out" ;; esac
job_file typo.toml '[resources]
nodes = 2
[run]
launcher = "mpich"
command = ["true"]'
out=$("$bin/gsched" submit typo.toml 2>&1) && fail "launcher = mpich submitted: $out"
case $out in *"typo.toml:4:12: run.launcher must be"*) ;; *) fail "launcher typo: $out" ;; esac
[ "$(queue_count)" = 0 ] || fail "a refused job was queued"

# --- uninterrupted: the reference run -------------------------------------------------------
ddp_job ref.toml ref
ref=$(submit ref.toml)
wait_end "$ref" 240 || fail "the reference run failed: $(tail -20 "$work/ref.out")"
expect "$ref" 'j["restart_count"] == 0 and len(j["allocation"]) == 2 and
  len({a["node_name"] for a in j["allocation"]}) == 2' "one run on two nodes"
grep -q "data parallel: 2 ranks (mpi)" "$work/ref.out" || fail "not 2 MPI ranks: $(head "$work/ref.out")"
grep -q "^done: 200 steps" "$work/ref.out" || fail "the reference run: $(tail "$work/ref.out")"
# Each rank ran under its own node's worker: rank 1's daemon was a step there.
second=$(jq "$ref" 'j["allocation"][1]["node_name"]')
grep -qE "job=1 step=[1-9][0-9]* rank=0 .*task started" "$state/$second.log" ||
  fail "no rsh step on $second: $(tail "$state/$second.log")"

# --- kill -9 of a worker under the run after its first checkpoint --------------------------
# on_node PID NODE: the process runs on NODE. On one address mpirun starts every rank
# through `gsched rsh`, under its node's worker (SLURMD_NODENAME); with --netns the leader's
# node is mpirun's own host, whose rank it starts itself, so there it is the node's UTS
# namespace (its host name) that tells.
on_node() {
  if [ "${GSCHED_TEST_NETNS:-0}" = 1 ]; then
    [ "$(readlink "/proc/$1/ns/uts")" = "$(readlink "/proc/$(cat "$state/$2.pid")/ns/uts")" ]
  else
    tr '\0' '\n' < "/proc/$1/environ" 2> /dev/null | grep -qx "SLURMD_NODENAME=$2"
  fi
}
# stop_rank OUT_DIR NODE: SIGSTOP to the job's gsched-train rank that runs on NODE.
stop_rank() {
  local pid stopped=0
  for pid in $(pgrep -x gsched-train); do
    tr '\0' '\n' < "/proc/$pid/cmdline" 2> /dev/null | grep -qx -- "--out_dir=$1" || continue
    on_node "$pid" "$2" || continue
    kill -STOP "$pid" && stopped=$((stopped + 1))
  done
  [ "$stopped" = 1 ] || fail "$1: $stopped ranks of the run on $2, not one"
}
# The dead worker's rank and daemon outlive it until gschedd declares the node down (3
# missed heartbeats), as ranks on a node cut off from the network would. lose_node OUT_DIR ALLOC_INDEX: the worker under that node of the job.
lose_node() {
  local out=$1 at=$2 id victim victim_pid resumed
  ddp_job "$out.toml" "$out"
  id=$(submit "$out.toml")
  wait_start "$id" 30
  victim=$(jq "$id" "j['allocation'][$at]['node_name']")
  wait_for "the first checkpoint" 120 test -e "$work/$out/checkpoints/ckpt-00000020.gstf"
  # The run must not finish before gschedd finds the node gone: the rank on the node that
  # stays is stopped, so every rank waits in its next all-reduce until the job is killed.
  stop_rank "$out" "$(jq "$id" "j['allocation'][$((1 - at))]['node_name']")"
  victim_pid=$(cat "$state/$victim.pid")
  mapfile -d '' victim_cmd < "/proc/$victim_pid/cmdline"
  kill -9 "$victim_pid"
  wait_for "the job requeued" 30 is "$id" '"REQUEUED" in [e["state"] for e in h]'
  wait_end "$id" 240 || fail "the requeued run failed: $(jq "$id" "[j, h]"); $(tail -20 "$work/$out.out")"
  expect "$id" 'j["state"] == "COMPLETED" and j["restart_count"] == 1 and
    [e["state"] for e in h][-3:] == ["REQUEUED", "RUNNING", "COMPLETED"] and
    "'"$victim"'" not in [a["node_name"] for a in j["allocation"]]' "requeued and completed elsewhere"
  resumed=$(sed -n 's/^resuming from .* at step \([0-9]*\)$/\1/p' "$work/$out.out")
  [ -n "$resumed" ] && [ "$resumed" -ge 20 ] && [ "$resumed" -lt 200 ] ||
    fail "the second attempt did not resume from a checkpoint: $(head -20 "$work/$out.out")"
  grep -q "^done: 200 steps" "$work/$out.out" || fail "the resumed run: $(tail "$work/$out.out")"
  # Same data in the same order: the resumed run ends where the uninterrupted one does.
  python3 - "$work/ref/metrics.jsonl" "$work/$out/metrics.jsonl" << 'PY' || fail "$out: losses differ"
import json, sys
def last(path):
    recs = [json.loads(l) for l in open(path)]
    return {k: [r["loss"] for r in recs if r["kind"] == k][-1] for k in ("train", "eval")}
a, b = last(sys.argv[1]), last(sys.argv[2])
for k in a:
    if abs(a[k] - b[k]) > 1e-6 * abs(a[k]):
        sys.exit(f"final {k} loss {b[k]} after the requeue, {a[k]} uninterrupted")
print(f"final losses equal: {a}")
PY
  # The dead worker's rank and daemon end with mpirun, which lost them (or, on the leader's
  # node, with the daemons mpirun loses): nothing of the job stays behind on the machine.
  wait_for "the first attempt's ranks to end" 30 eval "! pgrep -f -- '--out_dir=$out' >/dev/null"
  # Started again as `up` started it, the worker's node takes jobs again.
  respawn "$victim" "${victim_cmd[@]}" >> "$state/$victim.log" 2>&1 < /dev/null &
  extra_pids+=("$!")
  echo "$!" > "$state/$victim.pid"
  wait_for "$victim back" 15 eval "\"$bin/gsched\" nodes --json $victim | python3 -c 'import json,sys; sys.exit(json.load(sys.stdin)[0][\"state\"] != \"up\")'"
}
lose_node lost 1   # rank 1's node
lose_node leader 0 # the leader's: mpirun itself is cut off
check_logs
stop_cluster
echo "$name: passed"
