#!/usr/bin/env bash
# suspend.sh BIN_DIR SRC_DIR: `scontrol suspend` and `resume`, on a `gsched up` cluster of
# two workers (1 s kill grace). A 2-node job's processes on both nodes stop (state T) and
# squeue and gsched wait show it S (SUSPENDED); it stays suspended across a gschedd restart and runs on once resumed.
# A job with a 4 s time limit, suspended for longer than that, runs on when resumed and times
# out only once it has run 4 s in all; an srun step asked for while it is suspended waits
# and runs once it resumes. A suspended job that is cancelled ends at once on
# its SIGTERM (continued, not killed after the grace). Pending and already suspended jobs,
# and users other than root, are refused.
name="integration_suspend"
. "$(dirname "$0")/lib.sh"

start_cluster --workers 2 --gpus-per-node 0 --kill-grace 1s
slurm_names sbatch squeue scontrol srun sacct

# stopped PID: every process of PID's group is stopped (T), but for zombies: a child (the
# gate loop's sleep) that exited as the stop came stays one, its stopped parent not reaping it.
stopped() {
  local states
  states=$(ps -o stat= -g "$1") || return 1
  grep -q '^T' <<< "$states" && ! grep -qv '^[TZ]' <<< "$states"
}
# running PID: no process of PID's group is stopped.
running() {
  local states
  states=$(ps -o stat= -g "$1") || return 1
  [ -n "$states" ] && ! grep -q '^T' <<< "$states"
}
st() { squeue -h -j "$1" -o %t; }
# api JOB EXPR: a Python expression over gschedd's /api/v1/jobs/JOB as d.
api() {
  wait_for "http.addr" 10 test -s "$state/http.addr"
  python3 -c 'import json, sys, urllib.request
d = json.load(urllib.request.urlopen("http://" + open(sys.argv[1]).read().strip() + "/api/v1/jobs/" + sys.argv[2]))
print(eval(sys.argv[3]))' "$state/http.addr" "$1" "$2" || fail "api $1 '$2'"
}

# --- a 2-node job: stopped on both nodes, kept across a restart, continued --------------------
job_file two.toml "name = \"two\"
[resources]
nodes = 2
[run]
script = '''
echo \$\$ > $tmp/pid.\$GSCHED_NODE_RANK
$(gate_wait two)
'''"
a=$(submit two.toml)
wait_start "$a"
wait_for "both tasks" 15 eval "[ -s $tmp/pid.0 ] && [ -s $tmp/pid.1 ]"
p0=$(cat "$tmp/pid.0") p1=$(cat "$tmp/pid.1")
out=$(scontrol suspend "$a" 2>&1) || fail "suspend: $out"
[ -z "$out" ] || fail "suspend said something: $out"
wait_for "job $a's tasks to stop" 10 eval "stopped $p0 && stopped $p1"
[ "$(st "$a")" = S ] || fail "squeue shows job $a as $(st "$a"), not S"
expect "$a" 'j["state"] == "RUNNING" and j.get("suspended")' "RUNNING and suspended"
out=$(scontrol suspend "$a" 2>&1) && fail "suspended twice: $out"
grep -q "already suspended" <<< "$out" || fail "second suspend: $out"
[ "$(api "$a" 'd["state"] == "RUNNING" and d["suspended"]')" = True ] || fail "api: $(api "$a" d)"
ran=$(api "$a" 'd["run_ms"]')
# gsched wait shows it suspended: its status line (not a terminal: on stderr) and --json.
out=$("$bin/gsched" wait "$a" --timeout 1s 2>&1 >/dev/null)
grep -q "^job $a SUSPENDED " <<< "$out" || fail "gsched wait's line: $out"
out=$("$bin/gsched" wait "$a" --start --json) || fail "gsched wait --start: $out"
python3 -c 'import json, sys; j = json.loads(sys.argv[1])["jobs"][0]
sys.exit(0 if j["state"] == "RUNNING" and j["suspended"] and j["suspend_time_ms"] > 0 else 1)' \
  "$out" || fail "gsched wait --start --json: $out"

restart_sched 2
[ "$(st "$a")" = S ] || fail "after a restart squeue shows job $a as $(st "$a"), not S"
[ "$(api "$a" 'd["run_ms"]')" = "$ran" ] || fail "the run time moved while suspended: $ran, then $(api "$a" d)"
stopped "$p0" && stopped "$p1" || fail "a task of job $a runs again after the restart"
out=$(scontrol resume "$a" 2>&1) || fail "resume: $out"
wait_for "job $a's tasks to run" 10 eval "running $p0 && running $p1"
[ "$(st "$a")" = R ] || fail "squeue shows the resumed job $a as $(st "$a")"
out=$(scontrol resume "$a" 2>&1) && fail "resumed twice: $out"
# Once resumed, show job says when (SuspendTime) and what it had run before (SecsPreSuspend),
# as Slurm keeps them, across a gschedd restart too.
resumed() {
  scontrol show job "$a" | grep -qE "SuspendTime=[0-9]{4}-[0-9-]+T[0-9:]+ SecsPreSuspend=[0-9]+$"
}
resumed || fail "show job after the resume: $(scontrol show job "$a")"
restart_sched 2
resumed || fail "show job after the resume and a restart: $(scontrol show job "$a")"
gate two
wait_end "$a" || fail "job $a failed: $(jq "$a" 'j')"
expect "$a" 'j["state"] == "COMPLETED" and not j.get("suspended")' "COMPLETED"

# --- the time limit leaves the suspended time out ---------------------------------------------
b=$(sbatch_id -t 0:04 --wrap="echo \$\$ > $tmp/pid.b; $(gate_wait never)")
wait_start "$b"
wait_for "job $b's task" 15 test -s "$tmp/pid.b"
pb=$(cat "$tmp/pid.b")
out=$(scontrol suspend "$b" 2>&1) || fail "suspend: $out"
wait_for "job $b's task to stop" 10 stopped "$pb"
ms() { date +%s%3N; }
t0=$(ms) # in ms: $SECONDS counts whole seconds, and 6 of them may be 5.01 s
# A step asked for meanwhile waits for the resume.
srun --jobid="$b" -n1 echo step-ran > "$tmp/srun.out" 2> "$tmp/srun.err" &
srun_pid=$!
wait_for "srun to wait" 10 grep -q "(Job is suspended)" "$tmp/srun.err"
# Past its limit of run time while stopped: it must not time out.
while [ $(($(ms) - t0)) -lt 6000 ]; do
  [ "$(job_state "$b")" = RUNNING ] || fail "job $b ended while suspended: $(jq "$b" 'j')"
  sleep 0.2
done
[ -s "$tmp/srun.out" ] && fail "a step ran in the suspended job: $(cat "$tmp/srun.out")"
out=$(scontrol resume "$b" 2>&1) || fail "resume: $out"
wait_for "srun to end" 15 eval "! kill -0 $srun_pid"
wait "$srun_pid" || fail "srun failed after the resume: $(cat "$tmp/srun.err")"
grep -qx step-ran "$tmp/srun.out" || fail "the step did not run: $(cat "$tmp/srun.out" "$tmp/srun.err")"
wait_end "$b" 20
expect "$b" 'j["state"] == "TIMEOUT"' "TIMEOUT once resumed"
[ $(($(ms) - t0)) -ge 6000 ] || fail "job $b timed out too early"
expect "$b" 'j["end_time_ms"] - j["start_time_ms"] >= 9000' "a run of 4 s and a suspension of 6 s at least"
susp=$(sacct -j "$b" -n -X -P -o suspended)
[ "$(echo "$susp" | awk -F: '{ print $1 * 3600 + $2 * 60 + $3 }')" -ge 6 ] ||
  fail "sacct Suspended of job $b: '$susp'"

# --- a step's own time leaves out its job's suspension, across a gschedd restart too ------------
e=$(sbatch_id --wrap="srun -n1 sh -c 'echo \$\$ > $tmp/pid.e; $(gate_wait stepe)'")
wait_start "$e"
wait_for "job $e's step" 15 test -s "$tmp/pid.e"
out=$(scontrol suspend "$e" 2>&1) || fail "suspend: $out"
wait_for "job $e's step to stop" 10 stopped "$(cat "$tmp/pid.e")"
t0=$(ms)
while [ $(($(ms) - t0)) -lt 3000 ]; do
  [ "$(job_state "$e")" = RUNNING ] || fail "job $e ended while suspended: $(jq "$e" 'j')"
  sleep 0.2
done
out=$(scontrol resume "$e" 2>&1) || fail "resume: $out"
wait_for "job $e's step to run" 10 running "$(cat "$tmp/pid.e")"
gate stepe
wait_end "$e" 20 || fail "job $e: $(jq "$e" 'j')"
restart_sched 2
# The step ran within the job, its suspension left out of both: not longer than the job. It
# spans the job's 3 s of suspension, which would count otherwise.
job_s=$(sacct -j "$e" -n -X -P -o ElapsedRaw)
step_s=$(sacct -j "$e.0" -n -P -o ElapsedRaw)
wall_s=$(jq "$e" '(j["end_time_ms"] - j["start_time_ms"]) // 1000')
[ -n "$step_s" ] && [ "$step_s" -le "$job_s" ] && [ "$wall_s" -ge $((step_s + 3)) ] ||
  fail "job $e ran ${job_s}s (${wall_s}s with its suspension), its step ${step_s}s"

# --- cancel of a suspended job: its SIGTERM is delivered -----------------------------------------
c=$(sbatch_id --wrap="echo \$\$ > $tmp/pid.c; $(gate_wait never)")
wait_start "$c"
wait_for "job $c's task" 15 test -s "$tmp/pid.c"
out=$(scontrol suspend "$c" 2>&1) || fail "suspend: $out"
wait_for "job $c's task to stop" 10 stopped "$(cat "$tmp/pid.c")"
"$bin/gsched" cancel "$c" >/dev/null 2>&1 || fail "cancel of suspended job $c refused"
wait_end "$c" 10
expect "$c" 'j["state"] == "CANCELLED" and t[0]["term_signal"] == 15' "CANCELLED by its SIGTERM"

# --- refusals -------------------------------------------------------------------------------------
d=$(sbatch_id --hold --wrap=true)
out=$(scontrol suspend "$d" 2>&1) && fail "a pending job was suspended: $out"
grep -q "only running jobs" <<< "$out" || fail "suspend of a pending job: $out"
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
  chmod 711 "$tmp" "$state" # the socket is 0666: let others through the directories
  e=$(sbatch_id --wrap="$(gate_wait e)")
  wait_start "$e"
  out=$(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups "$bin/gsched" scontrol suspend "$e" 2>&1) &&
    fail "nobody suspended a job: $out"
  grep -q "only root" <<< "$out" || fail "nobody's suspend: $out"
  [ "$(st "$e")" = R ] || fail "job $e is $(st "$e") after a refused suspend"
  gate e
  wait_end "$e"
fi
"$bin/gsched" cancel "$d" >/dev/null 2>&1

check_logs
stop_cluster
echo "$name: passed"
