#!/usr/bin/env bash
# pmix.sh BIN_DIR SRC_DIR MPICC: srun --mpi=pmix (worker/pmix.h, scheduler/sched_pmix.c). On a
# `gsched up` cluster of two workers, an MPI program built with MPICC starts with srun alone,
# no mpirun: four ranks over the two nodes find one another through their workers' PMIx
# servers and gschedd's fences, and an MPI_Allreduce of their ranks gives each 6, laid out
# block or cyclic; SLURM_MPI_TYPE=pmix stands for --mpi=pmix; srun --mpi=list names the
# types and --mpi=cray_shasta is warned about; a rank's MPI_Abort ends the step on both nodes,
# failed; each step's namespace goes when its last task has ended. With scheduler.mpi_default
# = "pmix" a plain srun runs under PMIx and --mpi=none does not. Tasks of another user
# (nobody) wire up through the servers, which run as root, too.
#
# The two workers share this machine, so Open MPI's shared-memory transport would see ranks
# of both "nodes" as neighbours and mix up their segments: the ranks talk TCP on loopback
# (OMPI_MCA_btl=self,tcp), as ranks on two real nodes do.
name="integration_pmix"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mpi_ring.sh"
mpicc=$3

start_cluster --workers 2 --gpus-per-node 0
slurm_names sbatch srun

ring_build "$mpicc"

# One batch job holds both nodes; each check is a step of it, as users run MPI under Slurm.
export OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
job_file run.sh "#!/bin/sh
cd $work
srun --mpi=pmix -n4 ./ring > block.out 2> block.err; echo \"block \$?\" >> rc.log
srun --mpi=pmix -n4 -m cyclic ./ring > cyclic.out 2> cyclic.err; echo \"cyclic \$?\" >> rc.log
SLURM_MPI_TYPE=pmix srun -n4 ./ring > env.out 2> env.err; echo \"env \$?\" >> rc.log
srun --mpi=list > list.out 2>&1; echo \"list \$?\" >> rc.log
srun --mpi=pmix -n4 ./ring 2 > abort.out 2> abort.err; echo \"abort \$?\" >> rc.log
srun --mpi=cray_shasta -n1 true 2> other.err; echo \"other \$?\" >> rc.log"
id=$(sbatch_id -N2 --ntasks-per-node=2 -t 2 "$work/run.sh")
wait_end "$id" 90 || fail "the job failed: $(jq "$id" 'j'); $(cat "$work/rc.log" "$work"/*.err 2>&1)"

rcs=$(cat "$work/rc.log")
ring_check "$rcs" block cyclic env
grep -qx "list 0" <<< "$rcs" && grep -qx $'\tpmix' "$work/list.out" || fail "--mpi=list: $(cat "$work/list.out")"
grep -q "abort 0" <<< "$rcs" && fail "a step with an MPI_Abort succeeded: $(cat "$work/abort.out" "$work/abort.err")"
grep -q "sum 6" "$work/abort.out" && fail "the aborted step's ranks went on: $(cat "$work/abort.out")"
grep -qx "other 0" <<< "$rcs" && grep -q "gsched knows pmix, pmi2 and none" "$work/other.err" ||
  fail "--mpi=cray_shasta: $rcs; $(cat "$work/other.err")"
# Every step's namespace went with its last task, on both nodes.
for n in node1 node2; do
  reg=$(grep -c "pmix step registered" "$state/$n.log")
  ended=$(grep -c "pmix step ended here" "$state/$n.log")
  [ "$reg" -ge 4 ] && [ "$reg" = "$ended" ] || fail "$n: $reg namespaces registered, $ended ended"
done
# scheduler.mpi_default = "pmix" (Slurm's MpiDefault): srun without --mpi runs under PMIx,
# --mpi=none plainly (its tasks get no PMIX_* variables).
sed -i 's|^\[scheduler\]$|[scheduler]\nmpi_default = "pmix"|' "$state/gsched.toml"
grep -q '^mpi_default = "pmix"' "$state/gsched.toml" || fail "no [scheduler] table to edit"
restart_sched 2
job_file default.sh "#!/bin/sh
cd $work
srun -n4 ./ring > default.out 2> default.err; echo \"default \$?\" >> rc2.log
srun --mpi=none -n2 sh -c 'echo pmix=\${PMIX_RANK:-none}' > none.out 2> none.err
echo \"none \$?\" >> rc2.log"
id=$(sbatch_id -N2 --ntasks-per-node=2 -t 2 "$work/default.sh")
wait_end "$id" 60 || fail "the MpiDefault job failed: $(cat "$work/rc2.log" "$work"/default.err)"
[ "$(grep -c ' sum 6$' "$work/default.out")" = 4 ] ||
  fail "MpiDefault=pmix: $(cat "$work/rc2.log" "$work/default.out" "$work/default.err")"
[ "$(grep -cx 'pmix=none' "$work/none.out")" = 2 ] ||
  fail "--mpi=none under MpiDefault=pmix: $(cat "$work/none.out" "$work/none.err")"

ring_nobody pmix
check_logs
stop_cluster
echo "$name: passed"
