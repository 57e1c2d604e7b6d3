#!/usr/bin/env bash
# step_acct.sh BIN_DIR SRC_DIR: accounting per job step, as Slurm's sacct and sstat show it,
# on a one-worker `gsched up` cluster. An sbatch job runs two srun steps: step 0 (srun -t 10)
# holds ~50 MB (written, so resident) and waits for a gate, step 1 exits 3. While step 0 runs, sstat shows
# it with its RSS from the heartbeats (-a: the batch step too); once the job ended, sacct
# shows JOB, JOB.batch, JOB.0 and JOB.1 with their names, states, exit codes, tasks, nodes and
# MaxRSS (wait4's peak of step 0 between 40 and 400 MiB), -X the job alone, -j JOB.1 that
# step alone, --json the steps; sstat of the ended job and of an unknown one fails as Slurm's.
# squeue -s lists the running steps (the batch shell and step 0, with its limit), --steps= one
# of them; scontrol show step the same as Key=Value records with each step's TimeLimit, CPUs
# and TRES (-o: one line each), one by its id, and says an ended or unknown one is not found;
# sacct shows step 0's AllocCPUS, AllocTRES and CPUTime.
# gschedd is then restarted and sacct shows the same rows from its database.
name="step_acct"
. "$(dirname "$0")/lib.sh"

slurm_names sbatch srun sacct sstat squeue scontrol

start_cluster --workers 1 --heartbeat 1s --kill-grace 1s

# kib TEXT: a Slurm memory figure ("51234K", "50M", "1G", "0") in KiB.
kib() {
  python3 -c '
import sys
t = sys.argv[1]
m = {"K": 1, "M": 1024, "G": 1024 ** 2, "T": 1024 ** 3}
print(int(t[:-1]) * m[t[-1]] if t and t[-1] in m else int(t or 0))' "$1"
}
# rss_over JOB.STEP KIB: sstat shows the running step with a MaxRSS above KIB (for wait_for).
rss_over() {
  local line
  line=$(sstat -j "$1" -P -n -o JobID,MaxRSS) || return 1
  [ "${line%%|*}" = "$1" ] && [ "$(kib "${line#*|}")" -gt "$2" ]
}

# The ~50 MB step: the bytes are written (b"x" * n), so every page is resident.
cat > "$work/big.py" <<EOF
import os, time
held = b"x" * (50 * 1024 * 1024)
open("$tmp/big.up", "w").close()
i = 0
while not os.path.exists("$gates/big") and i < 600:
    time.sleep(0.05)
    i += 1
EOF
cat > "$work/acct.sh" <<EOF
#!/bin/bash
#SBATCH -J acct
#SBATCH -o $work/acct.out
#SBATCH -N 1
#SBATCH -n 1
srun -J big -t 10 python3 $work/big.py
echo "BIG_RC=\$?"
srun sh -c 'exit 3'
echo "THREE_RC=\$?"
EOF
id=$(sbatch --parsable "$work/acct.sh" 2>&1) || fail "sbatch acct.sh refused: $id"
[[ $id =~ ^[0-9]+$ ]] || fail "sbatch acct.sh printed '$id'"

# --- sstat on the running step ---------------------------------------------------------------
wait_for "step 0 to hold its memory" 30 test -e "$tmp/big.up"
wait_for "sstat to show step $id.0 over 40 MiB" 20 rss_over "$id.0" $((40 * 1024))
out=$(sstat -j "$id" -P -n -o JobID,MaxRSSNode,MaxRSSTask,NTasks) || fail "sstat -j $id: $out"
[ "$out" = "$id.0|node1|0|1" ] || fail "sstat -j $id (the lowest srun step) printed: $out"
out=$(sstat -a -j "$id" -P -n -o JobID,NTasks) || fail "sstat -a -j $id: $out"
[ "$(printf '%s\n' "$out" | sort)" = "$(printf '%s\n' "$id.0|1" "$id.batch|1")" ] ||
  fail "sstat -a -j $id printed: $out"
out=$(squeue -s -h -o '%i|%j|%u|%N|%A|%l') || fail "squeue -s: $out"
[ "$out" = "$(printf '%s\n' "$id.batch|batch|$(id -un)|node1|1|UNLIMITED" "$id.0|big|$(id -un)|node1|1|10:00")" ] ||
  fail "squeue -s printed: $out"
out=$(squeue --steps="$id.0" -h -o '%i %j') || fail "squeue --steps=$id.0: $out"
[ "$out" = "$id.0 big" ] || fail "squeue --steps=$id.0 printed: $out"
out=$(squeue -s -j "$id") || fail "squeue -s -j $id: $out"
[ "$(head -1 <<< "$out" | tr -s ' ')" = " STEPID NAME PARTITION USER TIME NODELIST" ] ||
  fail "squeue -s's header: $out"
out=$(scontrol show step) || fail "scontrol show step: $out"
grep -Eq "^StepId=$id\.0 UserId=$(id -u) StartTime=[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8} TimeLimit=00:10:00\$" <<< "$out" ||
  fail "scontrol show step printed: $out"
grep -q "^   State=RUNNING Partition=.* NodeList=node1\$" <<< "$out" || fail "scontrol show step: $out"
grep -q "^   Nodes=1 CPUs=1 Tasks=1 Name=big\$" <<< "$out" || fail "scontrol show step: $out"
grep -q "^   TRES=cpu=1,node=1\$" <<< "$out" || fail "scontrol show step: $out"
grep -Eq "^StepId=$id\.batch .* TimeLimit=UNLIMITED\$" <<< "$out" || fail "scontrol show step: $out"
grep -q "^StepId=$id\.batch " <<< "$out" || fail "scontrol show step has no batch step: $out"
out=$(scontrol -o show step "$id.0") || fail "scontrol -o show step $id.0: $out"
[ "$(wc -l <<< "$out")" = 1 ] && grep -q "^StepId=$id\.0 .* State=RUNNING .* Name=big TRES=cpu=1,node=1\$" <<< "$out" ||
  fail "scontrol -o show step $id.0 printed: $out"
out=$(scontrol show step "$id.1" 2>&1) && fail "scontrol show step $id.1 (not started): $out"
grep -q "^scontrol: error: Job step $id.1 not found\$" <<< "$out" || fail "scontrol show step $id.1: $out"
out=$(squeue --steps=x.y 2>&1) && fail "squeue --steps=x.y: $out"
grep -q "squeue: error: Invalid job step id" <<< "$out" || fail "squeue --steps=x.y: $out"
out=$(sstat -j "$id.0") || fail "sstat -j $id.0: $out"
[ "$(printf '%s\n' "$out" | head -1 | tr -s ' ')" = "JobID MaxRSS MaxRSSNode MaxRSSTask AveCPU NTasks " ] ||
  fail "sstat's header: $out"
gate big

wait_end "$id" 30 || true
[ "$(job_state "$id")" = COMPLETED ] || fail "job: $(jq "$id" 'j') output: $(cat "$work/acct.out")"
grep -q '^BIG_RC=0$' "$work/acct.out" && grep -q '^THREE_RC=3$' "$work/acct.out" ||
  fail "the steps' exit statuses: $(cat "$work/acct.out")"

# --- sacct's rows ----------------------------------------------------------------------------
fmt=JobID,JobName,State,ExitCode,NTasks,NNodes,NodeList,MaxRSSNode,MaxRSSTask
rows=$(sacct -j "$id" -P -n -o "$fmt") || fail "sacct -j $id: $rows"
expect=$(printf '%s\n' "$id|acct|COMPLETED|0:0|1|1|node1||" "$id.batch|batch|COMPLETED|0:0|1|1|node1|node1|0" \
  "$id.0|big|COMPLETED|0:0|1|1|node1|node1|0" "$id.1|sh|FAILED|3:0|1|1|node1|node1|0")
[ "$rows" = "$expect" ] || fail "sacct -j $id printed
$rows
expected
$expect"
rss=$(sacct -j "$id.0" -P -n -o MaxRSS) || fail "sacct -j $id.0: $rss"
[ "$(kib "$rss")" -gt $((40 * 1024)) ] && [ "$(kib "$rss")" -lt $((400 * 1024)) ] ||
  fail "step 0's MaxRSS is $rss, not between 40 and 400 MiB"
python3 - "$(sacct -j "$id" -P -n -o JobID,Start,End,Elapsed)" "$id" <<'PY' || fail "the steps' times"
import sys
rows = [line.split("|") for line in sys.argv[1].splitlines()]
assert len(rows) == 4, rows
for job_id, start, end, elapsed in rows:
    assert start != "Unknown" and end != "Unknown" and start <= end, rows
    assert elapsed.count(":") == 2, rows
PY
out=$(sacct -j "$id.0" -P -n -o AllocCPUS,AllocTRES,Elapsed,CPUTime) || fail "sacct -j $id.0: $out"
IFS='|' read -r cpus tres elapsed cputime <<< "$out"
[ "$cpus|$tres" = "1|cpu=1,node=1" ] && [ "$cputime" = "$elapsed" ] ||
  fail "sacct -j $id.0 (what the step was given) printed: $out"
out=$(sacct -X -j "$id" -P -n -o JobID) || fail "sacct -X: $out"
[ "$out" = "$id" ] || fail "sacct -X -j $id printed: $out"
out=$(sacct -j "$id.1" -P -n -o JobID,ExitCode) || fail "sacct -j $id.1: $out"
[ "$out" = "$id.1|3:0" ] || fail "sacct -j $id.1 printed: $out"
out=$(sacct -j "$id" -n -o JobID,State,ExitCode) || fail "sacct -j $id: $out"
printf '%s\n' "$out" | grep -Eq "^$id\\.1 +FAILED +3:0 \$" || fail "sacct's table: $out"
sacct -j "$id" --json | python3 -c '
import json, sys
steps = json.load(sys.stdin)["jobs"][0]["steps"]
assert [s["step_id"] for s in steps] == ["batch", "0", "1"], steps
assert steps[2]["state"] == "FAILED" and steps[2]["exit_code"] == 3, steps
assert steps[1]["max_rss_kib"] > 40 * 1024, steps' || fail "sacct --json: $(sacct -j "$id" --json)"

# --- sstat of a job that ended, and of none --------------------------------------------------
for j in "$id" 999999; do
  out=$(sstat -j "$j" 2>&1) && fail "sstat -j $j succeeded: $out"
  printf '%s\n' "$out" | grep -qx "sstat: error: couldn't get steps for job $j" ||
    fail "sstat -j $j printed: $out"
done
out=$(sstat 2>&1) && fail "sstat without -j succeeded: $out"

# --- a gschedd restart: the rows come back from its database -----------------------------------
# A second job's step runs across it: gschedd keeps it, its srun reattaches and it ends
# COMPLETED once let go; the batch step runs on and ends with its job.
cat > "$work/across.sh" <<EOF
#!/bin/bash
#SBATCH -J across
#SBATCH -o $work/across.out
#SBATCH -N 1
srun -J hold bash -c 'touch $tmp/hold.up; $(gate_wait hold)'
echo "HOLD_RC=\$?"
$(gate_wait after)
EOF
id2=$(sbatch --parsable "$work/across.sh" 2>&1) || fail "sbatch across.sh refused: $id2"
wait_for "step $id2.0 to run" 30 test -e "$tmp/hold.up"
[ "$(sacct -j "$id2.0" -P -n -o State)" = RUNNING ] || fail "step $id2.0: $(sacct -j "$id2")"
all=$(sacct -j "$id" -P -n -o "$fmt,MaxRSS,Start,End,AllocCPUS,AllocTRES") || fail "sacct: $all"
restart_sched 1
wait_for "job $id2's srun to reattach" 30 grep -q '^srun: reattached to StepId=' "$work/across.out"
after=$(sacct -j "$id" -P -n -o "$fmt,MaxRSS,Start,End,AllocCPUS,AllocTRES") ||
  fail "sacct after the restart: $after"
[ "$after" = "$all" ] || fail "sacct changed across the restart:
$all
became
$after"
out=$(sacct -j "$id2" -P -n -o JobID,JobName,State) || fail "sacct -j $id2: $out"
[ "$out" = "$(printf '%s\n' "$id2|across|RUNNING" "$id2.batch|batch|RUNNING" "$id2.0|hold|RUNNING")" ] ||
  fail "sacct -j $id2 after the restart: $out"
gate hold
wait_for "job $id2's srun to end" 30 grep -q '^HOLD_RC=' "$work/across.out"
grep -q '^HOLD_RC=0$' "$work/across.out" || fail "the step across the restart: $(cat "$work/across.out")"
gate after
wait_end "$id2" 30 || true
out=$(sacct -j "$id2" -P -n -o JobID,State,ExitCode) || fail "sacct -j $id2: $out"
[ "$out" = "$(printf '%s\n' "$id2|COMPLETED|0:0" "$id2.batch|COMPLETED|0:0" "$id2.0|COMPLETED|0:0")" ] ||
  fail "sacct -j $id2 once it ended: $out"
check_logs
exit 0
