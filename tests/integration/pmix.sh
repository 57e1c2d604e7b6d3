#!/usr/bin/env bash
# pmix.sh BIN_DIR SRC_DIR MPICC: srun --mpi=pmix (worker/pmix.h, scheduler/sched_pmix.c). On a
# `gsched up` cluster of two workers, an MPI program built with MPICC starts with srun alone,
# no mpirun: four ranks over the two nodes find one another through their workers' PMIx
# servers and gschedd's fences, and an MPI_Allreduce of their ranks gives each 6, laid out
# block or cyclic; SLURM_MPI_TYPE=pmix stands for --mpi=pmix; srun --mpi=list names the
# types and --mpi=pmi2 is warned about; a rank's MPI_Abort ends the step on both nodes,
# failed; each step's namespace goes when its last task has ended. With scheduler.mpi_default
# = "pmix" a plain srun runs under PMIx and --mpi=none does not. Tasks of another user
# (nobody) wire up through the servers, which run as root, too.
#
# The two workers share this machine, so Open MPI's shared-memory transport would see ranks
# of both "nodes" as neighbours and mix up their segments: the ranks talk TCP on loopback
# (OMPI_MCA_btl=self,tcp), as ranks on two real nodes do.
name="integration_pmix"
. "$(dirname "$0")/lib.sh"
mpicc=$3

start_cluster --workers 2 --gpus-per-node 0
slurm_names sbatch srun

cat > "$work/ring.c" <<'EOF'
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv)
{
    int rank, size, sum = 0, abort_rank = argc > 1 ? atoi(argv[1]) : -1;
    char host[MPI_MAX_PROCESSOR_NAME];
    int len;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == abort_rank)
        MPI_Abort(MPI_COMM_WORLD, 7);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Get_processor_name(host, &len);
    printf("rank %d of %d node %s sum %d\n", rank, size, getenv("SLURMD_NODENAME"), sum);
    MPI_Finalize();
    return 0;
}
EOF
out=$("$mpicc" -o "$work/ring" "$work/ring.c" 2>&1) || fail "mpicc: $out"

# One batch job holds both nodes; each check is a step of it, as users run MPI under Slurm.
export OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
job_file run.sh "#!/bin/sh
cd $work
srun --mpi=pmix -n4 ./ring > block.out 2> block.err; echo \"block \$?\" >> rc.log
srun --mpi=pmix -n4 -m cyclic ./ring > cyclic.out 2> cyclic.err; echo \"cyclic \$?\" >> rc.log
SLURM_MPI_TYPE=pmix srun -n4 ./ring > env.out 2> env.err; echo \"env \$?\" >> rc.log
srun --mpi=list > list.out 2>&1; echo \"list \$?\" >> rc.log
srun --mpi=pmix -n4 ./ring 2 > abort.out 2> abort.err; echo \"abort \$?\" >> rc.log
srun --mpi=pmi2 -n1 true 2> pmi2.err; echo \"pmi2 \$?\" >> rc.log"
id=$(sbatch_id -N2 --ntasks-per-node=2 -t 2 "$work/run.sh")
wait_end "$id" 90 || fail "the job failed: $(jq "$id" 'j'); $(cat "$work/rc.log" "$work"/*.err 2>&1)"

rcs=$(cat "$work/rc.log")
for case in block cyclic env; do
  grep -qx "$case 0" <<< "$rcs" || fail "$case: srun failed: $rcs; $(cat "$work/$case.err")"
  [ "$(grep -c ' sum 6$' "$work/$case.out")" = 4 ] ||
    fail "$case: not 4 ranks summing to 6: $(cat "$work/$case.out" "$work/$case.err")"
  for r in 0 1 2 3; do
    grep -q "^rank $r of 4 " "$work/$case.out" || fail "$case: no rank $r: $(cat "$work/$case.out")"
  done
done
# Block puts ranks 0 and 1 on the first node, cyclic ranks 0 and 2.
first=$(grep '^rank 0 ' "$work/block.out" | awk '{print $6}')
grep -q "^rank 1 of 4 node $first " "$work/block.out" || fail "block layout: $(cat "$work/block.out")"
first=$(grep '^rank 0 ' "$work/cyclic.out" | awk '{print $6}')
grep -q "^rank 2 of 4 node $first " "$work/cyclic.out" || fail "cyclic layout: $(cat "$work/cyclic.out")"
grep -qx "list 0" <<< "$rcs" && grep -qx $'\tpmix' "$work/list.out" || fail "--mpi=list: $(cat "$work/list.out")"
grep -q "abort 0" <<< "$rcs" && fail "a step with an MPI_Abort succeeded: $(cat "$work/abort.out" "$work/abort.err")"
grep -q "sum 6" "$work/abort.out" && fail "the aborted step's ranks went on: $(cat "$work/abort.out")"
grep -qx "pmi2 0" <<< "$rcs" && grep -q "gsched knows pmix and none" "$work/pmi2.err" ||
  fail "--mpi=pmi2: $rcs; $(cat "$work/pmi2.err")"
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

# Another user's step: its tasks reach a server root runs.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
  chmod 711 "$tmp" "$state" # the socket is 0666: let others through the directories
  mkdir -m 777 "$tmp/nobody" && cp "$work/ring" "$tmp/nobody/" && cd "$tmp/nobody" || exit 1
  out=$(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups "$bin/gsched" sbatch \
    --parsable -N2 --ntasks-per-node=1 -t 1 -o "$tmp/nobody/out" \
    --wrap="srun --mpi=pmix ./ring; echo rc \$?" 2>&1) || fail "nobody's sbatch: $out"
  n=${out%%;*}
  wait_end "$n" 60 || fail "nobody's job: $(jq "$n" 'j'); $(cat "$tmp/nobody/out")"
  [ "$(grep -c ' sum 1$' "$tmp/nobody/out")" = 2 ] && grep -qx "rc 0" "$tmp/nobody/out" ||
    fail "nobody's ranks: $(cat "$tmp/nobody/out")"
fi
check_logs
stop_cluster
echo "$name: passed"
