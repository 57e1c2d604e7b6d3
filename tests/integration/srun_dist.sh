#!/usr/bin/env bash
# srun_dist.sh BIN_DIR SRC_DIR: srun -m/--distribution and --cpu-bind on a two-worker
# `gsched up` cluster of two-socket nodes (tests/topologies/cpu-only.xml: cores 0-7 on
# socket 0, 8-15 on 1). sbatch -m cyclic reaches the job's steps as SLURM_DISTRIBUTION;
# each step prints every task's rank, node and cores, and the test checks the ranks each
# node level gives (block, cyclic, plane=2, cyclic over uneven nodes, arbitrary from
# SLURM_HOSTFILE and from -w with repeats), the cores each socket level binds (block,
# cyclic, fcyclic), and each task's cores under --cpu-bind (map_cpu, none, sockets,
# SLURM_CPU_BIND, verbose's report). Then what is refused: a typo in srun's -m and
# sbatch's (nothing runs, nothing is queued), a host the job does not have, a core the
# step does not have.
name="srun_dist"
. "$(dirname "$0")/lib.sh"

slurm_names sbatch srun

start_cluster --workers 2 --topology "$src/tests/topologies/cpu-only.xml" --heartbeat 1s \
  --kill-grace 1s

# ranks OUT TAG NODE: the ranks TAG's step ran on NODE, ascending, space-separated.
ranks() {
  sed -n "s/^$2 rank=\\([0-9]*\\) node=$3 .*/\\1/p" "$1" | sort -n | tr '\n' ' ' | sed 's/ $//'
}
# cores OUT TAG LOCAL: the cores TAG's task with SLURM_LOCALID LOCAL on node1 was bound to.
cores() {
  sed -n "s/^$2 rank=[0-9]* node=node1 local=$3 cpus=\\(.*\\) dist=.*/\\1/p" "$1"
}
check_ranks() { # check_ranks TAG NODE1-RANKS NODE2-RANKS
  [ "$(ranks "$out" "$1" node1)" = "$2" ] && [ "$(ranks "$out" "$1" node2)" = "$3" ] ||
    fail "$1: node1 ran '$(ranks "$out" "$1" node1)', node2 '$(ranks "$out" "$1" node2)'; want '$2' and '$3'. Output: $(cat "$out")"
}
check_cores() { # check_cores TAG CPUS-OF-LOCAL-0 1 2 3
  local l=0 want
  for want in "${@:2}"; do
    [ "$(cores "$out" "$1" $l)" = "$want" ] ||
      fail "$1: task $l on node1 has cores '$(cores "$out" "$1" $l)', want '$want'. Output: $(cat "$out")"
    l=$((l + 1))
  done
}

printf 'node2\nnode1\n node2,node2\n' > "$work/hosts"
show='echo \"\$T rank=\$SLURM_PROCID node=\$SLURMD_NODENAME local=\$SLURM_LOCALID cpus=\$GSCHED_CPUS dist=\${SLURM_DISTRIBUTION:-}\"'
cat > "$work/dist.sh" <<EOF
#!/bin/bash
#SBATCH -J dist
#SBATCH -o $work/dist.out
#SBATCH -N 2
#SBATCH --ntasks-per-node=4
#SBATCH -c 4
#SBATCH -m cyclic
T=INHERIT srun bash -c "$show"
T=BLOCK srun -m block bash -c "$show"
T=PLANE srun --distribution=plane=2 bash -c "$show"
T=UNEVEN srun -n 5 bash -c "$show"
T=SOCK_BLOCK srun -m block:block bash -c "$show"
T=SOCK_CYCLIC srun -m block:cyclic bash -c "$show"
T=SOCK_FCYCLIC srun -m block:fcyclic:* bash -c "$show"
T=HOSTFILE SLURM_HOSTFILE=$work/hosts srun -m arbitrary bash -c "$show"
T=HOSTW srun -m arbitrary -w node1,node1,node2 -n 3 bash -c "$show"
T=MAP srun -w node1 -n 4 --cpu-bind=map_cpu:3,9 bash -c "$show"
T=NONE srun -w node1 -n 4 --cpu-bind=none bash -c "$show"
T=SOCKETS SLURM_CPU_BIND=sockets srun -w node1 -n 4 bash -c "$show"
T=VERBOSE srun -w node1 -n 1 --cpu-bind=verbose,mask_cpu:0x30 bash -c "$show"
srun -w node1 -n 1 --cpu-bind=map_cpu:20 true; echo "NOCORE_RC=\$?"
srun -m cyclc true; echo "TYPO_RC=\$?"
srun -m arbitrary -w node1,node3 true; echo "STRANGER_RC=\$?"
echo DIST_DONE
EOF
id=$(sbatch --parsable "$work/dist.sh" 2>&1) || fail "sbatch dist.sh refused: $id"
[[ $id =~ ^[0-9]+$ ]] || fail "sbatch dist.sh printed '$id'"
wait_end "$id" 60 || true
out=$work/dist.out
[ "$(job_state "$id")" = COMPLETED ] || fail "dist job: $(jq "$id" 'j') output: $(cat "$out")"
grep -q '^DIST_DONE$' "$out" || fail "the script did not finish: $(cat "$out")"

# The node level. sbatch -m cyclic is every step's default, and its tasks are told so.
check_ranks INHERIT "0 2 4 6" "1 3 5 7"
[ "$(grep -c '^INHERIT .* dist=cyclic$' "$out")" = 8 ] ||
  fail "not every task saw SLURM_DISTRIBUTION=cyclic: $(cat "$out")"
check_ranks BLOCK "0 1 2 3" "4 5 6 7"
[ "$(grep -c '^BLOCK .* dist=block$' "$out")" = 8 ] || fail "-m block not in the tasks' SLURM_DISTRIBUTION: $(cat "$out")"
check_ranks PLANE "0 1 4 5" "2 3 6 7"
check_ranks UNEVEN "0 2 4" "1 3"
check_ranks HOSTFILE "1" "0 2 3"
check_ranks HOSTW "0 1" "2"

# The socket level, on node1's 16 cores (4 tasks of 4): block takes them in order, cyclic
# puts each next task on the other socket, fcyclic each next core.
check_cores SOCK_BLOCK 0-3 4-7 8-11 12-15
check_cores SOCK_CYCLIC 0-3 8-11 4-7 12-15
check_cores SOCK_FCYCLIC 0-1,8-9 2-3,10-11 4-5,12-13 6-7,14-15

# --cpu-bind on node1's four tasks: a map of cores (wrapping), none (GSCHED_CPUS unset),
# each task's socket (from SLURM_CPU_BIND; the default socket level, cyclic as Slurm's,
# deals the tasks' cores round the sockets), a mask with verbose's report before the task.
check_cores MAP 3 9 3 9
check_cores NONE "" "" "" ""
check_cores SOCKETS 0-7 8-15 0-7 8-15
check_cores VERBOSE 4-5
grep -q '^cpu-bind=MASK - node1, task  0  0: mask 0x30 set$' "$out" ||
  fail "no --cpu-bind=verbose report: $(cat "$out")"
grep -q "cpu-bind: map_cpu core 20 names no core the step has on the node" "$out" ||
  fail "a core outside the step was not refused: $(cat "$out")"
grep -Eq '^NOCORE_RC=[1-9]' "$out" || fail "the refused step exited 0: $(cat "$out")"

# What is refused: srun's typo sends nothing, a host the job does not have refuses the step.
grep -q "^srun: error: --distribution: 'cyclc' is not a node distribution" "$out" ||
  fail "srun -m cyclc was not refused: $(cat "$out")"
grep -q '^TYPO_RC=1$' "$out" || fail "srun -m cyclc did not exit 1: $(cat "$out")"
grep -q "host 'node3' (task 1) is not one of job $id's nodes" "$out" ||
  fail "a host outside the job was not refused: $(cat "$out")"
grep -Eq '^STRANGER_RC=[1-9]' "$out" || fail "the refused step exited 0: $(cat "$out")"

# sbatch reads -m too: a typo names its line and queues nothing.
before=$(queue_count)
printf '#!/bin/bash\n#SBATCH -m block:round\ntrue\n' > "$work/bad.sh"
if sbatch "$work/bad.sh" > "$tmp/bad.txt" 2>&1; then fail "sbatch -m block:round was accepted"; fi
grep -q "bad.sh:2: .*'round' is not a socket distribution" "$tmp/bad.txt" ||
  fail "sbatch's refusal does not say where: $(cat "$tmp/bad.txt")"
[ "$(queue_count)" = "$before" ] || fail "the refused script was queued"

check_logs
echo "$name: all checks passed"
