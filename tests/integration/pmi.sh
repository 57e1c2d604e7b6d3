#!/usr/bin/env bash
# pmi.sh BIN_DIR SRC_DIR MPICH_CC PMI2_CLIENT: srun --mpi=pmi2 (worker/pmi.h), the way MPICH programs
# start under Slurm. On a `gsched up` cluster of two workers, a program built with MPICH's
# compiler starts with srun alone: four ranks over the two nodes get each a socket to their
# worker's PMI server (PMI_FD), find one another through it and gschedd's fences, and an
# MPI_Allreduce of their ranks gives each 6, laid out block or cyclic; SLURM_MPI_TYPE=pmi2
# stands for --mpi=pmi2; a rank's MPI_Abort ends the step on both nodes, failed; each step's
# key/value space goes when its last task has ended. PMI2_CLIENT, a task of Slurm's own
# PMI-2 client library (pmi2_client.c), gets every rank's value after a fence, the process
# mapping and its node's attribute, in the PMI-2 wire protocol. With scheduler.mpi_default =
# "pmi2" a plain srun runs under it. Tasks of another user (nobody) wire up too.
name="integration_pmi"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mpi_ring.sh"
mpicc=$3
pmi2_client=$4

start_cluster --workers 2 --gpus-per-node 0
slurm_names sbatch srun

ring_build "$mpicc"

# One batch job holds both nodes; each check is a step of it.
job_file run.sh "#!/bin/sh
cd $work
srun --mpi=pmi2 -n4 ./ring > block.out 2> block.err; echo \"block \$?\" >> rc.log
srun --mpi=pmi2 -n4 -m cyclic ./ring > cyclic.out 2> cyclic.err; echo \"cyclic \$?\" >> rc.log
SLURM_MPI_TYPE=pmi2 srun -n4 ./ring > env.out 2> env.err; echo \"env \$?\" >> rc.log
srun --mpi=list > list.out 2>&1; echo \"list \$?\" >> rc.log
start=\$(date +%s%3N)
srun --mpi=pmi2 -n4 ./ring 2 > abort.out 2> abort.err; echo \"abort \$?\" >> rc.log
echo \"abort_ms \$((\$(date +%s%3N) - start))\" >> rc.log
srun -n1 sh -c 'echo fd=\${PMI_FD:-none}' > plain.out 2> plain.err; echo \"plain \$?\" >> rc.log
srun --mpi=pmi2 -n4 $pmi2_client > pmi2.out 2> pmi2.err; echo \"pmi2 \$?\" >> rc.log"
id=$(sbatch_id -N2 --ntasks-per-node=2 -t 2 "$work/run.sh")
wait_end "$id" 90 || fail "the job failed: $(jq "$id" 'j'); $(cat "$work/rc.log" "$work"/*.err 2>&1)"

rcs=$(cat "$work/rc.log")
ring_check "$rcs" block cyclic env
grep -qx "list 0" <<< "$rcs" && grep -qx $'\tpmi2' "$work/list.out" || fail "--mpi=list: $(cat "$work/list.out")"
grep -q "abort 0" <<< "$rcs" && fail "a step with an MPI_Abort succeeded: $(cat "$work/abort.out" "$work/abort.err")"
grep -q "sum 6" "$work/abort.out" && fail "the aborted step's ranks went on: $(cat "$work/abort.out")"
ms=$(sed -n 's/^abort_ms //p' <<< "$rcs")
[ "$ms" -lt 10000 ] || fail "the aborted step took $ms ms to end"
grep -qx "plain 0" <<< "$rcs" && grep -qx "fd=none" "$work/plain.out" ||
  fail "a step without --mpi: $(cat "$work/plain.out" "$work/plain.err")"
# libpmi2: 4 ranks of job 1's step 5 (block: ranks 0-1 on the first node, led by rank 0).
grep -qx "pmi2 0" <<< "$rcs" || fail "libpmi2 step: $rcs; $(cat "$work/pmi2.out" "$work/pmi2.err")"
for r in 0 1 2 3; do
  grep -qx "rank $r of 4 job gsched.1.5 sum 60 map (vector,(0,2,2)) leader $((r / 2 * 2)) spawned 0" \
    "$work/pmi2.out" || fail "libpmi2 rank $r: $(cat "$work/pmi2.out" "$work/pmi2.err")"
done
# Every step's space went with its last task, on both nodes.
for n in node1 node2; do
  added=$(grep -c "pmi step added" "$state/$n.log")
  ended=$(grep -c "pmi step ended here" "$state/$n.log")
  [ "$added" -ge 4 ] && [ "$added" = "$ended" ] || fail "$n: $added spaces added, $ended ended"
done
# scheduler.mpi_default = "pmi2" (Slurm's MpiDefault): srun without --mpi runs under it.
sed -i 's|^\[scheduler\]$|[scheduler]\nmpi_default = "pmi2"|' "$state/gsched.toml"
grep -q '^mpi_default = "pmi2"' "$state/gsched.toml" || fail "no [scheduler] table to edit"
restart_sched 2
id=$(sbatch_id -N2 --ntasks-per-node=2 -t 2 -o "$work/default.out" --wrap="cd $work && srun -n4 ./ring")
wait_end "$id" 60 || fail "the MpiDefault job failed: $(cat "$work/default.out")"
[ "$(grep -c ' sum 6$' "$work/default.out")" = 4 ] || fail "MpiDefault=pmi2: $(cat "$work/default.out")"

ring_nobody pmi2
check_logs
stop_cluster
echo "$name: passed"
