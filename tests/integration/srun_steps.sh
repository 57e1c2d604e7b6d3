#!/usr/bin/env bash
# srun_steps.sh BIN_DIR SRC_DIR: concurrent srun steps share their job's allocation as Slurm's
# do, on a one-worker `gsched up` cluster with the hardware of tests/topologies/ws-4gpu.xml
# (4 GPUs, 16 cores). The sweep of a `--gres=gpu:4` batch job, six `srun -n1
# --gpus-per-task=1 --exclusive` in the background (every other one `--gres=gpu:1`, as
# Slurm scripts write it): each running step sees its own single
# GPU, at most four run at once, the other two print Slurm's "step creation temporarily
# disabled" and start ("Step created") once GPUs are given back, and all six complete.
# Then: an --overlap step runs beside a step that holds everything, a waiting srun killed
# withdraws its request (its command never runs), a step that could never fit in the
# job is refused at once, and a --gres=none step runs beside one that holds the job's GPUs,
# seeing none (it would wait for them if it took any). Last, --ntasks-per-gpu lays out K tasks
# per GPU, each K bound to one (-n fewer: the first GPUs; more: refused), and --cpus-per-gpu
# gives each task its share of C cores per GPU.
#
# Each step records what it sees in a marker file while it runs, then waits for a gate;
# every step snapshots the markers when it starts (gate_wait's loop uses i: steps say step), so two steps sharing a GPU, or a fifth
# one running, would show in some snapshot.
name="srun_steps"
. "$(dirname "$0")/lib.sh"

mkdir -p "$tmp/markers"
slurm_names sbatch srun scontrol

start_cluster --workers 1 --topology "$src/tests/topologies/ws-4gpu.xml" --heartbeat 1s \
  --kill-grace 1s

has() {
  grep -Eq -- "$2" "$1" 2>/dev/null || fail "$1 has no line matching '$2'; it holds: $(cat "$1" 2>&1)"
}
count() { grep -Ec -- "$2" "$1" 2>/dev/null; }
markers() { find "$tmp/markers" -name 'step.*' | wc -l; }
markers_are() { [ "$(markers)" = "$1" ]; }
# lines_are FILE REGEX N: the file has exactly N lines matching the regex (for wait_for).
lines_are() { [ "$(count "$1" "$2")" = "$3" ]; }

# --- the sweep: six one-GPU steps on a four-GPU job ---------------------------------------------
cat > "$work/step.sh" <<EOF
#!/bin/bash
step=\$1
printf '%s\n' "\$CUDA_VISIBLE_DEVICES" > $tmp/markers/.new.\$step
mv $tmp/markers/.new.\$step $tmp/markers/step.\$step
snap=
for f in $tmp/markers/step.*; do
  snap="\$snap \${f##*.}=\$(cat "\$f" 2>/dev/null)"
done
echo "SNAP \$step gpu=\$CUDA_VISIBLE_DEVICES running:\$snap" >> $tmp/snaps
$(gate_wait go)
rm -f $tmp/markers/step.\$step
echo "DONE \$step gpu=\$CUDA_VISIBLE_DEVICES"
EOF
cat > "$work/sweep.sh" <<EOF
#!/bin/bash
#SBATCH -J sweep
#SBATCH -o $work/sweep.out
#SBATCH -N 1
#SBATCH -n 4
#SBATCH --gres=gpu:4
for i in 0 1 2 3 4 5; do
  if [ \$((i % 2)) = 0 ]; then gpus=--gpus-per-task=1; else gpus=--gres=gpu:1; fi
  srun -n1 \$gpus --exclusive bash $work/step.sh \$i &
done
wait
echo "SWEEP_DONE"
EOF
id=$(sbatch --parsable "$work/sweep.sh" 2>&1) || fail "sbatch sweep.sh refused: $id"
[[ $id =~ ^[0-9]+$ ]] || fail "sbatch sweep.sh printed '$id'"
out=$work/sweep.out
wait_for "four steps running" 30 markers_are 4
wait_for "two steps waiting" 30 lines_are "$out" \
  "^srun: Job $id step creation temporarily disabled, retrying \\(Requested nodes are busy\\)\$" 2
# The two waiting ones cannot start while four hold every GPU: nothing is given back yet.
[ "$(markers)" = 4 ] || fail "more than four steps run at once: $(ls "$tmp/markers")"
[ "$(count "$out" '^srun: Step created')" = 0 ] || fail "a waiting step started: $(cat "$out")"
gate go
wait_end "$id" 30 || true
[ "$(job_state "$id")" = COMPLETED ] || fail "sweep job: $(jq "$id" 'j') output: $(cat "$out")"
has "$out" '^SWEEP_DONE$'
for i in 0 1 2 3 4 5; do has "$out" "^DONE $i gpu=[0-3]\$"; done
[ "$(count "$out" "^srun: Step created for StepId=$id\\.[0-9]+\$")" = 2 ] ||
  fail "not two 'Step created' lines: $(cat "$out")"
[ "$(count "$tmp/snaps" '^SNAP ')" = 6 ] || fail "not six snapshots: $(cat "$tmp/snaps")"
python3 - "$tmp/snaps" <<'EOF' || fail "steps shared GPUs or ran more than four at once: $(cat "$tmp/snaps")"
import sys
for line in open(sys.argv[1]):
    seen = [kv.split("=", 1)[1] for kv in line.split("running:")[1].split()]
    gpus = [g for g in seen if g != ""]  # a marker read as it was removed
    assert len(seen) <= 4, line
    assert all(g in ("0", "1", "2", "3") for g in gpus), line
    assert len(set(gpus)) == len(gpus), line
EOF

# --- --overlap beside a step that holds everything; a waiting srun withdrawn; never fits -------
cat > "$work/share.sh" <<EOF
#!/bin/bash
#SBATCH -J share
#SBATCH -o $work/share.out
#SBATCH -N 1
#SBATCH -n 2
#SBATCH --gres=gpu:2
srun -n1 bash -c 'echo "HOLD \$CUDA_VISIBLE_DEVICES"; touch $tmp/hold.up; $(gate_wait hold)' &
h=\$!
i=0; until [ -e $tmp/hold.up ] || [ \$i -ge 400 ]; do sleep 0.05; i=\$((i+1)); done
srun --overlap -n1 bash -c 'echo "OVER \$CUDA_VISIBLE_DEVICES"'
echo "OVER_RC=\$?"
srun -n1 bash -c 'touch $tmp/withdrawn.ran' 2> $tmp/withdrawn.err &
w=\$!
i=0; until grep -q 'temporarily disabled' $tmp/withdrawn.err || [ \$i -ge 400 ]; do sleep 0.05; i=\$((i+1)); done
kill -TERM \$w
wait \$w
echo "WITHDRAWN_RC=\$?"
touch $gates/hold
wait \$h
echo "HOLD_RC=\$?"
srun -n1 --gpus-per-task=3 true
echo "NEVER_RC=\$?"
srun -n1 bash -c 'echo "AFTER \$CUDA_VISIBLE_DEVICES"'
echo "AFTER_RC=\$?"
srun -n1 --exact --gres=gpu:2 bash -c 'touch $tmp/gpus.up; $(gate_wait gpus)' &
g=\$!
i=0; until [ -e $tmp/gpus.up ] || [ \$i -ge 400 ]; do sleep 0.05; i=\$((i+1)); done
srun -n1 --exact --gres=none bash -c 'echo "NONE [\$CUDA_VISIBLE_DEVICES]"'
echo "NONE_RC=\$?"
touch $gates/gpus
wait \$g
echo "GPUS_RC=\$?"
EOF
id=$(sbatch --parsable "$work/share.sh" 2>&1) || fail "sbatch share.sh refused: $id"
wait_end "$id" 30 || true
out=$work/share.out
[ "$(job_state "$id")" = COMPLETED ] || fail "share job: $(jq "$id" 'j') output: $(cat "$out")"
held=$(sed -n 's/^HOLD //p' "$out")
[[ $held =~ ^[0-3],[0-3]$ ]] || fail "the default step did not see the job's two GPUs: $(cat "$out")"
has "$out" "^OVER $held\$"
has "$out" '^OVER_RC=0$'
has "$tmp/withdrawn.err" "^srun: Job $id step creation temporarily disabled, retrying"
has "$tmp/withdrawn.err" '^srun: Cancelled pending job step with signal 15$'
has "$out" '^WITHDRAWN_RC=1$'
[ ! -e "$tmp/withdrawn.ran" ] || fail "the withdrawn step ran"
has "$out" '^HOLD_RC=0$'
has "$out" "^srun: error: Unable to create step for job $id: Requested node configuration is not available\$"
has "$out" '^NEVER_RC=1$'
has "$out" "^AFTER $held\$"
has "$out" '^AFTER_RC=0$'
has "$out" '^NONE \[\]$'
has "$out" '^NONE_RC=0$'
has "$out" '^GPUS_RC=0$'

# --- --ntasks-per-gpu and --cpus-per-gpu in a step -----------------------------------------------
cat > "$work/pergpu.sh" <<EOF
#!/bin/bash
#SBATCH -J pergpu
#SBATCH -o $work/pergpu.out
#SBATCH -N 1
#SBATCH -n 8
#SBATCH --gres=gpu:4
srun --ntasks-per-gpu=2 bash -c 'echo "PER \$SLURM_LOCALID \$CUDA_VISIBLE_DEVICES \$SLURM_NTASKS_PER_GPU"'
echo "PER_RC=\$?"
srun --ntasks-per-gpu=1 -n 3 bash -c 'echo "FEW \$SLURM_LOCALID \$CUDA_VISIBLE_DEVICES"'
echo "FEW_RC=\$?"
srun --ntasks-per-gpu=1 -n 5 true
echo "MANY_RC=\$?"
srun -n2 --gres=gpu:2 --cpus-per-gpu=3 bash -c 'echo "CPG \$SLURM_LOCALID \$GSCHED_CPUS"'
echo "CPG_RC=\$?"
srun -n 4000000000 true
echo "HUGE_RC=\$?"
srun --ntasks-per-node=4000000000 true
echo "HUGE_TPN_RC=\$?"
EOF
id=$(sbatch --parsable "$work/pergpu.sh" 2>&1) || fail "sbatch pergpu.sh refused: $id"
wait_end "$id" 30 || true
out=$work/pergpu.out
[ "$(job_state "$id")" = COMPLETED ] || fail "pergpu job: $(jq "$id" 'j') output: $(cat "$out")"
has "$out" '^PER_RC=0$'
has "$out" '^FEW_RC=0$'
has "$out" '^MANY_RC=1$'
has "$out" "^srun: error: Unable to create step for job $id: 5 tasks do not fit --ntasks-per-gpu=1 on the step's 4 GPUs\$"
has "$out" '^CPG_RC=0$'
# counts no node could hold are refused at once (gschedd used to number 4e9 tasks first)
has "$out" "^srun: error: Unable to create step for job $id: more tasks than the job's 1 node can hold \(a core each\)\$"
has "$out" '^HUGE_RC=1$'
has "$out" '^HUGE_TPN_RC=1$'
python3 - "$out" <<'EOF' || fail "--ntasks-per-gpu / --cpus-per-gpu laid the tasks out wrong: $(cat "$out")"
import sys
lines = [l.split() for l in open(sys.argv[1])]
per = {int(l[1]): l[2] for l in lines if l[0] == "PER"}
assert sorted(per) == list(range(8)), per                     # 2 tasks x 4 GPUs
assert all(len(l) == 4 and l[3] == "2" for l in lines if l[0] == "PER"), lines
assert all(per[2 * g] == per[2 * g + 1] for g in range(4)), per  # each two on one GPU
assert len(set(per.values())) == 4 and all("," not in v for v in per.values()), per
few = {int(l[1]): l[2] for l in lines if l[0] == "FEW"}
assert sorted(few) == [0, 1, 2] and len(set(few.values())) == 3, few  # -n 3: one GPU each
def count(cpus):
    n = 0
    for part in cpus.split(","):
        a, _, b = part.partition("-")
        n += int(b or a) - int(a) + 1
    return n
cpg = {int(l[1]): count(l[2]) for l in lines if l[0] == "CPG"}
assert cpg == {0: 3, 1: 3}, cpg                               # 3 x 2 GPUs over 2 tasks
EOF

check_logs
echo "$name: all checks passed"
