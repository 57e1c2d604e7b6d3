#!/usr/bin/env bash
# srun.sh BIN_DIR SRC_DIR: srun inside a batch job, end to end on a `gsched up` cluster of two
# workers with the hardware of tests/topologies/ws-4gpu.xml (4 GPUs, 16 cores each), through
# `sbatch` and `srun` links to gsched on PATH as job scripts call them: a step across both
# nodes (its output forwarded, -l labels, SLURM_PROCID / SLURM_STEP_ID / SLURMD_NODENAME per
# task, step ids counting up), srun's exit status (the worst task's, 128 + signal for a
# killed one, Slurm's "Exited with exit code" lines), layouts (-n 1, -w, --gpus-per-task)
# and the ones refused, a signal forwarded to the tasks, srun killed ending its tasks, and
# srun outside a job asking for more nodes than there are, or with an unknown option, refused;
# --multi-prog's MPMD lines, a step's own -t and -W's end after the first exit.
name="srun"
. "$(dirname "$0")/lib.sh"

slurm_names sbatch srun scontrol sacct

start_cluster --workers 2 --topology "$src/tests/topologies/ws-4gpu.xml" --heartbeat 1s \
  --kill-grace 1s

# has FILE REGEX: the file has a line matching the extended regex.
has() {
  grep -Eq -- "$2" "$1" 2>/dev/null || fail "$1 has no line matching '$2'; it holds: $(cat "$1" 2>&1)"
}
count() { grep -Ec -- "$2" "$1" 2>/dev/null; }

# batch NAME SCRIPT-BODY: submits a batch script (2 nodes, 2 tasks each unless the body's
# #SBATCH lines say otherwise), waits for it to end, prints its job id.
batch() {
  local id
  printf '#!/bin/bash\n#SBATCH -J %s\n#SBATCH -o %s/%s.out\n%s\n' "$1" "$work" "$1" "$2" \
    > "$work/$1.sh"
  id=$(sbatch --parsable "$work/$1.sh" 2>&1) || fail "sbatch $1 refused: $id"
  [[ $id =~ ^[0-9]+$ ]] || fail "sbatch $1 printed '$id'"
  wait_end "$id" 30 || true
  echo "$id"
}

# --- outside a job, and bad options ---------------------------------------------------------
# Outside a job srun asks for an allocation of its own (salloc.sh): one no node holds fails.
(unset SLURM_JOB_ID SLURM_JOBID; srun -N3 true) > "$tmp/outside.txt" 2>&1 &&
  fail "srun -N3 outside a job on two nodes succeeded"
has "$tmp/outside.txt" '^srun: error: Unable to allocate resources: '
SLURM_JOB_ID=1 srun --no-such-option true > "$tmp/badopt.txt" 2>&1
[ $? = 1 ] || fail "an unknown option did not exit 1: $(cat "$tmp/badopt.txt")"
has "$tmp/badopt.txt" "^srun: error: unrecognized option '--no-such-option'\$"

# --- a step across both nodes: output, labels, per-task variables, step ids --------------------
id=$(batch steps "#SBATCH -N 2
#SBATCH --ntasks-per-node=2
srun -l bash -c 'echo \"TASK procid=\$SLURM_PROCID step=\$SLURM_STEP_ID node=\$SLURMD_NODENAME\"; echo \"ERR \$SLURM_PROCID\" >&2'
echo \"RC1=\$?\"
srun -l -n 1 bash -c 'echo \"ONE step=\$SLURM_STEP_ID ntasks=\$SLURM_NTASKS\"'
echo \"RC2=\$?\"")
out=$work/steps.out
[ "$(job_state "$id")" = COMPLETED ] || fail "steps job: $(jq "$id" 'j') output: $(cat "$out")"
for r in 0 1 2 3; do has "$out" "^$r: TASK procid=$r step=0 node=node[12]\$"; done
for r in 0 1 2 3; do has "$out" "^$r: ERR $r\$"; done
[ "$(sed -n 's/^[0-9]: TASK .* node=//p' "$out" | sort -u | wc -l)" = 2 ] ||
  fail "the step did not run on both nodes: $(cat "$out")"
[ "$(sed -n 's/^\([01]\): TASK .* node=\(.*\)/\2/p' "$out" | sort -u | wc -l)" = 1 ] ||
  fail "ranks 0 and 1 are not on one node: $(cat "$out")"
has "$out" '^RC1=0$'
has "$out" '^0: ONE step=1 ntasks=1$'
has "$out" '^RC2=0$'

# --- exit status: the worst task's; a signal as 128 + signal; layouts refused --------------------
id=$(batch status "#SBATCH -N 2
#SBATCH --ntasks-per-node=2
srun bash -c 'exit \$SLURM_PROCID'
echo \"RC=\$?\"
srun -n 2 bash -c 'kill -9 \$\$'
echo \"KILLED=\$?\"
srun -N 3 true
echo \"TOO_MANY_NODES=\$?\"
srun -n 9 true
echo \"TOO_MANY_TASKS=\$?\"
srun -w nosuchnode true
echo \"BAD_NODE=\$?\"
srun /no/such/program
echo \"NOEXEC=\$?\"")
out=$work/status.out
has "$out" '^RC=3$'
for r in 1 2 3; do has "$out" "^srun: error: node[12]: task $r: Exited with exit code $r\$"; done
[ "$(count "$out" 'task 0: Exited')" = 0 ] || fail "task 0 exited 0 but was reported: $(cat "$out")"
has "$out" '^KILLED=137$'
has "$out" '^srun: error: node[12]: task [01]: Killed$'
has "$out" '^TOO_MANY_NODES=1$'
has "$out" "^srun: error: Unable to create step for job $id: job $id has 2 nodes, the step asks for 3\$"
has "$out" '^TOO_MANY_TASKS=1$'
has "$out" '^BAD_NODE=1$'
has "$out" "node 'nosuchnode' \\(-w\\) is not one of job $id's nodes"
has "$out" '^NOEXEC=1$'
has "$out" '^srun: error: node[12]: task 0: could not start: .*/no/such/program'

# --- --multi-prog: each task runs its own line of an MPMD file -------------------------------------
printf '0 echo "MP head %%t"\n1-3 echo MP worker %%t off=%%o\n' > "$work/mp.conf"
id=$(batch mpmd "#SBATCH -N 2
#SBATCH --ntasks-per-node=2
srun --multi-prog $work/mp.conf
echo \"MPRC=\$?\"")
out=$work/mpmd.out
has "$out" '^MP head 0$'
for r in 1 2 3; do has "$out" "^MP worker $r off=$((r - 1))\$"; done
has "$out" '^MPRC=0$'

# --- a step's own time limit (-t) and -W's wait after the first exit ----------------------------
id=$(batch limits "#SBATCH -N 2
#SBATCH --ntasks-per-node=2
srun -t 0:01 bash -c 'while :; do sleep 0.05; done'
echo \"TIMED=\$?\"
srun -W 1 bash -c 'if [ \$SLURM_PROCID = 0 ]; then exit 0; fi; while :; do sleep 0.05; done'
echo \"WAITED=\$?\"
srun -t soon true
echo \"BADTIME=\$?\"
srun -t 5 bash -c 'echo \"LONG \$SLURM_PROCID\"'
echo \"INTIME=\$?\"")
out=$work/limits.out
[ "$(job_state "$id")" = COMPLETED ] || fail "limits job: $(jq "$id" 'j') output: $(cat "$out")"
has "$out" "^srun: error: \\*\\*\\* STEP $id\\.0 ON node[12] CANCELLED DUE TO TIME LIMIT \\*\\*\\*\$"
[ "$(count "$out" 'DUE TO TIME LIMIT')" = 1 ] || fail "the time limit was said more than once: $(cat "$out")"
has "$out" '^TIMED=1[0-9][0-9]$'
has "$out" '^srun: First task exited 1s ago$'
has "$out" "^srun: StepId=$id\\.1 tasks: 3 of 4 running\$"
has "$out" "^srun: Terminating StepId=$id\\.1\$"
has "$out" '^WAITED=1[0-9][0-9]$'
has "$out" "^srun: error: invalid --time 'soon'"
has "$out" '^BADTIME=1$'
[ "$(count "$out" '^LONG [0-3]$')" = 4 ] || fail "a step within its -t did not run: $(cat "$out")"
has "$out" '^INTIME=0$'
[ "$(sacct -n -P -j "$id.0" -o State)" = TIMEOUT ] ||
  fail "step $id.0 is not TIMEOUT in sacct: $(sacct -n -P -j "$id" -o JobID,State 2>&1)"

# --- -w, and one GPU per task -------------------------------------------------------------------
id=$(batch layout "#SBATCH -N 2
#SBATCH --ntasks-per-node=2
#SBATCH --gres=gpu:2
nodes=(\$(scontrol show hostnames \"\$SLURM_JOB_NODELIST\"))
srun -w \"\${nodes[1]}\" bash -c 'echo \"ON \$SLURMD_NODENAME\"'
echo \"SECOND=\${nodes[1]}\"
srun --gpus-per-task=1 bash -c 'echo \"GPU \$SLURM_PROCID \$SLURMD_NODENAME \$CUDA_VISIBLE_DEVICES\"'
echo \"RC=\$?\"")
out=$work/layout.out
second=$(sed -n 's/^SECOND=//p' "$out")
[ "$(count "$out" '^ON ')" = 2 ] || fail "-w: not two tasks: $(cat "$out")"
[ "$(sed -n 's/^ON //p' "$out" | sort -u)" = "$second" ] || fail "-w $second: $(cat "$out")"
[ "$(count "$out" '^GPU [0-3] node[12] [0-9]$')" = 4 ] || fail "gpus-per-task: $(cat "$out")"
for n in node1 node2; do
  g=$(sed -n "s/^GPU [0-3] $n //p" "$out" | sort -u | wc -l)
  [ "$g" = 2 ] || fail "gpus-per-task: $n's two tasks do not have one GPU each: $(cat "$out")"
done
has "$out" '^RC=0$'

# --- a signal goes to the tasks; srun killed ends them -------------------------------------------
id=$(batch signals "#SBATCH -N 2
srun bash -c 'trap \"echo TERM \$SLURM_PROCID; exit 7\" TERM; echo UP \$SLURM_PROCID; while :; do sleep 0.05; done' &
p=\$!
i=0; until [ \"\$(grep -c '^UP' $work/signals.out)\" = 2 ] || [ \$i -ge 400 ]; do sleep 0.05; i=\$((i+1)); done
kill -TERM \$p
wait \$p
echo \"RC=\$?\"
srun bash -c 'echo \$\$ > $tmp/task.\$SLURM_PROCID; echo \$\$ >> $tmp/tasks.pids; sleep 60' &
p=\$!
i=0; until [ -s $tmp/task.0 ] && [ -s $tmp/task.1 ] || [ \$i -ge 400 ]; do sleep 0.05; i=\$((i+1)); done
kill -9 \$p
for r in 0 1; do
  i=0; while kill -0 \$(cat $tmp/task.\$r) 2>/dev/null && [ \$i -lt 400 ]; do sleep 0.05; i=\$((i+1)); done
  kill -0 \$(cat $tmp/task.\$r) 2>/dev/null && echo \"ALIVE \$r\" || echo \"GONE \$r\"
done")
out=$work/signals.out
has "$out" '^TERM 0$'
has "$out" '^TERM 1$'
has "$out" '^RC=7$'
has "$out" '^GONE 0$'
has "$out" '^GONE 1$'

# --- --jobid from outside: an ended job refused; a job cancelled under its step ------------------
SLURM_JOB_ID=$id srun true > "$tmp/ended.txt" 2>&1 && fail "srun in an ended job succeeded"
has "$tmp/ended.txt" "^srun: error: Unable to create step for job $id: job $id is COMPLETED, not running"
printf '#!/bin/sh\n#SBATCH -N 2\n%s\n' "$(gate_wait held)" > "$work/held.sh"
id=$(sbatch --parsable "$work/held.sh") || fail "sbatch held.sh"
wait_start "$id"
(unset SLURM_JOB_ID; srun --jobid "$id" -l bash -c "echo READY; $(gate_wait never)") \
  > "$tmp/cancel.out" 2> "$tmp/cancel.err" &
srun_pid=$!
wait_for "the step's output" 20 grep -q '^1: READY$' "$tmp/cancel.out"
"$bin/gsched" cancel "$id" >/dev/null || fail "cancel $id failed"
wait_for "srun to end with its job" 20 bash -c "! kill -0 $srun_pid 2>/dev/null"
wait "$srun_pid"
rc=$?
[ "$rc" != 0 ] || fail "srun of a cancelled job exited 0: $(cat "$tmp/cancel.err")"
has "$tmp/cancel.err" '^srun: error: '
gate held
wait_end "$id" 20 || true
[ "$(job_state "$id")" = CANCELLED ] || fail "held job: $(jq "$id" 'j')"

# --- the batch shell ends under a running step: the step's tasks end with the job ---------
printf '#!/bin/bash\n#SBATCH -N 2\nsrun bash -c %s &\n%s\n' \
  "'echo \$\$ > $tmp/left.\$SLURM_PROCID; echo \$\$ >> $tmp/tasks.pids; sleep 60'" \
  "i=0; until [ -s $tmp/left.0 ] && [ -s $tmp/left.1 ] || [ \$i -ge 400 ]; do sleep 0.05; i=\$((i+1)); done" \
  > "$work/leaves.sh"
id=$(sbatch --parsable "$work/leaves.sh") || fail "sbatch leaves.sh"
wait_end "$id" 30 || fail "leaves.sh: $(jq "$id" 'j')"
for r in 0 1; do
  [ -s "$tmp/left.$r" ] || fail "the background step's task $r never started"
  wait_for "step task $r (pid $(cat "$tmp/left.$r")) to end with its job" 20 \
    bash -c "! kill -0 $(cat "$tmp/left.$r") 2>/dev/null"
done

check_logs
echo "$name: all checks passed"
