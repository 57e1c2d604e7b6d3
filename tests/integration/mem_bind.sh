#!/usr/bin/env bash
# mem_bind.sh BIN_DIR SRC_DIR: srun --mem-bind (and sbatch --mem-bind, through
# SLURM_MEM_BIND) on a one-worker `gsched up` cluster with this machine's own topology, so
# that the worker sets memory policies: each step's task reports the policy of its stack
# from /proc/self/numa_maps. Without the option a task prefers its cores' NUMA nodes;
# none leaves it the kernel's default, local and map_mem bind it, prefer prefers; verbose
# reports it first; a NUMA node the node lacks refuses the step.
name="mem_bind"
. "$(dirname "$0")/lib.sh"

slurm_names sbatch srun

start_cluster --workers 1
# The task's stack's policy, after its tag ($T from srun's environment).
cat > "$work/policy.sh" <<'EOF'
awk -v t="$T" '/stack/ {print t, $2; exit}' /proc/self/numa_maps
EOF
policy="$work/policy.sh"
cat > "$work/mb.sh" <<EOF
#!/bin/bash
#SBATCH -o $work/mb.out
#SBATCH --mem-bind=local
echo "ENV \$SLURM_MEM_BIND"
T=INHERIT srun -n1 bash $policy
T=DEFAULT SLURM_MEM_BIND= srun -n1 bash $policy
T=NONE srun -n1 --mem-bind=none bash $policy
T=MAP srun -n1 --mem-bind=verbose,map_mem:0 bash $policy
T=PREFER srun -n1 --mem-bind=prefer,map_mem:0 bash $policy
srun -n1 --mem-bind=map_mem:3 true; echo "BAD=\$?"
srun -n1 --mem-bind=lcoal true; echo "TYPO=\$?"
EOF
id=$(sbatch --parsable "$work/mb.sh" 2>&1) || fail "sbatch mb.sh refused: $id"
wait_end "$id" 30 || true
out=$work/mb.out
[ "$(job_state "$id")" = COMPLETED ] || fail "job: $(jq "$id" 'j') output: $(cat "$out")"
grep -qx 'DEFAULT prefer:0' "$out" ||
  skip "tasks get no memory policy here (set_mempolicy refused?): $(grep DEFAULT "$out")"
want() { grep -qx "$1" "$out" || fail "no line '$1': $(cat "$out")"; }
want 'ENV local'
want 'INHERIT bind:0'
want 'NONE default'
want 'mem-bind=MAP - node1, task  0  0: mask 0x1 set'
want 'MAP bind:0'
want 'PREFER prefer:0'
grep -q "Unable to create step for job $id: --mem-bind: map_mem NUMA node 3 is not one of the node's" \
  "$out" || fail "NUMA node 3 was not refused: $(cat "$out")"
want 'BAD=1'
grep -q "^srun: error: --mem-bind: 'lcoal' is none of" "$out" || fail "the typo: $(cat "$out")"
want 'TYPO=1'

check_logs
echo "$name: all checks passed"
