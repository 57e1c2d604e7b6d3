#!/usr/bin/env bash
# hetjob.sh BIN_DIR SRC_DIR: heterogeneous jobs (`#SBATCH hetjob`) on a three-worker `gsched
# up` cluster, as Slurm runs them. A script of two components (one node with 2 tasks and
# 2 GPUs; two nodes of one task with 2 CPUs each) gets three distinct nodes, its script sees
# SLURM_HET_SIZE and every component's variables under _HET_GROUP_K (the plain ones being
# component 0's), `srun` runs on component 0, `srun --het-group=1` on component 1 with that
# component's variables under their plain names, and `srun --het-group=0,1` one step over
# both with ranks counted across them; a group the job lacks is refused. squeue and sacct
# show it as JOB+0 and JOB+1, and `-j JOB+1` (scontrol show job JOB+1 too) shows component
# 1 alone; an ordinary job has no JOB+0. scancel and scontrol hold refuse JOB+1, acting on
# nothing: gsched acts on a heterogeneous job as a whole. `salloc -N1 : -N2` gives such an
# allocation too. The components start together or not at all: with one node
# held whole by another job the heterogeneous job waits (Resources) though component 0 alone
# would fit, and starts once that node is free. A job whose components need more nodes
# than the cluster has is refused at submit, and so is a script with a whole-job option
# that differs in a later component, submitting nothing.
name="hetjob"
. "$(dirname "$0")/lib.sh"

slurm_names sbatch srun squeue sacct scontrol salloc scancel

start_cluster --workers 3 --gpus-per-node 4 --heartbeat 1s --kill-grace 1s

has() {
  grep -Eq -- "$2" "$1" 2>/dev/null || fail "$1 has no line matching '$2'; it holds: $(cat "$1" 2>&1)"
}
val() { sed -n "s/^$2=//p" "$1"; }
esc() { printf '%s' "$1" | sed 's/[][\\.*^$+?(){}|]/\\&/g'; } # a literal in an ERE

# --- two components, their variables and steps -------------------------------------------------
cat > "$work/het.sh" <<EOF
#!/bin/bash
#SBATCH -J het
#SBATCH -o $work/het.out
#SBATCH -N 1 -n 2 --gres=gpu:2
#SBATCH hetjob
#SBATCH -N 2 --ntasks-per-node=1 -c 2
echo "SIZE=\$SLURM_HET_SIZE"
echo "G0=\$SLURM_JOB_NODELIST_HET_GROUP_0"
echo "G1=\$SLURM_JOB_NODELIST_HET_GROUP_1"
echo "T0=\$SLURM_NTASKS_HET_GROUP_0 T1=\$SLURM_NTASKS_HET_GROUP_1"
echo "NN1=\$SLURM_JOB_NUM_NODES_HET_GROUP_1 GPUS0=\$SLURM_GPUS_HET_GROUP_0"
echo "ID1=\$SLURM_JOB_ID_HET_GROUP_1"
echo "PLAIN=\$SLURM_JOB_NODELIST \$SLURM_NTASKS"
echo "BATCH_ON=\$SLURMD_NODENAME"
srun bash -c 'echo "S0 \$SLURM_PROCID \$SLURMD_NODENAME \$SLURM_NTASKS"' | sort
srun --het-group=1 bash -c 'echo "S1 \$SLURM_PROCID \$SLURMD_NODENAME \$SLURM_NTASKS \$SLURM_JOB_NODELIST \$SLURM_CPUS_PER_TASK"' | sort
srun --het-group=0,1 bash -c 'echo "S01 \$SLURM_PROCID \$SLURMD_NODENAME \$SLURM_NTASKS"' | sort
srun --het-group=2 true
echo "BAD_GROUP_RC=\$?"
squeue -j \$SLURM_JOB_ID -h -o '%i %D %N' > $tmp/squeue.out
EOF
id=$(sbatch --parsable "$work/het.sh" 2>&1) || fail "sbatch het.sh refused: $id"
[[ $id =~ ^[0-9]+$ ]] || fail "sbatch het.sh printed '$id'"
wait_end "$id" 60 || true
out=$work/het.out
[ "$(job_state "$id")" = COMPLETED ] || fail "het job: $(jq "$id" 'j') output: $(cat "$out")"
has "$out" '^SIZE=2$'
g0=$(val "$out" G0)
g1=$(val "$out" G1)
[[ $g0 =~ ^node[1-3]$ ]] || fail "component 0 is not one node: '$g0'; $(cat "$out")"
nodes1=$(scontrol show hostnames "$g1" | tr '\n' ' ')
read -r n1a n1b <<<"$nodes1"
r1=$(esc "$g1")
[ -n "$n1b" ] && [ "$n1a" != "$n1b" ] || fail "component 1 is not two nodes: '$g1'"
[ "$g0" != "$n1a" ] && [ "$g0" != "$n1b" ] || fail "the components share a node: $g0 / $g1"
has "$out" '^T0=2 T1=2$'
has "$out" '^NN1=2 GPUS0=2$'
has "$out" "^ID1=$id\$"
has "$out" "^PLAIN=$g0 2\$"
has "$out" "^BATCH_ON=$g0\$"
# srun: component 0's two tasks on its node.
has "$out" "^S0 0 $g0 2\$"
has "$out" "^S0 1 $g0 2\$"
# --het-group=1: one task on each of its nodes, its variables under the plain names.
has "$out" "^S1 0 $n1a 2 $r1 2\$"
has "$out" "^S1 1 $n1b 2 $r1 2\$"
# --het-group=0,1: component 0's ranks first, then component 1's, four in all.
has "$out" "^S01 0 $g0 4\$"
has "$out" "^S01 1 $g0 4\$"
has "$out" "^S01 2 $n1a 4\$"
has "$out" "^S01 3 $n1b 4\$"
has "$out" '^srun: error: .*--het-group 2: job [0-9]+ has het groups 0-1'
has "$out" '^BAD_GROUP_RC=1$'
# squeue in the job: one row per component.
has "$tmp/squeue.out" "^$id\\+0 1 $g0\$"
has "$tmp/squeue.out" "^$id\\+1 2 $r1\$"
sacct -j "$id" -X -n -P -o JobID,NNodes,NodeList > "$tmp/sacct.out" 2>&1 ||
  fail "sacct failed: $(cat "$tmp/sacct.out")"
has "$tmp/sacct.out" "^$id\\+0\\|1\\|$g0\$"
has "$tmp/sacct.out" "^$id\\+1\\|2\\|$r1\$"

# --- one component by JOB+K ------------------------------------------------------------------
# -j names the ended job, so squeue lists it; only component 1's line.
squeue -j "$id+1" -h -o '%i %D' > "$tmp/squeue1.out" 2>&1 || fail "squeue -j $id+1: $(cat "$tmp/squeue1.out")"
[ "$(cat "$tmp/squeue1.out")" = "$id+1 2" ] || fail "squeue -j $id+1 printed: $(cat "$tmp/squeue1.out")"
# sacct: component 1's line and the steps under it (--het-group=1, =0,1), none of 0's.
sacct -j "$id+1" -n -P -o JobID,NNodes,NodeList > "$tmp/sacct1.out" 2>&1 ||
  fail "sacct -j $id+1 failed: $(cat "$tmp/sacct1.out")"
has "$tmp/sacct1.out" "^$id\\+1\\|2\\|$r1\$"
has "$tmp/sacct1.out" "^$id\\+1\\.[0-9]+\\|"
! grep -q -v "^$id+1[|.]" "$tmp/sacct1.out" || fail "sacct -j $id+1 shows more: $(cat "$tmp/sacct1.out")"
sacct -j "$id+1,$id" -X -n -P -o JobID > "$tmp/sacct01.out" 2>&1 || fail "sacct -j $id+1,$id"
[ "$(tr '\n' ' ' < "$tmp/sacct01.out")" = "$id+0 $id+1 " ] ||
  fail "sacct -j $id+1,$id is not the whole job: $(cat "$tmp/sacct01.out")"
scontrol show job "$id+1" > "$tmp/show1.out" 2>&1 || fail "scontrol show job $id+1: $(cat "$tmp/show1.out")"
has "$tmp/show1.out" "HetJobId=$id HetJobOffset=1"
[ "$(grep -c 'HetJobOffset=' "$tmp/show1.out")" = 1 ] ||
  fail "scontrol show job $id+1 shows more than component 1: $(cat "$tmp/show1.out")"
if out=$(scontrol show job "$id+2" 2>&1); then fail "scontrol show job $id+2 (no such component): $out"; fi
[[ $out == *"Invalid job id specified: $id+2"* ]] || fail "scontrol show job $id+2 said: $out"
[ -z "$(squeue -j "$id+2" -h 2>&1)" ] || fail "squeue -j $id+2 shows a component the job lacks"

# --- salloc's components, ':' apart ------------------------------------------------------------
out=$(timeout 60 salloc -N1 : -N2 bash -c 'echo "SIZE=$SLURM_HET_SIZE NN1=$SLURM_JOB_NUM_NODES_HET_GROUP_1"; srun --het-group=1 bash -c "echo ON \$SLURMD_NODENAME"' 2>&1) ||
  fail "salloc -N1 : -N2 failed: $out"
[[ $out == *"SIZE=2 NN1=2"* ]] || fail "salloc's heterogeneous allocation: $out"
[ "$(grep -c '^ON node[1-3]$' <<<"$out")" = 2 ] || fail "srun --het-group=1 in salloc: $out"

# --- all components or none ---------------------------------------------------------------------
job_file hold.toml "name = \"hold\"
[resources]
nodes = 1
exclusive = true
[run]
script = '''$(gate_wait hold)'''"
hold=$(submit "$work/hold.toml")
wait_start "$hold" 30 || fail "the holding job did not start: $(jq "$hold" 'j')"
cat > "$work/wait.sh" <<EOF
#!/bin/bash
#SBATCH -J waits
#SBATCH -o $work/wait.out
#SBATCH -N 1
#SBATCH packjob
#SBATCH -N 2
echo "RAN \$SLURM_JOB_NODELIST_HET_GROUP_0 \$SLURM_JOB_NODELIST_HET_GROUP_1"
EOF
wid=$(sbatch --parsable "$work/wait.sh" 2>&1) || fail "sbatch wait.sh refused: $wid"
reason_is() { [ "$(job_reason "$1")" = "$2" ]; }
wait_for "the heterogeneous job waits for resources" 30 reason_is "$wid" Resources
[ "$(job_state "$wid")" = PENDING ] || fail "it started with one node held: $(jq "$wid" 'j')"
# An ordinary job shows as JOB, never JOB+0: -j JOB+0 has no line for it.
[ -z "$(squeue -j "$hold+0" -h 2>&1)" ] || fail "squeue -j $hold+0 showed the plain job"
squeue -j "$wid+1" -h -o '%i %t %D' > "$tmp/squeue_wait.out" 2>&1 || fail "squeue -j $wid+1"
[ "$(cat "$tmp/squeue_wait.out")" = "$wid+1 PD 2" ] ||
  fail "squeue -j $wid+1 printed: $(cat "$tmp/squeue_wait.out")"
# Acting on one component is refused, and nothing is acted on (the job still waits, not held).
if out=$(scancel "$wid+1" 2>&1); then fail "scancel $wid+1 was accepted: $out"; fi
[ "$out" = "scancel: error: $wid+1: gsched acts on a heterogeneous job as a whole; use $wid" ] ||
  fail "scancel $wid+1 said: $out"
if out=$(scancel "$hold" "$wid+1" 2>&1); then fail "scancel $hold $wid+1 was accepted: $out"; fi
[ "$(job_state "$hold")" = RUNNING ] || fail "scancel $hold $wid+1 cancelled $hold: $(jq "$hold" 'j')"
if out=$(scontrol hold "$wid+1" 2>&1); then fail "scontrol hold $wid+1 was accepted: $out"; fi
[[ $out == *"scontrol: error: $wid+1: gsched acts on a heterogeneous job as a whole; use $wid"* ]] ||
  fail "scontrol hold $wid+1 said: $out"
if out=$(scontrol update JobId="$wid+1" Nice=10 2>&1); then fail "scontrol update JobId=$wid+1: $out"; fi
[[ $out == *"$wid+1: gsched acts on a heterogeneous job as a whole"* ]] ||
  fail "scontrol update JobId=$wid+1 said: $out"
[ "$(job_state "$wid")" = PENDING ] && reason_is "$wid" Resources ||
  fail "a refused JOB+1 action changed the job: $(jq "$wid" 'j')"
gate hold
wait_end "$wid" 60 || true
[ "$(job_state "$wid")" = COMPLETED ] || fail "the waiting job: $(jq "$wid" 'j')"
has "$work/wait.out" '^RAN node[1-3] node\[[1-3][-,][1-3]\]$'

# --- refused at submit, nothing submitted ------------------------------------------------------
before=$("$bin/gsched" queue --all --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
cat > "$work/big.sh" <<EOF
#!/bin/bash
#SBATCH -N 2
#SBATCH hetjob
#SBATCH -N 2
true
EOF
if out=$(sbatch "$work/big.sh" 2>&1); then fail "a job of 4 nodes on 3 was accepted: $out"; fi
[[ $out == *"the cluster has 3 node(s), the job's components ask for 4"* ]] ||
  fail "big.sh refused without the reason: $out"
cat > "$work/conflict.sh" <<EOF
#!/bin/bash
#SBATCH -t 10
#SBATCH hetjob
#SBATCH -t 20
true
EOF
if out=$(sbatch "$work/conflict.sh" 2>&1); then fail "a conflicting --time was accepted: $out"; fi
[[ $out == *"conflict.sh:4"* ]] || fail "conflict.sh refused without its line: $out"
after=$("$bin/gsched" queue --all --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
[ "$before" = "$after" ] || fail "a refused script submitted a job ($before jobs, then $after)"

check_logs
echo "$name: all checks passed"
